package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// Without a secret, the embedded default keeps one in a file beside the
// database, its owner's only: a token minted before a restart still signs
// its user in after it, and the token subcommand mints with it too.
func TestSecretSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := binary(t)
	dbPath := filepath.Join(t.TempDir(), "follows.db")
	cmd, url, lines := startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", dbPath)
	waitLogLine(t, lines, "made one and kept it beside the database", 5*time.Second)
	out := post(t, url, "", `mutation { createUser(input: {name: "kept"}) { token user { id } } }`)
	created, _ := out["data"].(map[string]any)["createUser"].(map[string]any)
	if created == nil {
		t.Fatalf("createUser: %v", out)
	}
	token := created["token"].(string)
	info, err := os.Stat(dbPath + ".secret")
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the secret file: %v, %v; want it made 0600", info, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, cmd, 30*time.Second)

	_, url, lines = startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", dbPath)
	waitLogLine(t, lines, "token secret read from the file beside the database", 5*time.Second)
	for _, tok := range []string{token, mint(t, bin, dbPath, created["user"].(map[string]any)["id"].(string))} {
		out = post(t, url, tok, `{ viewer { name } }`)
		if got, _ := json.Marshal(out["data"]); string(got) != `{"viewer":{"name":"kept"}}` {
			t.Errorf("a token after the restart: %s; want it to sign kept in", got)
		}
	}
}

func mint(t *testing.T, bin, dbPath, user string) string {
	t.Helper()
	tok, err := exec.Command(bin, "token", "-user", user, "-db", dbPath).Output()
	if err != nil {
		t.Fatalf("token subcommand with the secret beside the database: %v", err)
	}
	return strings.TrimSpace(string(tok))
}

// A server database without a secret is refused at start, saying how to
// give one: its instances must share the secret, which none can make for
// the others. An in-memory database, gone with the process, makes one.
func TestServerDatabaseNeedsSecret(t *testing.T) {
	err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-db", "postgres://u:p@127.0.0.1:1/none"}, io.Discard, io.Discard, noEnv)
	if err == nil || !strings.Contains(err.Error(), "-secret-file") || !strings.Contains(err.Error(), "server database") {
		t.Errorf("PostgreSQL without a secret: %v; want a refusal naming -secret-file", err)
	}
	c := &server{}
	c.dsn, c.ttl = "file:x?mode=memory", time.Hour
	var log strings.Builder
	if _, err := c.tokens(slog.New(slog.NewTextHandler(&log, nil))); err != nil || !strings.Contains(log.String(), "random") {
		t.Errorf("in memory: %v, log %q; want a random secret, said", err, log.String())
	}
}
