package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"follows/api/apitest"
	"follows/db/pgtest"
)

// The read replica tests need a streaming standby of POSTGRES_DSN's server
// that applies changes late (recovery_min_apply_delay, 2s in .ci/run), as
// a standby under load does; the one that stops it mid-load needs to be
// told its cluster, to stop and start it with pg_ctlcluster.
const (
	replicaEnv        = "POSTGRES_REPLICA_DSN"
	replicaClusterEnv = "POSTGRES_REPLICA_CLUSTER"
)

// replicaDSN is the DSN of dsn's database on the standby, or the test is
// skipped, saying what it needs.
func replicaDSN(t *testing.T, what string) (primary, replica string) {
	t.Helper()
	base := os.Getenv(replicaEnv)
	if base == "" {
		t.Skip("SKIPPED: " + what + " needs " + replicaEnv + " (a streaming standby of " + pgtest.Env + "'s server with recovery_min_apply_delay = 2s, e.g. postgres://follows:follows@127.0.0.1:5433/follows; .ci/run starts one)")
	}
	primary = pgtest.DSN(t, what)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", replicaEnv, err)
	}
	p, _ := url.Parse(primary)
	u.Path = p.Path
	return primary, u.String()
}

// startWithReplica starts a server process on the primary and its
// replica, and waits until the replica answers its reads: the test's new
// database reaches the standby only after its apply delay.
func startWithReplica(t *testing.T, primary, replica string) string {
	t.Helper()
	_, u, _ := startProcess(t, append(replicaArgs(primary), "-db-replica", replica, "-replica-max-lag", "1m")...)
	deadline := time.Now().Add(60 * time.Second)
	for !readTargets(t, u).inUse {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the replica was not in use within 60s (does the standby stream? pg_stat_wal_receiver on it says)", u)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return u
}

// targets are a server's reads by where they were answered, and whether
// its replica is in use, from its /metrics.
type targets struct {
	primary, replica float64
	inUse            bool
}

func readTargets(t *testing.T, u string) targets {
	t.Helper()
	resp, err := http.Get(u + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got targets
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, _ := strings.Cut(sc.Text(), " ")
		v, _ := strconv.ParseFloat(value, 64)
		switch name {
		case `follows_db_reads_total{target="primary"}`:
			got.primary = v
		case `follows_db_reads_total{target="replica1"}`:
			got.replica = v
		case `follows_db_replica_in_use{replica="replica1"}`:
			got.inUse = v == 1
		}
	}
	return got
}

const followingQuery = `query($id: ID!) { user(id: $id) { following(first: 100) { nodes { id } } } }`

// following is the ids of the users id follows, read through the server
// at u as token's viewer ("": anonymously).
func following(client *http.Client, u, token, id string) ([]string, error) {
	raw, err := try(client, u, token, followingQuery, map[string]any{"id": id})
	if err != nil {
		return nil, err
	}
	if len(raw.Parsed.Errors) > 0 {
		return nil, fmt.Errorf("%+v", raw.Parsed.Errors)
	}
	var out struct {
		User struct {
			Following struct{ Nodes []struct{ ID string } }
		}
	}
	if err := json.Unmarshal(raw.Parsed.Data, &out); err != nil {
		return nil, err
	}
	var ids []string
	for _, n := range out.User.Following.Nodes {
		ids = append(ids, n.ID)
	}
	return ids, nil
}

// signUpAt signs a user up through the server at u.
func signUpAt(t *testing.T, client *http.Client, u, name string) apitest.Account {
	t.Helper()
	raw, err := try(client, u, "", `mutation($n: String!) { createUser(input: {name: $n}) { user { id } token } }`, map[string]any{"n": name})
	if err != nil || len(raw.Parsed.Errors) > 0 {
		t.Fatalf("sign up %s: %v %+v", name, err, raw.Parsed.Errors)
	}
	var out struct {
		CreateUser struct {
			User  struct{ ID string }
			Token string
		}
	}
	if err := json.Unmarshal(raw.Parsed.Data, &out); err != nil {
		t.Fatal(err)
	}
	return apitest.Account{ID: out.CreateUser.User.ID, Name: name, Token: out.CreateUser.Token}
}

// followAt has who follow (or unfollow) whom through the server at u.
func followAt(client *http.Client, u string, who, whom apitest.Account, follow bool) error {
	q := apitest.FollowMutation
	if !follow {
		q = `mutation($id: ID!) { unfollow(input: {userId: $id}) { wasFollowing } }`
	}
	raw, err := try(client, u, who.Token, q, map[string]any{"id": whom.ID})
	if err == nil && len(raw.Parsed.Errors) > 0 {
		err = fmt.Errorf("%+v", raw.Parsed.Errors)
	}
	return err
}

// A viewer that follows someone through one instance and at once reads its
// following list through another sees the follow, every time, while the
// replica that instance reads from applies changes 2s late; the viewer's
// token, minted as it signed up, works there at once too. An anonymous
// read of that list is answered by the replica, stale until it catches up,
// and so, once the replica has the viewer's writes, is the viewer's.
func TestReplicaReadYourWrites(t *testing.T) {
	primary, replica := replicaDSN(t, "the read replica test")
	a := startWithReplica(t, primary, replica)
	b := startWithReplica(t, primary, replica)
	client := &http.Client{Timeout: 10 * time.Second}

	viewer := signUpAt(t, client, a, "viewer")
	var want []string
	for i := range 20 {
		target := signUpAt(t, client, a, fmt.Sprintf("target%d", i))
		if err := followAt(client, a, viewer, target, true); err != nil {
			t.Fatalf("follow %d: %v", i, err)
		}
		want = append(want, target.ID)
		got, err := following(client, b, viewer.Token, viewer.ID)
		if err != nil {
			t.Fatalf("read %d through the other instance: %v", i, err)
		}
		if !slices.Contains(got, target.ID) {
			t.Errorf("follow %d: the viewer's following read through the other instance at once lacks %s: %v", i, target.ID, got)
		}
	}

	before := readTargets(t, b)
	if _, err := following(client, b, "", viewer.ID); err != nil {
		t.Fatal(err)
	}
	if after := readTargets(t, b); after.replica <= before.replica {
		t.Errorf("an anonymous read was not answered by the replica: replica reads %v, then %v", before.replica, after.replica)
	}

	// Once the replica has applied the follows, the anonymous read sees
	// them all, and the viewer's read goes to the replica as well.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := following(client, b, "", viewer.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica's answer to an anonymous read has %d of the %d follows after 30s", len(got), len(want))
		}
		time.Sleep(200 * time.Millisecond)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		before := readTargets(t, b)
		got, err := following(client, b, viewer.Token, viewer.ID)
		if err != nil || len(got) != len(want) {
			t.Fatalf("the viewer's read: %v, %d follows of %d", err, len(got), len(want))
		}
		if readTargets(t, b).replica > before.replica {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the viewer's reads did not go to the replica within 30s of its last write")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pgCluster runs pg_ctlcluster on the standby's cluster ("15 standby").
func pgCluster(t *testing.T, cluster, action string) {
	t.Helper()
	args := append([]string{"--skip-systemctl-redirect"}, strings.Fields(cluster)...)
	args = append(args, action)
	if action == "stop" {
		args = append(args, "-m", "fast")
	}
	if out, err := exec.Command("pg_ctlcluster", args...).CombinedOutput(); err != nil {
		t.Fatalf("pg_ctlcluster %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// The standby stopped while viewers write through one instance and read
// through another, and anonymous readers read: no request fails, the
// reads move to the primary, the viewers still read their writes, and
// the reads go back to the standby once it is started again. /readyz
// stays ready throughout: the primary answers.
func TestReplicaStoppedMidLoad(t *testing.T) {
	cluster := os.Getenv(replicaClusterEnv)
	if cluster == "" {
		t.Skip("SKIPPED: the standby stop test needs " + replicaClusterEnv + ", the standby's cluster for pg_ctlcluster (e.g. \"15 standby\"), and " + replicaEnv + "; .ci/run sets both")
	}
	primary, replica := replicaDSN(t, "the standby stop test")
	a := startWithReplica(t, primary, replica)
	b := startWithReplica(t, primary, replica)
	client := &http.Client{Timeout: 10 * time.Second}

	const viewers, targetsEach = 4, 5
	type viewer struct {
		me      apitest.Account
		targets []apitest.Account
	}
	vs := make([]viewer, viewers)
	for i := range vs {
		vs[i].me = signUpAt(t, client, a, fmt.Sprintf("v%d", i))
		for k := range targetsEach {
			vs[i].targets = append(vs[i].targets, signUpAt(t, client, a, fmt.Sprintf("v%dt%d", i, k)))
		}
	}

	var failed, requests atomic.Int64
	fail := func(format string, args ...any) {
		failed.Add(1)
		t.Errorf(format, args...)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, v := range vs {
		wg.Go(func() { // follow or unfollow through a, read at once through b
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				target := v.targets[n%targetsEach]
				follow := (n/targetsEach)%2 == 0
				if err := followAt(client, a, v.me, target, follow); err != nil {
					fail("viewer %d: write: %v", i, err)
					continue
				}
				got, err := following(client, b, v.me.Token, v.me.ID)
				requests.Add(2)
				switch {
				case err != nil:
					fail("viewer %d: read: %v", i, err)
				case slices.Contains(got, target.ID) != follow:
					fail("viewer %d: read through the other instance after its acknowledged write (follow %v) of %s: %v", i, follow, target.ID, got)
				}
			}
		})
		wg.Go(func() { // an anonymous reader of the viewer's list
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := following(client, []string{a, b}[n%2], "", v.me.ID); err != nil {
					fail("anonymous read: %v", err)
				}
				requests.Add(1)
			}
		})
	}
	end := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer end()

	waitFor := func(what string, cond func(targets) bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond(readTargets(t, b)) {
			if time.Now().After(deadline) {
				end()
				t.Fatalf("not within 60s: %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	start := readTargets(t, b)
	waitFor("100 reads answered by the replica", func(c targets) bool { return c.replica-start.replica >= 100 })

	pgCluster(t, cluster, "stop")
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			pgCluster(t, cluster, "start")
		}
	})
	waitFor("the replica out of use", func(c targets) bool { return !c.inUse })
	if resp, err := http.Get(b + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz with the replica down: %v %v, want 200", resp, err)
	}
	down := readTargets(t, b)
	waitFor("100 reads answered by the primary while the standby is down", func(c targets) bool { return c.primary-down.primary >= 100 })
	if c := readTargets(t, b); c.replica != down.replica {
		t.Errorf("reads answered by a replica that is down: %v, then %v", down.replica, c.replica)
	}

	pgCluster(t, cluster, "start")
	restarted = true
	back := readTargets(t, b)
	waitFor("100 reads answered by the replica after its restart", func(c targets) bool { return c.replica-back.replica >= 100 })
	end()
	t.Logf("%d requests, %d failed; reads on b: %+v at the start, %+v when the standby stopped, %+v when it restarted, %+v at the end",
		requests.Load(), failed.Load(), start, down, back, readTargets(t, b))
}

// -db-replica repeats, each may hold several DSNs separated by commas or
// spaces, and FOLLOWS_DB_REPLICA holds them all the same way.
func TestReplicaFlag(t *testing.T) {
	s, _, err := parseServer([]string{"-db-replica", "postgres://a/x", "-db-replica", "postgres://b/x, postgres://c/x"}, nil)
	if err != nil || !slices.Equal(s.replicas, replicaDSNs{"postgres://a/x", "postgres://b/x", "postgres://c/x"}) {
		t.Errorf("flags: %q, %v", s.replicas, err)
	}
	s, _, err = parseServer(nil, map[string]string{"FOLLOWS_DB_REPLICA": "postgres://a/x postgres://b/x"})
	if err != nil || !slices.Equal(s.replicas, replicaDSNs{"postgres://a/x", "postgres://b/x"}) {
		t.Errorf("FOLLOWS_DB_REPLICA: %q, %v", s.replicas, err)
	}
	if s, _, err = parseServer([]string{"-replica-max-lag", "0s"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.check(); err == nil || !strings.Contains(err.Error(), "-replica-max-lag") {
		t.Errorf("-replica-max-lag 0s: %v, want it refused", err)
	}
}
