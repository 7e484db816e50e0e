package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"follows/api/apitest"
)

// The server killed with SIGKILL under a write load loses no follow it
// acknowledged, and its database is sound when it starts again: on SQLite
// the file, on PostgreSQL the database the process wrote to.
func TestCrashLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	apitest.Each(t, testCrashLosesNothingAcknowledged)
}

func testCrashLosesNothingAcknowledged(t *testing.T, on apitest.Database) {
	bin := binary(t)
	dsn := on.NewDSN(t)
	// One address signs up and writes as fast as it can: the rate limits
	// would stop what the test needs.
	cmd, url, _ := startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", dsn, "-secret", testSecret, "-rate-signup", "off", "-rate-mutations", "off")

	// Enough users that the load makes new follows until the kill.
	var users []apitest.Account
	for i := range 120 {
		var out struct {
			CreateUser struct {
				User  struct{ ID string }
				Token string
			}
		}
		r := post(t, url, "", fmt.Sprintf(`mutation { createUser(input: {name: "crash%d"}) { user { id } token } }`, i))
		b, _ := json.Marshal(r["data"])
		json.Unmarshal(b, &out)
		users = append(users, apitest.Account{ID: out.CreateUser.User.ID, Token: out.CreateUser.Token})
	}

	var mu sync.Mutex
	acked := map[[2]string]bool{}
	var wg sync.WaitGroup
	// loaded is done once every writer has had ten follows acknowledged:
	// the load is well under way, and all eight keep a write in flight
	// until the kill.
	const warmUp = 10
	var loaded sync.WaitGroup
	loaded.Add(8)
	client := &http.Client{Timeout: 5 * time.Second}
	for g := range 8 {
		wg.Go(func() {
			acks := 0
			for n := 0; ; n++ {
				me, other := users[g], users[(g+1+n)%len(users)]
				if me == other {
					continue
				}
				ok, err := followOver(client, url, me.Token, other.ID)
				if err != nil {
					return // the server is gone
				}
				if ok {
					mu.Lock()
					acked[[2]string{me.ID, other.ID}] = true
					mu.Unlock()
					if acks++; acks == warmUp {
						loaded.Done()
					}
				}
			}
		})
	}
	if !waitFor(&loaded, 30*time.Second) {
		t.Fatalf("the eight writers did not each have %d follows acknowledged within 30s", warmUp)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no follow was acknowledged before the kill")
	}

	startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", dsn, "-secret", testSecret)
	apitest.CheckDSN(t, dsn)
	present := followPairs(t, dsn)
	missing := 0
	for pair := range acked {
		if !present[pair] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged follows are gone after the crash", missing, len(acked))
	}
	t.Logf("%d acknowledged follows, all present after SIGKILL and restart", len(acked))
}

// followPairs reads every follow of a database, as (follower, followee)
// ids.
func followPairs(t *testing.T, dsn string) map[[2]string]bool {
	t.Helper()
	rows, err := apitest.OpenDSN(t, dsn).Query(`SELECT "FollowerId", "FolloweeId" FROM "Follows"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	pairs := map[[2]string]bool{}
	for rows.Next() {
		var p [2]string
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			t.Fatal(err)
		}
		pairs[p] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return pairs
}

// followOver sends one follow and reports whether the server acknowledged
// it; an error means no answer came.
func followOver(client *http.Client, url, token, id string) (bool, error) {
	body := apitest.Body(apitest.FollowMutation, map[string]any{"id": id})
	req, _ := http.NewRequest("POST", url+"/graphql", bytesReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var r apitest.Response
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return false, err
	}
	return resp.StatusCode == 200 && len(r.Errors) == 0, nil
}

// SIGTERM under load: requests in flight finish with their answers and the
// process exits 0.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	apitest.Each(t, testGracefulShutdownUnderLoad)
}

// holdUsers are the statements that make every sign-up wait until the
// test rolls back: SQLite's write lock, which the requests wait for within
// the server's busy_timeout (10s); on PostgreSQL a lock on Users that
// conflicts with an insert's, which they wait for within the request
// timeout (15s).
var holdUsers = map[apitest.Database]string{
	apitest.SQLite:   `BEGIN IMMEDIATE`,
	apitest.Postgres: `BEGIN; LOCK TABLE "Users" IN EXCLUSIVE MODE`,
}

func testGracefulShutdownUnderLoad(t *testing.T, on apitest.Database) {
	bin := binary(t)
	dsn := on.NewDSN(t)
	// -debug serves the goroutine dump in which the test sees the requests
	// in flight.
	cmd, url, lines := startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", dsn, "-demo", "-debug", "-secret", testSecret)

	// The test holds the users, so that every request, each a sign-up,
	// stays in flight until the test lets go.
	ctx := context.Background()
	lock, err := apitest.OpenDSN(t, dsn).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, holdUsers[on]); err != nil {
		t.Fatal(err)
	}
	defer lock.ExecContext(ctx, "ROLLBACK")

	var wg sync.WaitGroup
	var answered, failedInFlight atomic.Int64
	for i := range 16 {
		wg.Go(func() {
			client := &http.Client{Timeout: 10 * time.Second}
			req, _ := http.NewRequest("POST", url+"/graphql", bytesReader(apitest.Body(`mutation($n: String!) { createUser(input: {name: $n}) { user { id } } }`,
				map[string]any{"n": fmt.Sprintf("inflight%d", i)})))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				failedInFlight.Add(1)
				return
			}
			defer resp.Body.Close()
			var r apitest.Response
			if json.NewDecoder(resp.Body).Decode(&r) == nil && resp.StatusCode == 200 && len(r.Errors) == 0 {
				answered.Add(1)
			} else {
				failedInFlight.Add(1)
			}
		})
	}
	waitResolving(t, url, "createUser", 16, 5*time.Second)
	cmd.Process.Signal(syscall.SIGTERM)
	waitLogLine(t, lines, "shutting down", 5*time.Second)
	// Only now may the sixteen write, with the server shutting down.
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	waitExit(t, cmd, 20*time.Second)
	if answered.Load() != 16 || failedInFlight.Load() != 0 {
		t.Errorf("%d of 16 in-flight requests answered, %d failed", answered.Load(), failedInFlight.Load())
	}
}

// waitResolving waits until a server run with -debug is resolving the
// mutation field in n requests at once, as its goroutine dump shows.
func waitResolving(t *testing.T, url, field string, n int, within time.Duration) {
	t.Helper()
	// gqlgen's generated code has a function per field, which stays on
	// the stack of the goroutine serving the request while it resolves.
	frame := "follows/graph.(*executionContext)._Mutation_" + field + "("
	deadline := time.Now().Add(within)
	got := 0
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/debug/pprof/goroutine?debug=2")
		if err != nil {
			t.Fatal(err)
		}
		dump, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = 0
		for _, g := range strings.Split(string(dump), "\n\n") {
			if strings.Contains(g, frame) {
				got++
			}
		}
		if got >= n {
			return
		}
		time.Sleep(10 * time.Millisecond) // between polls of a condition with a deadline
	}
	t.Fatalf("%d of %d requests resolving %s after %v", got, n, field, within)
}

// waitFor waits for wg with a deadline and reports whether it was done.
func waitFor(wg *sync.WaitGroup, within time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(within):
		return false
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
