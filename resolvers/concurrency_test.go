package resolvers_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"follows/api/apitest"
)

// Concurrent follows of one pair (20 as a double-click storm, 50 as a
// pile-up): one row, every response a success, exactly one that created
// it, and exact counts.
func TestConcurrentFollowsOfOnePair(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testConcurrentFollowsOfOnePair)
}

func testConcurrentFollowsOfOnePair(t *testing.T, on apitest.Database) {
	for _, n := range []int{20, 50} {
		s := on.Start(t)
		a, b := s.CreateUser("a"), s.CreateUser("b")
		var wg sync.WaitGroup
		results := make([]apitest.Response, n)
		for i := range results {
			wg.Go(func() { results[i] = s.Do(a.Token, apitest.FollowMutation, map[string]any{"id": b.ID}) })
		}
		wg.Wait()
		created := 0
		for _, r := range results {
			if len(r.Errors) > 0 {
				t.Fatalf("a concurrent follow failed: %+v", r.Errors)
			}
			var out apitest.FollowResult
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
		s.Data("", `query($a: ID, $b: ID) { a: user(id: $a) { followingCount } b: user(id: $b) { followerCount } }`,
			map[string]any{"a": a.ID, "b": b.ID}, &out)
		if out.B.FollowerCount != 1 || out.A.FollowingCount != 1 {
			t.Errorf("counts after %d follows: %+v, want 1 and 1", n, out)
		}
		s.CheckGraph()
	}
}

// Follows and unfollows among a few users, interleaved from many clients,
// leave every count equal to a recount.
func TestFollowUnfollowStorm(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testFollowUnfollowStorm)
}

func testFollowUnfollowStorm(t *testing.T, on apitest.Database) {
	s := on.Start(t)
	var users []apitest.Account
	for i := range 6 {
		users = append(users, s.CreateUser(fmt.Sprintf("storm%d", i)))
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
				q := apitest.FollowMutation
				if rng.IntN(2) == 0 {
					q = unfollow
				}
				if r := s.Do(me.Token, q, map[string]any{"id": other.ID}); len(r.Errors) > 0 {
					failures.Add(1)
					t.Errorf("storm request failed: %+v", r.Errors)
				}
			}
		})
	}
	wg.Wait()
	s.CheckGraph()
}

// A user deleting itself while others follow and unfollow it: no client
// sees a foreign key failure or an internal error, and nothing is orphaned.
func TestDeleteUserDuringFollows(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testDeleteUserDuringFollows)
}

func testDeleteUserDuringFollows(t *testing.T, on apitest.Database) {
	for round := range 3 {
		s := on.Start(t)
		victim := s.CreateUser(fmt.Sprintf("victim%d", round))
		var fans []apitest.Account
		for i := range 8 {
			fans = append(fans, s.CreateUser(fmt.Sprintf("fan%d", i)))
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
					q := apitest.FollowMutation
					if (n+i)%2 == 1 {
						q = unfollow
					}
					r := s.Do(fan.Token, q, map[string]any{"id": victim.ID})
					// Before the delete: success. After it: NOT_FOUND.
					if c := r.Code(); c != "" && c != "NOT_FOUND" {
						t.Errorf("follow during delete: %+v", r.Errors)
					}
					// And the victim following the fans, until it is gone.
					r = s.Do(victim.Token, apitest.FollowMutation, map[string]any{"id": fan.ID})
					if c := r.Code(); c != "" && c != "UNAUTHENTICATED" {
						t.Errorf("victim's follow during delete: %+v", r.Errors)
					}
				}
			})
		}
		time.Sleep(50 * time.Millisecond)
		r := s.Do(victim.Token, `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedFollows } }`, map[string]any{"id": victim.ID})
		if len(r.Errors) > 0 {
			t.Errorf("deleteUser under load: %+v", r.Errors)
		}
		time.Sleep(50 * time.Millisecond)
		close(stop)
		wg.Wait()
		s.CheckGraph()
	}
}
