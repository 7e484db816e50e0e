package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
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

// binary is the server as `go build` makes it; -short skips the test.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the binary")
	}
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

// waitLogLine waits until a line matching the regular expression re
// comes from a server's log, and returns the lines read, that one last.
func waitLogLine(t *testing.T, lines <-chan string, re string, within time.Duration) (log []string) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the log ended without %q", re)
			}
			if log = append(log, l); regexp.MustCompile(re).MatchString(l) {
				return log
			}
		case <-deadline:
			t.Fatalf("no %q in the log within %v", re, within)
		}
	}
}

// startProcess runs the server binary and waits for it to say where it
// listens. The log it writes afterwards is kept in the returned channel.
func startProcess(t *testing.T, args ...string) (*exec.Cmd, string, <-chan string) {
	t.Helper()
	cmd, urlc, lines := launchProcess(t, args...)
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
func launchProcess(t *testing.T, args ...string) (cmd *exec.Cmd, url, lines <-chan string) {
	t.Helper()
	cmd = exec.Command(binary(t), args...)
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

// try sends one GraphQL request to a server process through client; the
// error says no answer came (none, not JSON, or a server error status),
// when the request may or may not have been carried out.
func try(client *http.Client, url, token, query string, vars map[string]any) (apitest.RawResponse, error) {
	req, _ := http.NewRequest("POST", url+"/graphql", bytes.NewReader(apitest.Body(query, vars)))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return apitest.RawResponse{}, err
	}
	defer resp.Body.Close()
	r := apitest.RawResponse{Status: resp.StatusCode, Header: resp.Header}
	if r.Body, err = io.ReadAll(resp.Body); err == nil {
		err = json.Unmarshal(r.Body, &r.Parsed)
	}
	if err == nil && r.Status >= 500 {
		err = fmt.Errorf("status %d: %s", r.Status, r.Body)
	}
	return r, err
}

// post sends one GraphQL request to a server process, which must answer.
func post(t *testing.T, url, token, query string) apitest.RawResponse {
	t.Helper()
	r, err := try(http.DefaultClient, url, token, query, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// exitLog sends a server process sig (unless nil), collects what it logs
// until it exits and its log ends, then reaps it, failing the test unless
// it exits with status 0 in time: reaping first would close the log
// before the last lines were read.
func exitLog(t *testing.T, cmd *exec.Cmd, lines <-chan string, sig os.Signal, within time.Duration) []string {
	t.Helper()
	if sig != nil {
		cmd.Process.Signal(sig)
	}
	var log []string
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				if err := cmd.Wait(); err != nil {
					t.Errorf("exit after the signal: %v, want status 0", err)
				}
				return log
			}
			log = append(log, l)
		case <-deadline:
			t.Fatalf("still running %v after the signal", within)
		}
	}
}

// The binary as a user runs it: -demo data, loaded into the empty
// database and said so, a token from the token subcommand that the server
// accepts, and a clean exit on SIGTERM.
func TestBinary(t *testing.T) {
	bin := binary(t)
	dbPath := filepath.Join(t.TempDir(), "follows.db")
	cmd, url, lines := startProcess(t, "-addr", "127.0.0.1:0", "-db", dbPath, "-demo", "-secret", testSecret)
	waitLogLine(t, lines, "loaded the sample graph", 5*time.Second)

	resp, err := http.Get(url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	out := post(t, url, "", `{ user(name: "dave") { followerCount followers { nodes { name } } } }`)
	if got := string(out.Parsed.Data); got != `{"user":{"followerCount":2,"followers":{"nodes":[{"name":"bob"},{"name":"carol"}]}}}` {
		t.Errorf("demo data: %s", got)
	}

	tok, err := exec.Command(bin, "token", "-user", "4", "-db", dbPath, "-secret", testSecret).Output()
	if err != nil {
		t.Fatalf("token subcommand: %v", err)
	}
	out = post(t, url, strings.TrimSpace(string(tok)), `mutation { follow(input: {userId: "1"}) { follower { name } followee { name } } }`)
	if got := string(out.Parsed.Data); got != `{"follow":{"follower":{"name":"dave"},"followee":{"name":"alice"}}}` {
		t.Errorf("follow with a minted token: %s (%v)", got, out.Parsed.Errors)
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
	if got := string(out.Parsed.Data); got != `{"user":{"followingCount":1}}` {
		t.Errorf("carol after repair: %s", got)
	}

	exitLog(t, cmd, lines, syscall.SIGTERM, 30*time.Second)
}

// The token secret appears in no log line and no response, whatever
// tokens come in.
func TestSecretNeverShown(t *testing.T) {
	const secret = "s3cret-that-must-not-leak-from-the-server"
	cmd, url, lines := startProcess(t, "-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "x.db"), "-demo", "-secret", secret)
	var bodies []string
	for _, token := range []string{"garbage", secret, "djE6MToxNzk4NjAwOTcy." + secret} {
		bodies = append(bodies, string(post(t, url, token, `mutation { follow(input: {userId: "2"}) { alreadyFollowing } }`).Body))
	}
	bodies = append(bodies, exitLog(t, cmd, lines, syscall.SIGTERM, 30*time.Second)...)
	for _, b := range bodies {
		if strings.Contains(b, secret) {
			t.Errorf("the secret shows in %q", b)
		}
	}
}

// -log-format json writes one JSON object per line, requests included.
func TestJSONLog(t *testing.T) {
	cmd, url, lines := startProcess(t, "-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "x.db"), "-log-format", "json")
	post(t, url, "", `query Who { viewer { id } }`)
	found := false
	for _, l := range exitLog(t, cmd, lines, syscall.SIGTERM, 30*time.Second) {
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

// SIGTERM with connections open that are idle, that never sent a
// request, or that stalled partway through a body still ends the process
// with status 0, within the default shutdown grace (10 s) and some.
func TestShutdownWithStalledConnections(t *testing.T) {
	cmd, url, lines := startProcess(t, "-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "follows.db"))
	addr := strings.TrimPrefix(url, "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for range 10 { // kept alive after a request
		c := dial()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
		if _, err := c.Read(make([]byte, 512)); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 { // connected, nothing sent
		dial()
	}
	for range 10 { // a body that stopped coming
		fmt.Fprintf(dial(), "POST /graphql HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	}
	// The server has them all once it answers after them.
	if _, err := http.Get(url + "/healthz"); err != nil { // one more idle connection
		t.Fatal(err)
	}
	exitLog(t, cmd, lines, syscall.SIGTERM, 20*time.Second)
}
