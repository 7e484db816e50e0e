package main

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"follows/api/apitest"
	"follows/db/pgtest"
)

// The server starts and serves through PgBouncer 1.18 in transaction
// pooling mode configured as operators usually do (only
// extra_float_digits and search_path ignored among the startup
// parameters; CI's .ci/run starts one): it sends no startup parameter
// PgBouncer refuses (jit=off did: "unsupported startup parameter: jit"),
// uses no named prepared statement, and migrates a new database under a
// lock that holds through the pooler. Sign-ups, a follow, the viewer's
// list and suggestions all answer. Started without -db-listen, a second
// instance says that it polls for other instances' events instead.
func TestServesThroughPgBouncer(t *testing.T) {
	pooled, direct := pgtest.PooledDSN(t, "serving through PgBouncer")
	cmd, urlc, lines := launchProcess(t, append(replicaArgs(pooled), "-db-listen", direct)...)
	url := waitServing(t, cmd, urlc, lines)
	reps := &replicas{t: t, dsn: pooled, urls: make([]atomic.Pointer[string], 1), cmds: []*exec.Cmd{cmd}, acked: make([]atomic.Int64, 1), progress: make(chan struct{}, 1)}
	reps.urls[0].Store(&url)
	client := &http.Client{Timeout: 10 * time.Second}
	var names = []string{"alice", "bob", "carol"}
	accounts := make(map[string]string)
	tokens := make(map[string]string)
	for _, n := range names {
		a, o := reps.signUp(client, 0, n)
		if o != acked {
			t.Fatalf("sign up %s through PgBouncer: %v", n, o)
		}
		accounts[n], tokens[n] = a.ID, a.Token
	}
	for _, f := range [][2]string{{"alice", "bob"}, {"bob", "carol"}} {
		if o := reps.send(client, 0, tokens[f[0]], apitest.FollowMutation, map[string]any{"id": accounts[f[1]]}, nil); o != acked {
			t.Fatalf("%s follows %s through PgBouncer: %v", f[0], f[1], o)
		}
	}
	var v struct {
		Viewer struct {
			Following   struct{ Nodes []struct{ Name string } }
			Suggestions []struct {
				User struct{ Name string }
				Via  int
			}
		}
	}
	if o := reps.send(client, 0, tokens["alice"], `{ viewer { following(first: 10) { nodes { name } } suggestions { user { name } via } } }`, nil, &v); o != acked {
		t.Fatalf("alice's lists through PgBouncer: %v", o)
	}
	if got := fmt.Sprint(v.Viewer.Following.Nodes, v.Viewer.Suggestions); got != "[{bob}] [{{carol} 1}]" {
		t.Errorf("alice follows, and is suggested, %s; want [{bob}] [{{carol} 1}]", got)
	}

	second, urlc, lines := launchProcess(t, replicaArgs(pooled)...)
	var said []string
	for l := range lines {
		said = append(said, l)
		if strings.Contains(l, "-db-listen") {
			break
		}
		if strings.Contains(l, "serving GraphQL") {
			t.Errorf("an instance through PgBouncer without -db-listen does not say that it polls; its log:\n%s", strings.Join(said, "\n"))
			break
		}
	}
	waitServing(t, second, urlc, lines)
}

// waitServing waits for a process launched with launchProcess to say
// where it serves, and fails the test with its log if it ends first.
func waitServing(t *testing.T, cmd *exec.Cmd, urlc, lines <-chan string) string {
	t.Helper()
	select {
	case u := <-urlc:
		return u
	case <-time.After(30 * time.Second):
		cmd.Process.Kill() // which ends its log
	}
	var log []string
	for l := range lines {
		log = append(log, l)
	}
	t.Fatalf("the server did not start through PgBouncer; its log:\n%s", strings.Join(log, "\n"))
	return ""
}
