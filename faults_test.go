package main

import (
	"context"
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
	apitest.Each(t, func(t *testing.T, on apitest.Database) {
		// One replica: a server that one address drives as fast as it can.
		reps := startReplicas(t, on.NewDSN(t), 1)
		client := &http.Client{Timeout: 5 * time.Second}
		// Enough users that the load makes new follows until the kill.
		var users []apitest.Account
		for i := range 120 {
			a, o := reps.signUp(client, 0, fmt.Sprintf("crash%d", i))
			if o != acked {
				t.Fatalf("sign-up before the load: %v", o)
			}
			users = append(users, a)
		}

		var mu sync.Mutex
		ackedPairs := map[fact]bool{}
		var wg sync.WaitGroup
		// Once every writer has had ten follows acknowledged the load is well
		// under way, and all eight keep a write in flight until the kill.
		const writers, warmUp = 8, 10
		var warm atomic.Int64
		for g := range writers {
			wg.Go(func() {
				acks := 0
				for n := 0; ; n++ {
					me, other := users[g], users[(g+1+n%(len(users)-1))%len(users)] // never g
					switch reps.send(client, 0, me.Token, apitest.FollowMutation, map[string]any{"id": other.ID}, nil) {
					case unknown:
						return // the server is gone
					case acked:
						mu.Lock()
						ackedPairs[fact{"follow", me.ID, other.ID}] = true
						mu.Unlock()
						if acks++; acks == warmUp {
							warm.Add(1)
						}
					}
				}
			})
		}
		kill := func() { reps.cmds[0].Process.Signal(syscall.SIGKILL); reps.cmds[0].Wait(); wg.Wait() }
		reps.waitUntil(fmt.Sprintf("the %d writers each had %d follows acknowledged", writers, warmUp), func() bool { return warm.Load() == writers }, kill)
		kill()
		if len(ackedPairs) == 0 {
			t.Fatal("no follow was acknowledged before the kill")
		}

		reps.start(0)
		apitest.CheckDSN(t, reps.dsn)
		present := map[fact]bool{}
		readFacts(t, reps.dsn, "follow", `SELECT "FollowerId", "FolloweeId" FROM "Follows"`, present)
		missing := 0
		for pair := range ackedPairs {
			if !present[pair] {
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("%d of %d acknowledged follows are gone after the crash", missing, len(ackedPairs))
		}
		t.Logf("%d acknowledged follows, all present after SIGKILL and restart", len(ackedPairs))
	})
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

// SIGTERM under load: requests in flight finish with their answers, those
// waiting their turn (-max-executing) too, and the process exits 0.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	apitest.Each(t, func(t *testing.T, on apitest.Database) {
		dsn := on.NewDSN(t)
		// -debug serves the goroutine dump in which the test sees the requests
		// in flight.
		cmd, url, lines := startProcess(t, "-addr", "127.0.0.1:0", "-db", dsn, "-demo", "-debug", "-secret", testSecret, "-max-executing", "4")

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
		var answered atomic.Int64
		for i := range 16 {
			wg.Go(func() {
				r, err := try(&http.Client{Timeout: 10 * time.Second}, url, "", `mutation($n: String!) { createUser(input: {name: $n}) { user { id } } }`,
					map[string]any{"n": fmt.Sprintf("inflight%d", i)})
				if err == nil && r.Status == 200 && len(r.Parsed.Errors) == 0 {
					answered.Add(1)
				}
			})
		}
		// Four run, twelve wait their turn.
		waitResolving(t, url, "createUser", 4, 5*time.Second)
		apitest.WaitMetric(t, url, "follows_graphql_requests_waiting 12", 5*time.Second)
		cmd.Process.Signal(syscall.SIGTERM)
		waitLogLine(t, lines, "shutting down", 5*time.Second)
		// Only now may the sixteen write, with the server shutting down.
		if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		exitLog(t, cmd, lines, nil, 20*time.Second)
		if answered.Load() != 16 {
			t.Errorf("%d of 16 in-flight requests answered; want every one", answered.Load())
		}
	})
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
