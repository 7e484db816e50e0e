package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"follows/api/apitest"
)

// The server killed with SIGKILL under a write load loses no follow it
// acknowledged, and its database file is sound when it starts again.
func TestCrashLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := binary(t)
	dbPath := filepath.Join(t.TempDir(), "follows.db")
	cmd, url, _ := startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", dbPath, "-secret", "crash")

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
	apitest.CheckGraph(t, dbPath)
	raw := apitest.OpenRaw(t, dbPath)
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
	bin := binary(t)
	dbPath := filepath.Join(t.TempDir(), "follows.db")
	// A long batch wait keeps every request in flight for a while.
	cmd, url, _ := startProcess(t, bin, "-addr", "127.0.0.1:0", "-db", dbPath, "-demo", "-batch-wait", "300ms")

	var wg sync.WaitGroup
	var answered, failedInFlight atomic.Int64
	started := make(chan struct{}, 16)
	for range 16 {
		wg.Go(func() {
			client := &http.Client{Timeout: 10 * time.Second}
			req, _ := http.NewRequest("POST", url+"/graphql", bytesReader(apitest.Body(`{ users { nodes { followers { nodes { name } } } } }`, nil)))
			req.Header.Set("Content-Type", "application/json")
			started <- struct{}{}
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
