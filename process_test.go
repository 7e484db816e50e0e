package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"follows/api/apitest"
)

// builtBin is the server binary, built once in TestMain for the tests
// that need a process of their own (signals, crashes, exit statuses, the
// process's log); errNoBinary says why there is none.
var (
	builtBin    string
	errNoBinary = errors.New("not built: -short skips the tests that run the binary")
)

func TestMain(m *testing.M) {
	if args := os.Getenv(mainArgs); args != "" {
		// A child of runMain: main as the binary runs it, then how it
		// left the collector.
		os.Args = append([]string{"follows"}, strings.Fields(args)...)
		main()
		fmt.Printf("GOGC=%d GOMEMLIMIT=%d\n", debug.SetGCPercent(100), debug.SetMemoryLimit(-1))
		os.Exit(0)
	}
	flag.Parse()
	var dir string
	if !testing.Short() {
		dir, errNoBinary = os.MkdirTemp("", "follows-bin")
		if errNoBinary == nil {
			builtBin = filepath.Join(dir, "follows")
			if out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
				errNoBinary = fmt.Errorf("go build: %v\n%s", err, out)
			}
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mainArgs, in a test binary's environment, has it run main with these
// arguments (split at spaces) instead of the tests (see runMain).
const mainArgs = "FOLLOWS_TEST_MAIN_ARGS"

// runMain runs main in a process of its own with args, and the
// environment without the collector's settings; it returns what the
// process printed, its last line saying how main left the collector.
func runMain(t *testing.T, args string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") && !strings.HasPrefix(kv, "FOLLOWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, mainArgs+"="+args)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// binary is the server as `go build` makes it.
func binary(t *testing.T) string {
	t.Helper()
	if errNoBinary != nil {
		t.Fatal(errNoBinary)
	}
	return builtBin
}

// testSecret is the token secret of the tests' servers.
const testSecret = "the tests' token secret, 32 bytes or more"

// servingURL finds where a log line says the server serves GraphQL, in
// either log format.
var servingURL = regexp.MustCompile(`url"?[=:]"?(http://[^"\s]+)/graphql`)

// watchLog reads a server's log as it is written. The URL the server says
// it serves at comes on url; every line comes on lines, which holds 100
// unread ones (more are dropped) and is closed when the log ends.
func watchLog(log io.Reader) (url, lines <-chan string) {
	linec := make(chan string, 100)
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(log)
		for sc.Scan() {
			if m := servingURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
			select {
			case linec <- sc.Text():
			default:
			}
		}
		close(linec)
	}()
	return urlc, linec
}

// waitLogLine waits until a line containing s comes from a server's log.
func waitLogLine(t *testing.T, lines <-chan string, s string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the log ended without %q", s)
			}
			if strings.Contains(l, s) {
				return
			}
		case <-deadline:
			t.Fatalf("no %q in the log within %v", s, within)
		}
	}
}

// startProcess runs the server binary and waits for it to say where it
// listens. The log it writes afterwards is kept in the returned channel.
func startProcess(t *testing.T, bin string, args ...string) (*exec.Cmd, string, <-chan string) {
	t.Helper()
	cmd, urlc, lines := launchProcess(t, bin, args...)
	select {
	case u := <-urlc:
		return cmd, u, lines
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not start within 30s")
	}
	return nil, "", nil
}

// launchProcess runs the server binary, which is killed when the test
// ends, and returns at once: the URL it says it serves at comes on url,
// its log on lines (see watchLog).
func launchProcess(t *testing.T, bin string, args ...string) (cmd *exec.Cmd, url, lines <-chan string) {
	t.Helper()
	cmd = exec.Command(bin, args...)
	// Only the arguments configure the server: none of the variables it
	// reads (FOLLOWS_*, and the older names) pass from the test's own.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FOLLOWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TOKEN_SECRET=", "TOKEN_TTL=", "DATABASE_URL=", "ADDR=", "CORS_ORIGINS=")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url, lines = watchLog(stderr)
	return cmd, url, lines
}

// serveInProcess runs the server as main does but in the test's process,
// and returns once it says where it listens. stop ends it as SIGTERM
// would and returns what run returned; it runs at the latest when the
// test ends.
func serveInProcess(t *testing.T, args ...string) (url string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	logr, logw := io.Pipe()
	urlc, _ := watchLog(logr)
	var runErr error
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		runErr = run(ctx, args, io.Discard, logw, noEnv)
		logw.Close()
	}()
	stop = sync.OnceValue(func() error {
		cancel()
		select {
		case <-ended:
			return runErr
		case <-time.After(40 * time.Second): // longer than serve's 30s to finish requests
			return errors.New("the server did not stop within 40s")
		}
	})
	t.Cleanup(func() { stop() })
	select {
	case u := <-urlc:
		return u, stop
	case <-ended:
		t.Fatalf("the server ended before serving: %v", runErr)
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not start within 30s")
	}
	return "", stop
}

func post(t *testing.T, url, token, query string) map[string]any {
	t.Helper()
	return postVars(t, url, token, query, nil)
}

// postVars sends one GraphQL request to a server process and decodes the
// whole response.
func postVars(t *testing.T, url, token, query string, vars map[string]any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest("POST", url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("not JSON: %s", raw)
	}
	return out
}

// waitExit waits for a signalled server process and fails the test unless
// it exits with status 0 in time.
func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after the signal: %v, want status 0", err)
		}
	case <-time.After(within):
		t.Errorf("still running %v after the signal", within)
	}
}

// logUntilExit collects what a signalled server process logs until it
// exits and its log ends, then reaps it: reaping first would close the
// log before the last lines were read.
func logUntilExit(t *testing.T, cmd *exec.Cmd, lines <-chan string, within time.Duration) []string {
	t.Helper()
	var log []string
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				cmd.Wait()
				return log
			}
			log = append(log, l)
		case <-deadline:
			t.Fatalf("still running %v after the signal", within)
		}
	}
}

// The binary as a user runs it: -demo data, a token from the token
// subcommand that the server accepts, and a clean exit on SIGTERM.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := binary(t)
	dbPath := filepath.Join(t.TempDir(), "follows.db")
	cmd, url, _ := startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", dbPath, "-demo", "-secret", testSecret)

	resp, err := http.Get(url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	out := post(t, url, "", `{ user(name: "dave") { followerCount followers { nodes { name } } } }`)
	if got, _ := json.Marshal(out["data"]); string(got) != `{"user":{"followerCount":2,"followers":{"nodes":[{"name":"bob"},{"name":"carol"}]}}}` {
		t.Errorf("demo data: %s", got)
	}

	tok, err := exec.Command(bin, "token", "-user", "4", "-db", dbPath, "-secret", testSecret).Output()
	if err != nil {
		t.Fatalf("token subcommand: %v", err)
	}
	out = post(t, url, strings.TrimSpace(string(tok)), `mutation { follow(input: {userId: "1"}) { follower { name } followee { name } } }`)
	if got, _ := json.Marshal(out["data"]); string(got) != `{"follow":{"followee":{"name":"alice"},"follower":{"name":"dave"}}}` {
		t.Errorf("follow with a minted token: %s (%v)", got, out["errors"])
	}
	if err := exec.Command(bin, "token", "-user", "99", "-db", dbPath, "-secret", testSecret).Run(); err == nil {
		t.Error("token for a user who does not exist succeeded")
	}

	raw := apitest.OpenRaw(t, dbPath)
	if _, err := raw.Exec(`UPDATE Users SET FollowingCount = 7 WHERE Name = 'carol'`); err != nil {
		t.Fatal(err)
	}
	report, err := exec.Command(bin, "check-counts", "-db", dbPath).Output()
	if err != nil || !strings.Contains(string(report), "(carol): followers 1, recounted 1; following 7, recounted 1") {
		t.Errorf("check-counts: %v\n%s", err, report)
	}
	out = post(t, url, "", `{ user(name: "carol") { followingCount } }`)
	if got, _ := json.Marshal(out["data"]); string(got) != `{"user":{"followingCount":1}}` {
		t.Errorf("carol after repair: %s", got)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, cmd, 30*time.Second)
}

// Without a secret the server makes one and says so, without printing it.
func TestBinaryWithoutSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := binary(t)
	_, _, lines := startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "x.db"))
	waitLogLine(t, lines, "no token secret configured", 5*time.Second)
}

// The token secret appears in no log line and no response, whatever
// tokens come in.
func TestSecretNeverShown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	const secret = "s3cret-that-must-not-leak-from-the-server"
	bin := binary(t)
	cmd, url, lines := startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "x.db"), "-demo", "-secret", secret)
	var bodies []string
	for _, token := range []string{"garbage", secret, "djE6MToxNzk4NjAwOTcy." + secret} {
		out := post(t, url, token, `mutation { follow(input: {userId: "2"}) { alreadyFollowing } }`)
		b, _ := json.Marshal(out)
		bodies = append(bodies, string(b))
	}
	cmd.Process.Signal(syscall.SIGTERM)
	bodies = append(bodies, logUntilExit(t, cmd, lines, 30*time.Second)...)
	for _, b := range bodies {
		if strings.Contains(b, secret) {
			t.Errorf("the secret shows in %q", b)
		}
	}
}

// `schema` prints each dialect's DDL without a database.
func TestSchemaSubcommand(t *testing.T) {
	for dialect, want := range map[string]string{
		"sqlserver": "CONSTRAINT [FK_Follows_Users_FolloweeId] FOREIGN KEY ([FolloweeId]) REFERENCES [Users] ([Id]) ON DELETE CASCADE,",
		"sqlite":    `CONSTRAINT "PK_Follows" PRIMARY KEY ("FollowerId", "FolloweeId")`,
		"postgres":  `CREATE UNIQUE INDEX "IX_Users_Name" ON "Users" (lower("Name"));`,
	} {
		var out, errs strings.Builder
		dir := t.TempDir()
		t.Chdir(dir)
		if err := run(t.Context(), []string{"schema", "-dialect", dialect}, &out, &errs, noEnv); err != nil {
			t.Fatalf("schema -dialect %s: %v %s", dialect, err, errs.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("schema -dialect %s lacks %s", dialect, want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("schema -dialect %s wrote files: it must touch no database", dialect)
		}
	}
}

// -log-format json writes one JSON object per line, requests included.
func TestJSONLog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := binary(t)
	cmd, url, lines := startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "x.db"), "-log-format", "json")
	post(t, url, "", `query Who { viewer { id } }`)
	cmd.Process.Signal(syscall.SIGTERM)
	found := false
	for _, l := range logUntilExit(t, cmd, lines, 30*time.Second) {
		var entry map[string]any
		if err := json.Unmarshal([]byte(l), &entry); err != nil {
			t.Errorf("not a JSON line: %q", l)
		}
		if entry["operation"] == "Who" {
			found = true
		}
	}
	if !found {
		t.Error("no JSON log line for the request")
	}
}
