package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// checkGraph asserts what must hold after any mix of writes: kept counts
// equal recounts, no follow row points at a missing user, and the file is
// sound.
func checkGraph(t *testing.T, dbPath string) {
	t.Helper()
	raw := openRaw(t, dbPath)
	var drift int
	// Counts count the follows whose other end is an active account.
	raw.QueryRow(`SELECT COUNT(*) FROM Users AS u
	  WHERE FollowerCount <> (SELECT COUNT(*) FROM Follows AS f JOIN Users AS o ON o.Id = f.FollowerId
	                          WHERE f.FolloweeId = u.Id AND o.DeactivatedAt IS NULL)
	     OR FollowingCount <> (SELECT COUNT(*) FROM Follows AS f JOIN Users AS o ON o.Id = f.FolloweeId
	                          WHERE f.FollowerId = u.Id AND o.DeactivatedAt IS NULL)`).Scan(&drift)
	if drift != 0 {
		t.Errorf("%d users' counts differ from a recount", drift)
	}
	rows, err := raw.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		t.Error("foreign_key_check reports an orphan follow row")
	}
	rows.Close()
	var integrity string
	raw.QueryRow(`PRAGMA integrity_check`).Scan(&integrity)
	if integrity != "ok" {
		t.Errorf("integrity_check: %s", integrity)
	}
}

// Concurrent follows of one pair (20 as a double-click storm, 50 as a
// pile-up): one row, every response a success, exactly one that created
// it, and exact counts.
func TestConcurrentFollowsOfOnePair(t *testing.T) {
	for _, n := range []int{20, 50} {
		s := startServer(t)
		a, b := s.createUser("a"), s.createUser("b")
		var wg sync.WaitGroup
		results := make([]response, n)
		for i := range results {
			wg.Go(func() { results[i] = s.do(a.Token, followMutation, map[string]any{"id": b.ID}) })
		}
		wg.Wait()
		created := 0
		for _, r := range results {
			if len(r.Errors) > 0 {
				t.Fatalf("a concurrent follow failed: %+v", r.Errors)
			}
			var out followResult
			json.Unmarshal(r.Data, &out)
			if !out.Follow.AlreadyFollowing {
				created++
			}
		}
		if created != 1 {
			t.Errorf("%d of %d follows created the row, want 1", created, n)
		}
		var out struct {
			B struct{ FollowerCount int }
			A struct{ FollowingCount int }
		}
		s.data("", `query($a: ID, $b: ID) { a: user(id: $a) { followingCount } b: user(id: $b) { followerCount } }`,
			map[string]any{"a": a.ID, "b": b.ID}, &out)
		if out.B.FollowerCount != 1 || out.A.FollowingCount != 1 {
			t.Errorf("counts after %d follows: %+v, want 1 and 1", n, out)
		}
		checkGraph(t, s.dbPath)
	}
}

// Follows and unfollows among a few users, interleaved from many clients,
// leave every count equal to a recount.
func TestFollowUnfollowStorm(t *testing.T) {
	s := startServer(t)
	var users []account
	for i := range 6 {
		users = append(users, s.createUser(fmt.Sprintf("storm%d", i)))
	}
	unfollow := `mutation($id: ID!) { unfollow(input: {userId: $id}) { wasFollowing } }`
	var wg sync.WaitGroup
	var failures atomic.Int64
	for g := range 12 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			me := users[g%len(users)]
			for range 40 {
				other := users[rng.IntN(len(users))]
				if other == me {
					continue
				}
				q := followMutation
				if rng.IntN(2) == 0 {
					q = unfollow
				}
				if r := s.do(me.Token, q, map[string]any{"id": other.ID}); len(r.Errors) > 0 {
					failures.Add(1)
					t.Errorf("storm request failed: %+v", r.Errors)
				}
			}
		})
	}
	wg.Wait()
	checkGraph(t, s.dbPath)
}

// A user deleting itself while others follow and unfollow it: no client
// sees a foreign key failure or an internal error, and nothing is orphaned.
func TestDeleteUserDuringFollows(t *testing.T) {
	for round := range 3 {
		s := startServer(t)
		victim := s.createUser(fmt.Sprintf("victim%d", round))
		var fans []account
		for i := range 8 {
			fans = append(fans, s.createUser(fmt.Sprintf("fan%d", i)))
		}
		unfollow := `mutation($id: ID!) { unfollow(input: {userId: $id}) { wasFollowing } }`
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for i, fan := range fans {
			wg.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					q := followMutation
					if (n+i)%2 == 1 {
						q = unfollow
					}
					r := s.do(fan.Token, q, map[string]any{"id": victim.ID})
					// Before the delete: success. After it: NOT_FOUND.
					if c := r.code(); c != "" && c != "NOT_FOUND" {
						t.Errorf("follow during delete: %+v", r.Errors)
					}
					// And the victim following the fans, until it is gone.
					r = s.do(victim.Token, followMutation, map[string]any{"id": fan.ID})
					if c := r.code(); c != "" && c != "UNAUTHENTICATED" {
						t.Errorf("victim's follow during delete: %+v", r.Errors)
					}
				}
			})
		}
		time.Sleep(50 * time.Millisecond)
		r := s.do(victim.Token, `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedFollows } }`, map[string]any{"id": victim.ID})
		if len(r.Errors) > 0 {
			t.Errorf("deleteUser under load: %+v", r.Errors)
		}
		time.Sleep(50 * time.Millisecond)
		close(stop)
		wg.Wait()
		checkGraph(t, s.dbPath)
	}
}

// The server killed with SIGKILL under a write load loses no follow it
// acknowledged, and its database file is sound when it starts again.
func TestCrashLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := buildBinary(t)
	dbPath := filepath.Join(t.TempDir(), "follows.db")
	cmd, url, _ := startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", dbPath, "-secret", "crash")

	// Enough users that the load makes new follows until the kill.
	var users []account
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
		users = append(users, account{ID: out.CreateUser.User.ID, Token: out.CreateUser.Token})
	}

	var mu sync.Mutex
	acked := map[[2]string]bool{}
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	for g := range 8 {
		wg.Go(func() {
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
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no follow was acknowledged before the kill")
	}

	_, url, _ = startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", dbPath, "-secret", "crash")
	checkGraph(t, dbPath)
	raw := openRaw(t, dbPath)
	missing := 0
	for pair := range acked {
		var n int
		raw.QueryRow(`SELECT COUNT(*) FROM Follows WHERE FollowerId = ? AND FolloweeId = ?`, pair[0], pair[1]).Scan(&n)
		if n != 1 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged follows are gone after the crash", missing, len(acked))
	}
	t.Logf("%d acknowledged follows, all present after SIGKILL and restart", len(acked))
}

// followOver sends one follow and reports whether the server acknowledged
// it; an error means no answer came.
func followOver(client *http.Client, url, token, id string) (bool, error) {
	body := gqlBody(followMutation, map[string]any{"id": id})
	req, _ := http.NewRequest("POST", url+"/graphql", bytesReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var r response
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
	bin := buildBinary(t)
	dbPath := filepath.Join(t.TempDir(), "follows.db")
	// A long batch wait keeps every request in flight for a while.
	cmd, url, _ := startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", dbPath, "-demo", "-batch-wait", "300ms")

	var wg sync.WaitGroup
	var answered, failedInFlight atomic.Int64
	started := make(chan struct{}, 16)
	for range 16 {
		wg.Go(func() {
			client := &http.Client{Timeout: 10 * time.Second}
			req, _ := http.NewRequest("POST", url+"/graphql", bytesReader(gqlBody(`{ users { nodes { followers { nodes { name } } } } }`, nil)))
			req.Header.Set("Content-Type", "application/json")
			started <- struct{}{}
			resp, err := client.Do(req)
			if err != nil {
				failedInFlight.Add(1)
				return
			}
			defer resp.Body.Close()
			var r response
			if json.NewDecoder(resp.Body).Decode(&r) == nil && resp.StatusCode == 200 && len(r.Errors) == 0 {
				answered.Add(1)
			} else {
				failedInFlight.Add(1)
			}
		})
	}
	for range 16 {
		<-started
	}
	time.Sleep(100 * time.Millisecond) // all sixteen are now waiting on their loaders
	cmd.Process.Signal(syscall.SIGTERM)
	wg.Wait()
	waitExit(t, cmd, 20*time.Second)
	if answered.Load() != 16 || failedInFlight.Load() != 0 {
		t.Errorf("%d of 16 in-flight requests answered, %d failed", answered.Load(), failedInFlight.Load())
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
