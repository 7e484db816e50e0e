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
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag", []string{"-secret", "dev", "-addr", "127.0.0.1:0"}, nil},
		{"FOLLOWS_SECRET", []string{"-addr", "127.0.0.1:0"}, map[string]string{"FOLLOWS_SECRET": strings.Repeat("x", 31)}},
		{"secret file", []string{"-secret-file", file, "-addr", "127.0.0.1:0"}, nil},
		{"token subcommand", []string{"token", "-user", "1", "-secret", "dev"}, nil},
	} {
		// A server that starts runs until the deadline, and then ends
		// without the error.
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		err := run(ctx, append(tc.args, "-db", filepath.Join(t.TempDir(), "x.db")), io.Discard, io.Discard, func(k string) string { return tc.env[k] })
		cancel()
		if err == nil {
			t.Fatalf("%s: ran with a short secret", tc.name)
		}
		for _, want := range []string{"-secret", "-secret-file", "FOLLOWS_SECRET", "at least 32"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not mention %s", tc.name, err, want)
			}
		}
	}
}

// Without a secret, the embedded default makes one and says so, without
// printing it, and keeps it in a file beside the database, its owner's
// only: a token minted before a restart still signs its user in after it,
// and the token subcommand mints with it too. -demo on the restart, with a
// user there, loads nothing and says why.
func TestSecretSurvivesRestart(t *testing.T) {
	bin := binary(t)
	dbPath := filepath.Join(t.TempDir(), "follows.db")
	cmd, url, lines := startProcess(t, "-addr", "127.0.0.1:0", "-db", dbPath)
	log := waitLogLine(t, lines, "no token secret configured .*: made one and kept it beside the database", 5*time.Second)
	var created struct {
		CreateUser struct {
			Token string
			User  struct{ ID string }
		}
	}
	if out := post(t, url, "", `mutation { createUser(input: {name: "kept"}) { token user { id } } }`); json.Unmarshal(out.Parsed.Data, &created) != nil || created.CreateUser.Token == "" {
		t.Fatalf("createUser: %s", out.Body)
	}
	info, err := os.Stat(dbPath + ".secret")
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the secret file: %v, %v; want it made 0600", info, err)
	}
	secret, _ := os.ReadFile(dbPath + ".secret")
	for _, l := range append(log, exitLog(t, cmd, lines, syscall.SIGTERM, 30*time.Second)...) {
		if strings.Contains(l, strings.TrimSpace(string(secret))) {
			t.Errorf("the secret made shows in the log: %q", l)
		}
	}

	_, url, lines = startProcess(t, "-addr", "127.0.0.1:0", "-db", dbPath, "-demo")
	waitLogLine(t, lines, "token secret read from the file beside the database", 5*time.Second)
	waitLogLine(t, lines, "sample graph not loaded: the database already has users", 5*time.Second)
	minted, err := exec.Command(bin, "token", "-user", created.CreateUser.User.ID, "-db", dbPath).Output()
	if err != nil {
		t.Fatalf("token subcommand with the secret beside the database: %v", err)
	}
	for _, tok := range []string{created.CreateUser.Token, strings.TrimSpace(string(minted))} {
		if got := string(post(t, url, tok, `{ viewer { name } }`).Parsed.Data); got != `{"viewer":{"name":"kept"}}` {
			t.Errorf("a token after the restart: %s; want it to sign kept in", got)
		}
	}
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
