package db

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"follows/db/pgtest"
)

// TestFollowEvents runs the outbox tests on every dialect there is a
// database for.
func TestFollowEvents(t *testing.T) {
	suite := map[string]func(*testing.T, opener){
		"DeliveryRules":        testEventDeliveryRules,
		"ConcurrentWritersIDs": testEventsOfConcurrentWriters,
	}
	for _, d := range []struct {
		name string
		open opener
	}{{"sqlite", openTestStore}, {"sqlserver", openSQLServer}, {"postgres", openPostgres}} {
		t.Run(d.name, func(t *testing.T) {
			if d.name == "sqlserver" && os.Getenv("MSSQL_DSN") == "" {
				t.Skip(sqlserverSkip)
			}
			if d.name == "postgres" && !pgtest.Available() {
				t.Skip(pgtest.SkipMessage("the PostgreSQL outbox tests"))
			}
			for name, test := range suite {
				t.Run(name, func(t *testing.T) {
					if d.name != "sqlserver" { // SQL Server's tests share one database
						t.Parallel()
					}
					test(t, d.open)
				})
			}
		})
	}
}

// heard is an event as a test compares it: "kind follower->followee".
func heard(e Event) string {
	kind := "FOLLOWED"
	if e.Kind == EventUnfollowed {
		kind = "UNFOLLOWED"
	}
	return kind + " " + e.Follower.Name + "->" + e.Followee.Name
}

// eventsSoFar reads the events for viewer after the cursor, up to the
// newest event now in the outbox.
func eventsSoFar(t *testing.T, s *Store, viewer, after int64) []string {
	t.Helper()
	last, err := s.LastEventID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.eventsFor(context.Background(), viewer, after, last)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, heard(e))
	}
	return got
}

func testEventDeliveryRules(t *testing.T, open opener) {
	s := open(t)
	ctx := context.Background()
	id := map[string]int64{}
	for _, n := range []string{"ann", "bob", "cat", "dan", "eve"} {
		u, err := s.CreateUser(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		id[n] = u.ID
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	f := func(a, b string) { t.Helper(); must(s.Follow(ctx, id[a], id[b])) }
	start, err := s.LastEventID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	no, yes := false, true
	f("ann", "bob")                                            // ann follows bob: notifications on by default
	f("cat", "bob")                                            // cat follows bob
	must(s.UpdateFollow(ctx, id["cat"], id["bob"], &yes, nil)) // cat mutes bob
	f("dan", "bob")
	must(s.UpdateFollow(ctx, id["dan"], id["bob"], nil, &no)) // dan turns bob's notifications off
	f("bob", "eve")                                           // ann hears (notifications); cat muted, dan off
	f("bob", "ann")                                           // ann is the followee
	f("bob", "ann")                                           // already: no second event
	must(s.Unfollow(ctx, id["bob"], id["ann"]))               // ann hears UNFOLLOWED
	must(s.Unfollow(ctx, id["bob"], id["ann"]))               // nothing to remove: no event
	f("eve", "bob")
	must(s.Block(ctx, id["bob"], id["eve"])) // removes both follows of bob and eve: not announced
	f("eve", "ann")                          // ann hears it
	f("ann", "cat")                          // ann's own action: not echoed to ann
	f("dan", "ann")
	deactivate := func(name string, off bool) {
		t.Helper()
		if _, _, err := s.SetDeactivated(ctx, id[name], off); err != nil {
			t.Fatal(err)
		}
	}
	deactivate("dan", true) // withheld while dan is deactivated
	f("cat", "ann")

	// Rules apply when events are read: ann follows cat now, so she
	// hears cat's follow of bob, made before.
	got := eventsSoFar(t, s, id["ann"], start)
	want := []string{"FOLLOWED cat->bob", "FOLLOWED bob->eve", "FOLLOWED bob->ann", "UNFOLLOWED bob->ann", "FOLLOWED eve->ann", "FOLLOWED cat->ann"}
	if !slices.Equal(got, want) {
		t.Errorf("ann heard %q, want %q", got, want)
	}
	// bob hears his followers, but nothing of eve after the block, also
	// what eve did before it, and nothing of dan while deactivated.
	got = eventsSoFar(t, s, id["bob"], start)
	want = []string{"FOLLOWED ann->bob", "FOLLOWED cat->bob"}
	if !slices.Equal(got, want) {
		t.Errorf("bob heard %q, want %q", got, want)
	}
	// ann blocks eve: a resume from the start now leaves eve out.
	must(s.Block(ctx, id["ann"], id["eve"]))
	deactivate("dan", false)
	got = eventsSoFar(t, s, id["ann"], start)
	want = []string{"FOLLOWED cat->bob", "FOLLOWED bob->ann", "UNFOLLOWED bob->ann", "FOLLOWED dan->ann", "FOLLOWED cat->ann"}
	if !slices.Equal(got, want) {
		t.Errorf("after the block, ann heard %q, want %q", got, want)
	}
	// Deleting a user keeps the outbox, and withholds what involved it.
	if _, err := s.DeleteUser(ctx, id["dan"]); err != nil {
		t.Fatal(err)
	}
	got = eventsSoFar(t, s, id["ann"], start)
	want = []string{"FOLLOWED cat->bob", "FOLLOWED bob->ann", "UNFOLLOWED bob->ann", "FOLLOWED cat->ann"}
	if !slices.Equal(got, want) {
		t.Errorf("after dan was deleted, ann heard %q, want %q", got, want)
	}
}

// testEventsOfConcurrentWriters has many writers, who share no user (so
// no row lock orders them), follow at once while a subscriber hears them
// all live: it must hear every follow exactly once, in Id order, however
// the writers' commits interleave with the Ids they drew.
func testEventsOfConcurrentWriters(t *testing.T, open opener) {
	s := open(t)
	ctx := context.Background()
	fan, err := s.CreateUser(ctx, "fan")
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	type pair struct{ star, target int64 }
	pairs := make([]pair, n)
	for i := range pairs {
		star, err := s.CreateUser(ctx, fmt.Sprintf("star%d", i))
		if err != nil {
			t.Fatal(err)
		}
		target, err := s.CreateUser(ctx, fmt.Sprintf("target%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Follow(ctx, fan.ID, star.ID); err != nil {
			t.Fatal(err)
		}
		pairs[i] = pair{star.ID, target.ID}
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	start, err := s.LastEventID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	var prev int64
	done := make(chan error, 1)
	go func() {
		done <- s.FollowEvents(lctx, fan.ID, &start, func(e Event) error {
			if e.ID <= prev {
				t.Errorf("event %d after %d", e.ID, prev)
			}
			prev = e.ID
			got[e.Follower.Name]++
			if len(got) == n {
				cancel()
			}
			return nil
		})
	}()
	for round := 0; round < 2; round++ {
		var wg sync.WaitGroup
		for _, p := range pairs {
			wg.Go(func() {
				var err error
				if round == 0 {
					_, err = s.Follow(ctx, p.star, p.target)
				} else {
					_, err = s.Unfollow(ctx, p.star, p.target)
				}
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	<-done
	if len(got) != n {
		t.Fatalf("heard %d of %d follows", len(got), n)
	}
	for name, k := range got {
		if k != 1 {
			t.Errorf("heard %s %d times", name, k)
		}
	}
}
