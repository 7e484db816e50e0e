package db

import (
	"context"
	"errors"
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
		"DeliveryRules":              testEventDeliveryRules,
		"ConcurrentWritersIDs":       testEventsOfConcurrentWriters,
		"NothingFromBeforeTheFollow": testNothingFromBeforeTheFollow,
		"ReplayStopsWithSubscriber":  testReplayStopsWithSubscriber,
		"ReplayBounded":              testReplayBounded,
		"ReplayLimits":               testReplayLimits,
		"ReplaysShareRecipients":     testReplaysShareRecipients,
	}
	for _, d := range []struct {
		name string
		open opener
	}{{"sqlite", openTestStore}, {"sqlserver", openSQLServer}, {"postgres", openPostgres}, {"pgbouncer", openPgBouncer}} {
		t.Run(d.name, func(t *testing.T) {
			if d.name == "sqlserver" && os.Getenv("MSSQL_DSN") == "" {
				t.Skip(sqlserverSkip)
			}
			if d.name == "postgres" && !pgtest.Available() {
				t.Skip(pgtest.SkipMessage("the PostgreSQL outbox tests"))
			}
			if d.name == "pgbouncer" && !pgtest.PgBouncerAvailable() {
				t.Skip(pgtest.PgBouncerSkipMessage("the outbox tests through PgBouncer"))
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

	// Rules apply when events are read, but a follower hears only what
	// the actor did since it began following: ann follows cat now, and
	// does not hear cat's follow of bob, made before.
	got := eventsSoFar(t, s, id["ann"], start)
	want := []string{"FOLLOWED bob->eve", "FOLLOWED bob->ann", "UNFOLLOWED bob->ann", "FOLLOWED eve->ann", "FOLLOWED cat->ann"}
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
	want = []string{"FOLLOWED bob->ann", "UNFOLLOWED bob->ann", "FOLLOWED dan->ann", "FOLLOWED cat->ann"}
	if !slices.Equal(got, want) {
		t.Errorf("after the block, ann heard %q, want %q", got, want)
	}
	// Deleting a user keeps the outbox, and withholds what involved it.
	if _, err := s.DeleteUser(ctx, id["dan"]); err != nil {
		t.Fatal(err)
	}
	got = eventsSoFar(t, s, id["ann"], start)
	want = []string{"FOLLOWED bob->ann", "UNFOLLOWED bob->ann", "FOLLOWED cat->ann"}
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

// users creates the named users and returns their ids.
func users(t *testing.T, s *Store, names ...string) map[string]int64 {
	t.Helper()
	id := map[string]int64{}
	for _, n := range names {
		u, err := s.CreateUser(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		id[n] = u.ID
	}
	return id
}

// testNothingFromBeforeTheFollow: a new follower resuming from a position
// before it followed does not hear what the actor did before, neither
// follows that stand nor follows undone since; it hears what the actor
// does after.
func testNothingFromBeforeTheFollow(t *testing.T, open opener) {
	s := open(t)
	ctx := context.Background()
	id := users(t, s, "ann", "bob", "cat", "dan", "eve")
	do := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	start, err := s.LastEventID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	do(s.Follow(ctx, id["bob"], id["cat"]))
	do(s.Follow(ctx, id["bob"], id["dan"]))
	do(s.Unfollow(ctx, id["bob"], id["dan"])) // undone before ann follows
	do(s.Follow(ctx, id["ann"], id["bob"]))
	do(s.Follow(ctx, id["bob"], id["eve"]))
	got := eventsSoFar(t, s, id["ann"], start)
	if want := []string{"FOLLOWED bob->eve"}; !slices.Equal(got, want) {
		t.Errorf("ann, following bob since, heard %q, want %q", got, want)
	}
}

// replayOutbox fills the outbox with n events that viewer-less users make
// (follows and unfollows between two of them) and returns the Id before.
func replayOutbox(t *testing.T, s *Store, n int) int64 {
	t.Helper()
	ctx := context.Background()
	id := users(t, s, "left", "right")
	start, err := s.LastEventID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 2 {
		if _, err := s.Follow(ctx, id["left"], id["right"]); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Unfollow(ctx, id["left"], id["right"]); err != nil {
			t.Fatal(err)
		}
	}
	return start
}

// testReplayStopsWithSubscriber: a subscriber that leaves in the middle
// of a replay (its context ends) stops it there: no range is read after,
// rather than the rest of the backlog read for no one.
func testReplayStopsWithSubscriber(t *testing.T, open opener) {
	s := open(t)
	start := replayOutbox(t, s, 60)
	viewer := users(t, s, "gone")["gone"]
	s.feed.step = 5 // twelve ranges and more
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ranges int
	s.feed.onRange = func(v, after, upto int64) {
		if v != viewer {
			return
		}
		if ranges++; ranges == 2 {
			cancel() // the client goes
		}
	}
	err := s.FollowEvents(ctx, viewer, &start, func(Event) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("the replay ended with %v, want context.Canceled", err)
	}
	if ranges != 2 {
		t.Errorf("the replay read %d ranges, the last %d after its subscriber left; want none after", ranges, ranges-2)
	}
}

// testReplayBounded: a resume further back than the replay window is
// refused before it reads anything; one within it replays.
func testReplayBounded(t *testing.T, open opener) {
	s := open(t)
	start := replayOutbox(t, s, 20)
	id := users(t, s, "ann", "bob")
	if _, err := s.Follow(context.Background(), id["bob"], id["ann"]); err != nil {
		t.Fatal(err)
	}
	s.feed.cfg.ReplayWindow = 10
	var read int
	s.feed.onRange = func(int64, int64, int64) { read++ }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.FollowEvents(ctx, id["ann"], &start, func(Event) error { return nil })
	if !errors.Is(err, ErrCursorTooOld) || read != 0 {
		t.Errorf("a resume 21 events back, with a window of 10: %v after %d ranges, want ErrCursorTooOld before any", err, read)
	}
	recent := start + 15
	var got []string
	err = s.FollowEvents(ctx, id["ann"], &recent, func(e Event) error {
		got = append(got, heard(e))
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || !slices.Equal(got, []string{"FOLLOWED bob->ann"}) {
		t.Errorf("a resume within the window heard %q and ended with %v", got, err)
	}
}

// testReplayLimits: a process replays at most Replays resumes at once, a
// viewer at most ReplaysPerViewer; a slot comes back when its replay ends
// or has caught up.
func testReplayLimits(t *testing.T, open opener) {
	s := open(t)
	start := replayOutbox(t, s, 4)
	id := users(t, s, "ann", "bob", "cat")
	s.feed.cfg.Replays, s.feed.cfg.ReplaysPerViewer = 2, 1
	ctx := context.Background()
	resume := func(name string) (*EventStream, error) {
		t.Helper()
		return s.OpenFollowEvents(ctx, id[name], &start)
	}
	ann, err := resume("ann")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resume("ann"); !errors.Is(err, ErrReplayLimit) {
		t.Errorf("ann's second replay at once: %v, want ErrReplayLimit", err)
	}
	if _, err := resume("bob"); err != nil {
		t.Errorf("bob's replay beside ann's: %v", err)
	}
	if _, err := resume("cat"); !errors.Is(err, ErrReplayLimit) {
		t.Errorf("a third replay in the process: %v, want ErrReplayLimit", err)
	}
	// From now is no replay: never refused.
	if _, err := s.OpenFollowEvents(ctx, id["cat"], nil); err != nil {
		t.Errorf("cat's subscription from now: %v", err)
	}
	// Ann's replay catches up: its slot is free while it stays live.
	live, stop := context.WithCancel(ctx)
	defer stop()
	caughtUp := make(chan struct{})
	var once sync.Once
	s.feed.onRange = func(v, after, upto int64) {
		if v == id["ann"] && upto >= start+4 {
			once.Do(func() { close(caughtUp) })
		}
	}
	done := make(chan error, 1)
	go func() { done <- ann.Run(live, func(Event) error { return nil }) }()
	<-caughtUp
	// The slot is given back as the range that catches up is read; the
	// hook is told just before.
	for {
		if _, err := resume("cat"); err == nil {
			break
		} else if !errors.Is(err, ErrReplayLimit) {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	<-done
}

// testReplaysShareRecipients: subscribers resuming from different places
// in the same ranges ask who hears of them once between them.
func testReplaysShareRecipients(t *testing.T, open opener) {
	s := open(t)
	start := replayOutbox(t, s, 40)
	id := users(t, s, "ann", "bob")
	s.feed.step = 10
	var reads int
	s.feed.onRead = func() { reads++ }
	replay := func(viewer, after int64) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		last := s.feed.last.Load()
		s.feed.onRange = func(_, _, upto int64) {
			if upto >= last {
				cancel()
			}
		}
		if err := s.FollowEvents(ctx, viewer, &after, func(Event) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	replay(id["ann"], start+1)
	first := reads
	replay(id["bob"], start+3)
	if reads != first {
		t.Errorf("bob's replay, two events after ann's, read the recipients of %d ranges again (ann's read %d)", reads-first, first)
	}
}
