package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A secret shorter than 32 bytes, from wherever it comes, stops the server
// at start with an error that names where a secret is given; so does the
// token subcommand, whose tokens such a server could not check.
func TestShortSecretRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(file, []byte("only-20-bytes-secret\n"), 0o600)
	cases := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag", []string{"-secret", "dev"}, nil},
		{"FOLLOWS_SECRET", nil, map[string]string{"FOLLOWS_SECRET": strings.Repeat("x", 31)}},
		{"secret file", []string{"-secret-file", file}, nil},
		{"token subcommand", []string{"token", "-user", "1", "-secret", "dev"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args, "-db", filepath.Join(t.TempDir(), "x.db"))
			if tc.args == nil || tc.args[0] != "token" {
				args = append(args, "-addr", "127.0.0.1:0")
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, args, io.Discard, io.Discard, func(k string) string { return tc.env[k] })
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("ran with a short secret")
				}
				for _, want := range []string{"-secret", "-secret-file", "FOLLOWS_SECRET", "at least 32"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not mention %s", err, want)
					}
				}
			case <-time.After(3 * time.Second):
				cancel()
				<-done
				t.Fatal("the server started with a short secret")
			}
		})
	}
}
