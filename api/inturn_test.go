package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
)

// A server that may run one request at a time (-max-executing 1) keeps a
// query waiting, counted in /metrics, while a follow waits for a write
// lock another writer holds; once the lock is free the follow goes
// through, then the query, both answered in full.
func TestRequestsWaitTheirTurn(t *testing.T) {
	t.Parallel()
	s := apitest.StartDSN(t, "_pragma=busy_timeout(10000)", func(c *api.Config) { c.MaxExecuting = 1 })
	alice, bob := s.CreateUser("alice"), s.CreateUser("bob")

	lock := apitest.OpenRaw(t, s.DBPath)
	conn, err := lock.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	followed := make(chan apitest.Response)
	go func() {
		followed <- s.Do(alice.Token, `mutation($id: ID!) { follow(input: {userId: $id}) { followee { followerCount } } }`, map[string]any{"id": bob.ID})
	}()
	apitest.WaitMetric(t, s.URL, "follows_graphql_requests_running 1", 5*time.Second)
	queried := make(chan apitest.Response)
	go func() { queried <- s.Do(bob.Token, `{ viewer { name } }`, nil) }()
	apitest.WaitMetric(t, s.URL, "follows_graphql_requests_waiting 1", 5*time.Second)
	select {
	case r := <-queried:
		t.Fatalf("the query ran beside the follow: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}

	if _, err := conn.ExecContext(context.Background(), `COMMIT`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if r := <-followed; len(r.Errors) > 0 {
		t.Errorf("follow: %+v", r.Errors)
	}
	if r := <-queried; len(r.Errors) > 0 || !strings.Contains(string(r.Data), "bob") {
		t.Errorf("query after its turn: %s %+v", r.Data, r.Errors)
	}
	apitest.WaitMetric(t, s.URL, "follows_graphql_requests_waiting 0", 5*time.Second)
}
