package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"follows/api/apitest"
	"follows/db/pgtest"
)

// replicaArgs start a server that a test's load may drive as fast as it
// can from one address.
func replicaArgs(dsn string) []string {
	return []string{"-addr", "127.0.0.1:0", "-db", dsn, "-secret", testSecret, "-rate-signup", "off", "-rate-mutations", "off"}
}

// Four instances started at once on a new database all come up: one
// migrates, the others wait for it, and every one serves.
func TestInstancesStartTogether(t *testing.T) {
	apitest.Each(t, func(t *testing.T, on apitest.Database) {
		dsn := on.NewDSN(t)
		const instances = 4
		cmds := make([]*exec.Cmd, instances)
		urls := make([]<-chan string, instances)
		logs := make([]<-chan string, instances)
		for i := range urls {
			cmds[i], urls[i], logs[i] = launchProcess(t, replicaArgs(dsn)...)
		}
		deadline := time.After(60 * time.Second)
		for i, urlc := range urls {
			select {
			case u := <-urlc:
				if resp, err := http.Get(u + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
					t.Errorf("instance %d: /readyz %v %v", i+1, resp, err)
				}
			case <-deadline:
				cmds[i].Process.Kill() // which ends its log
				var log []string
				for l := range logs[i] {
					log = append(log, l)
				}
				t.Fatalf("instance %d of %d did not start within 60s; its log:\n%s", i+1, instances, strings.Join(log, "\n"))
			}
		}
	})
}

// replicas are server processes on one database, which a load reaches
// through each in turn; one may be replaced (killed and started again on
// another port) while the load runs.
type replicas struct {
	t    *testing.T
	dsn  string
	args []string // each process's
	urls []atomic.Pointer[string]
	cmds []*exec.Cmd
	// acked counts the writes each replica acknowledged; progress is
	// sent to, without blocking, after each.
	acked    []atomic.Int64
	progress chan struct{}
	// unanswered counts the requests that got no answer.
	unanswered atomic.Int64
}

func startReplicas(t *testing.T, dsn string, n int, extra ...string) *replicas {
	r := &replicas{t: t, dsn: dsn, args: append(replicaArgs(dsn), extra...), urls: make([]atomic.Pointer[string], n), cmds: make([]*exec.Cmd, n),
		acked: make([]atomic.Int64, n), progress: make(chan struct{}, 1)}
	for i := range n {
		r.start(i)
	}
	return r
}

// start starts replica i and waits for it to say where it serves.
func (r *replicas) start(i int) {
	r.t.Helper()
	cmd, url, _ := startProcess(r.t, r.args...)
	r.cmds[i] = cmd
	r.urls[i].Store(&url)
}

func (r *replicas) url(i int) string { return *r.urls[i%len(r.urls)].Load() }

// total is how many writes the replicas acknowledged.
func (r *replicas) total() int64 {
	var n int64
	for i := range r.acked {
		n += r.acked[i].Load()
	}
	return n
}

// waitUntil waits until cond holds, looking again after each write
// acknowledged, for at most a minute; then it fails the test, running
// stop first.
func (r *replicas) waitUntil(what string, cond func() bool, stop func()) {
	r.t.Helper()
	deadline := time.After(60 * time.Second)
	for !cond() {
		select {
		case <-r.progress:
		case <-deadline:
			stop()
			r.t.Fatalf("not within 60s: %s (%d writes acknowledged)", what, r.total())
		}
	}
}

// outcome is what became of a request: acknowledged, refused with a
// GraphQL error (nothing written), or unknown (no answer: it may or may
// not have been written).
type outcome int

const (
	acked outcome = iota
	refused
	unknown
)

// send posts one GraphQL request to replica i and decodes its data into
// out when it was acknowledged. An INTERNAL_SERVER_ERROR fails the test:
// no race between replicas may reach a client as one.
func (r *replicas) send(client *http.Client, i int, token, query string, vars map[string]any, out any) outcome {
	raw, err := try(client, r.url(i), token, query, vars)
	if err != nil {
		r.unanswered.Add(1)
		return unknown
	}
	if res := raw.Parsed; len(res.Errors) > 0 {
		if code := res.Code(); code == "INTERNAL_SERVER_ERROR" || code == "" {
			r.t.Errorf("%s %v on replica %d: %+v", strings.Fields(query)[1], vars, i%len(r.urls), res.Errors)
		}
		return refused
	}
	if out != nil {
		json.Unmarshal(raw.Parsed.Data, out)
	}
	r.acked[i%len(r.urls)].Add(1)
	select {
	case r.progress <- struct{}{}:
	default:
	}
	return acked
}

// signUp signs a user up through replica i.
func (r *replicas) signUp(client *http.Client, i int, name string) (apitest.Account, outcome) {
	var out struct {
		CreateUser struct {
			User  struct{ ID string }
			Token string
		}
	}
	o := r.send(client, i, "", `mutation($n: String!) { createUser(input: {name: $n}) { user { id } token } }`, map[string]any{"n": name}, &out)
	return apitest.Account{ID: out.CreateUser.User.ID, Name: name, Token: out.CreateUser.Token}, o
}

// known is a yes or no the load is sure of, or not.
type known struct{ set, sure bool }

// apply records a write's outcome: acknowledged, the state it set; refused,
// no change; unknown, no longer sure.
func (k *known) apply(o outcome, set bool) {
	switch o {
	case acked:
		*k = known{set: set, sure: true}
	case unknown:
		k.sure = false
	}
}

// A mixed write load sent through three server processes on one
// PostgreSQL database, one of them killed with SIGKILL and started again
// while it runs, loses nothing: every acknowledged follow, block and
// sign-up is there, every acknowledged unfollow and unblock is not,
// acknowledged deactivations stand, the counts equal recounts, and a
// token one replica minted works on every replica, the restarted one
// included.
//
// Each worker acts as accounts of its own on users of its own (targets
// that never act), and follows other workers' accounts too; so each pair's
// writes come from one worker, in order, and what the load last had
// acknowledged of it is what the database must hold.
func TestReplicasLoseNothing(t *testing.T) {
	dsn := pgtest.DSN(t, "the replicas test (three server processes on one PostgreSQL database)")
	testReplicasLoseNothing(t, dsn, dsn)
}

// The same through PgBouncer in transaction pooling mode: the processes'
// -db goes through the pooler (pgx's default_query_exec_mode without
// named statements), their -db-listen straight to PostgreSQL, and the
// checks afterwards read PostgreSQL directly.
func TestReplicasLoseNothingThroughPgBouncer(t *testing.T) {
	pooled, direct := pgtest.PooledDSN(t, "the replicas test through PgBouncer")
	testReplicasLoseNothing(t, direct, pooled, "-db-listen", direct)
}

// testReplicasLoseNothing runs the load on replicas serving from served
// with the extra flags, and checks the database dsn reaches.
func testReplicasLoseNothing(t *testing.T, dsn, served string, extra ...string) {
	bin := binary(t)
	const (
		nReplicas  = 3
		workers    = 6
		actorsPer  = 2
		targetsPer = 4
	)
	reps := startReplicas(t, served, nReplicas, extra...)
	client := &http.Client{Timeout: 10 * time.Second}
	// Accounts and targets signed up through every replica in turn, so
	// that each replica minted some of the tokens.
	ws := make([]*worker, workers)
	n := 0
	for g := range ws {
		ws[g] = &worker{known: map[fact]*known{}}
		for k := range actorsPer + targetsPer {
			a, o := reps.signUp(client, n, fmt.Sprintf("w%da%d", g, k))
			if o != acked {
				t.Fatalf("sign-up before the load: %v", o)
			}
			if k < actorsPer {
				ws[g].actors = append(ws[g].actors, a)
				ws[g].mintedBy = append(ws[g].mintedBy, n%nReplicas)
				ws[g].knownOf(fact{"deactivated", a.ID, ""}) // checked, even if never changed
			} else {
				ws[g].targets = append(ws[g].targets, a)
			}
			n++
		}
	}
	var allActors []apitest.Account
	for _, w := range ws {
		allActors = append(allActors, w.actors...)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g, w := range ws {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 13))
			for i := g; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				w.step(reps, client, g, i, rng, allActors)
			}
		})
	}
	end := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer end()
	base := reps.total()
	reps.waitUntil("150 writes acknowledged before the kill", func() bool { return reps.total()-base >= 150 }, end)
	reps.cmds[1].Process.Signal(syscall.SIGKILL)
	reps.cmds[1].Wait()
	killedAt := reps.total()
	reps.start(1)
	restartedBase := reps.acked[1].Load()
	reps.waitUntil("50 writes acknowledged through the restarted replica", func() bool { return reps.acked[1].Load()-restartedBase >= 50 }, end)
	end()

	// Every write is settled; what the load knows must be what is there.
	checked, wrong, signUps := checkSettled(t, dsn, ws)
	t.Logf("%d writes acknowledged (%d before the kill, %d through the restarted replica after its restart; %d sign-ups), %d unanswered; %d outcomes known and checked, %d wrong",
		reps.total()-base, killedAt-base, reps.acked[1].Load()-restartedBase, signUps, reps.unanswered.Load(), checked, wrong)

	// The counters equal recounts: the server's own check finds nothing.
	out, err := exec.Command(bin, "check-counts", "-db", dsn).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "0 users had drifted counts") {
		t.Errorf("check-counts: %v\n%s", err, out)
	}
	apitest.CheckDSN(t, dsn)

	// Tokens minted by each replica, the killed one before its death
	// included, work on every replica.
	for _, w := range ws {
		for k, a := range w.actors {
			for i := range nReplicas {
				var v struct{ Viewer struct{ ID string } }
				if o := reps.send(client, i, a.Token, `{ viewer { id } }`, nil, &v); o != acked || v.Viewer.ID != a.ID {
					t.Errorf("a token minted by replica %d, used on replica %d: %v, viewer %q, want %q", w.mintedBy[k], i, o, v.Viewer.ID, a.ID)
				}
			}
		}
	}
}

// worker is a load's worker: the accounts it acts as, the users only it
// acts on (targets, which never act), and what it had acknowledged.
type worker struct {
	actors, targets []apitest.Account
	mintedBy        []int // the replica that minted each actor's token
	known           map[fact]*known
	signedUp        []apitest.Account
}

// fact is one thing the database holds or not: a follow or a block from a
// to b, a user a deactivated (b empty), a user a named b.
type fact struct{ kind, a, b string }

// knownOf is what w knows of f: sure it does not hold, until a write says
// otherwise.
func (w *worker) knownOf(f fact) *known {
	k := w.known[f]
	if k == nil {
		k = &known{sure: true}
		w.known[f] = k
	}
	return k
}

// readFacts adds the rows of a query of two columns to held, as facts of
// a kind.
func readFacts(t *testing.T, dsn, kind, query string, held map[fact]bool) {
	t.Helper()
	rows, err := apitest.OpenDSN(t, dsn).Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		f := fact{kind: kind}
		if err := rows.Scan(&f.a, &f.b); err != nil {
			t.Fatal(err)
		}
		held[f] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// checkSettled compares what the workers' loads had acknowledged with what
// the database holds, once every write is settled, and returns how many
// outcomes it checked, how many were wrong, and the sign-ups among them.
func checkSettled(t *testing.T, dsn string, ws []*worker) (checked, wrong, signUps int) {
	t.Helper()
	held := map[fact]bool{}
	readFacts(t, dsn, "follow", `SELECT "FollowerId", "FolloweeId" FROM "Follows"`, held)
	readFacts(t, dsn, "block", `SELECT "BlockerId", "BlockedId" FROM "Blocks"`, held)
	readFacts(t, dsn, "deactivated", `SELECT "Id", '' FROM "Users" WHERE "DeactivatedAt" IS NOT NULL`, held)
	readFacts(t, dsn, "named", `SELECT "Id", "Name" FROM "Users"`, held)
	for _, w := range ws {
		for f, k := range w.known {
			if k.sure {
				if checked++; held[f] != k.set {
					wrong++
					t.Errorf("%+v: %v in the database, %v acknowledged", f, held[f], k.set)
				}
			}
		}
		for _, a := range w.signedUp {
			if signUps++; !held[fact{"named", a.ID, a.Name}] {
				t.Errorf("signed-up user %s (%s) is not in the database by that name", a.ID, a.Name)
			}
		}
	}
	return checked, wrong, signUps
}

// step is worker g's i-th write, chosen by rng, sent through replica i
// (mod their number); w records what came of it.
func (w *worker) step(reps *replicas, client *http.Client, g, i int, rng *rand.Rand, allActors []apitest.Account) {
	me := w.actors[rng.IntN(len(w.actors))]
	target := w.targets[rng.IntN(len(w.targets))]
	switch p := rng.IntN(100); {
	case p < 35: // a follow, of a target or of another worker's account
		other := target
		if rng.IntN(3) == 0 {
			other = allActors[rng.IntN(len(allActors))]
		}
		if other.ID == me.ID {
			return
		}
		o := reps.send(client, i, me.Token, apitest.FollowMutation, map[string]any{"id": other.ID}, nil)
		w.knownOf(fact{"follow", me.ID, other.ID}).apply(o, true)
	case p < 55:
		other := target
		if rng.IntN(3) == 0 {
			other = allActors[rng.IntN(len(allActors))]
		}
		o := reps.send(client, i, me.Token, `mutation($id: ID!) { unfollow(input: {userId: $id}) { wasFollowing } }`, map[string]any{"id": other.ID}, nil)
		w.knownOf(fact{"follow", me.ID, other.ID}).apply(o, false)
	case p < 67: // a block takes the follow between them away
		o := reps.send(client, i, me.Token, `mutation($id: ID!) { block(input: {userId: $id}) { removedFollows } }`, map[string]any{"id": target.ID}, nil)
		w.knownOf(fact{"block", me.ID, target.ID}).apply(o, true)
		w.knownOf(fact{"follow", me.ID, target.ID}).apply(o, false)
	case p < 77:
		o := reps.send(client, i, me.Token, `mutation($id: ID!) { unblock(input: {userId: $id}) { wasBlocked } }`, map[string]any{"id": target.ID}, nil)
		w.knownOf(fact{"block", me.ID, target.ID}).apply(o, false)
	case p < 87: // deactivate, then reactivate through the next replicas
		d := w.knownOf(fact{"deactivated", me.ID, ""})
		o := reps.send(client, i, me.Token, `mutation { deactivateAccount { deactivated } }`, nil, nil)
		d.apply(o, true)
		for n := 1; n <= 2*len(reps.urls) && (!d.sure || d.set); n++ {
			o := reps.send(client, i+n, me.Token, `mutation { reactivateAccount { deactivated } }`, nil, nil)
			d.apply(o, false)
		}
	default: // a sign-up, which becomes one of this worker's targets
		if a, o := reps.signUp(client, i, fmt.Sprintf("w%dn%d", g, i)); o == acked {
			w.signedUp = append(w.signedUp, a)
			w.targets = append(w.targets, a)
		}
	}
}
