package main

import (
	"context"
	"encoding/json"
	"fmt"
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

// A deleted user's token stays dead when the graph moves: export carries
// the highest id ever given and each account's stamp, so after import the
// next sign-up does not get the deleted user's id, the old token does not
// act as anyone, and the other users' tokens still work.
func TestTokensSurviveOnlyTheirAccountsThroughExportImport(t *testing.T) {
	// data is a response's data, as JSON text.
	data := func(out map[string]any) string {
		b, _ := json.Marshal(out["data"])
		return string(b)
	}
	src := filepath.Join(t.TempDir(), "src.db")
	url, stop := serveInProcess(t, "-addr", "127.0.0.1:0", "-db", src, "-secret", testSecret)
	var tokens []string
	for i := range 5 {
		var out struct{ CreateUser struct{ Token string } }
		json.Unmarshal([]byte(data(post(t, url, "", fmt.Sprintf(`mutation { createUser(input: {name: "u%d"}) { token } }`, i+1)))), &out)
		tokens = append(tokens, out.CreateUser.Token)
	}
	if got := data(post(t, url, tokens[4], `{ viewer { id } }`)); got != `{"viewer":{"id":"5"}}` {
		t.Fatalf("the fifth user: %s", got)
	}
	if out := post(t, url, tokens[4], `mutation { deleteUser(input: {userId: "5"}) { deletedFollows } }`); out["errors"] != nil {
		t.Fatalf("delete user 5: %v", out["errors"])
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	if err := run(t.Context(), []string{"export", "-db", src, "-dir", dir}, io.Discard, io.Discard, noEnv); err != nil {
		t.Fatalf("export: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "dst.db")
	if err := run(t.Context(), []string{"import", "-db", dst, "-dir", dir}, io.Discard, io.Discard, noEnv); err != nil {
		t.Fatalf("import: %v", err)
	}
	url, _ = serveInProcess(t, "-addr", "127.0.0.1:0", "-db", dst, "-secret", testSecret)
	if got := data(post(t, url, "", `mutation { createUser(input: {name: "newcomer"}) { user { id } } }`)); got != `{"createUser":{"user":{"id":"6"}}}` {
		t.Errorf("the next sign-up after the move: %s, want id 6, not the deleted user's 5", got)
	}
	if got := data(post(t, url, tokens[4], `{ viewer { name } }`)); got != `{"viewer":null}` {
		t.Errorf("the deleted user's token after the move: %s, want no viewer", got)
	}
	out := post(t, url, tokens[4], `mutation { follow(input: {userId: "1"}) { alreadyFollowing } }`)
	if errs := fmt.Sprint(out["errors"]); !strings.Contains(errs, "UNAUTHENTICATED") {
		t.Errorf("the deleted user's token follows after the move: %v", out)
	}
	if got := data(post(t, url, tokens[0], `{ viewer { name } }`)); got != `{"viewer":{"name":"u1"}}` {
		t.Errorf("user 1's token after the move: %s, want u1", got)
	}
}
