package db

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Suggestions keep followees' lists in memory (followLists), and every
// writer's change to a list must reach the next call: another program's
// insert, delete and move of a follow, a follow of a deactivated user
// (which changes the list but no count), and a user's delete through the
// cascade; and the names it ranks by, held too, must follow a rename and
// a deactivation. Each step asks again; the repeated call with nothing
// written must find every list held.
func TestSuggestionListsFollowEveryWriter(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		id := users(t, s, "viewer", "a", "b", "x", "y", "z", "w")
		follow := func(a, b string) {
			t.Helper()
			if _, err := s.Follow(ctx, id[a], id[b]); err != nil {
				t.Fatal(err)
			}
		}
		raw := func(q string, args ...any) {
			t.Helper()
			if _, err := s.rawExec(q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		follow("viewer", "a")
		follow("viewer", "b")
		follow("a", "x")
		follow("b", "x")
		follow("b", "y")
		follow("a", "w")
		q := SuggestionQuery{User: id["viewer"], First: 10}
		check := func(step string, want ...any) {
			t.Helper()
			q := q
			if step == "the first two" {
				q.First = 2
			}
			got, err := s.Suggestions(ctx, []SuggestionQuery{q}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(viaOf(got[0]), want) {
				t.Errorf("%s: suggestions %v, want %v", step, viaOf(got[0]), want)
			}
		}
		check("first call", "x", 2, "w", 1, "y", 1)
		hits := s.lists.hits.Load()
		ctx2, st := WithStats(ctx)
		if _, err := s.Suggestions(ctx2, []SuggestionQuery{q}, nil); err != nil {
			t.Fatal(err)
		}
		if got := s.lists.hits.Load() - hits; got != 2 || st.Queries() != 2 {
			t.Errorf("asked again with nothing written: %d lists held, %d statements; want 2 and 2", got, st.Queries())
		}

		// Another program's writes, none through the store.
		raw(`INSERT INTO Follows (FollowerId, FolloweeId, CreatedAt) VALUES (?, ?, ?)`, id["a"], id["y"], time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
		check("after another program's insert", "x", 2, "y", 2, "w", 1)
		raw(`DELETE FROM Follows WHERE FollowerId = ? AND FolloweeId = ?`, id["b"], id["x"])
		check("after another program's delete", "y", 2, "w", 1, "x", 1)
		raw(`UPDATE Follows SET FolloweeId = ? WHERE FollowerId = ? AND FolloweeId = ?`, id["z"], id["b"], id["y"])
		check("after another program moved a follow", "w", 1, "x", 1, "y", 1, "z", 1)

		// A follow of a deactivated user changes a's list and no count;
		// reactivated behind the store's back, z counts for a.
		raw(`UPDATE Users SET DeactivatedAt = ? WHERE Id = ?`, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), id["z"])
		raw(`DELETE FROM Follows WHERE FollowerId = ? AND FolloweeId = ?`, id["b"], id["z"])
		check("after z was deactivated", "w", 1, "x", 1, "y", 1)
		raw(`INSERT INTO Follows (FollowerId, FolloweeId, CreatedAt) VALUES (?, ?, ?)`, id["a"], id["z"], time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC))
		check("after a followed the deactivated z", "w", 1, "x", 1, "y", 1)
		raw(`UPDATE Users SET DeactivatedAt = NULL WHERE Id = ?`, id["z"])
		check("after z came back", "w", 1, "x", 1, "y", 1, "z", 1)

		// w's delete takes a's follow of it through the cascade.
		raw(`DELETE FROM Users WHERE Id = ?`, id["w"])
		check("after w was deleted", "x", 1, "y", 1, "z", 1)

		// The names ranked are held too: a rename by another program
		// reorders them, and a deactivated candidate drops out.
		names := s.names.hits.Load()
		check("asked again", "x", 1, "y", 1, "z", 1)
		if s.names.hits.Load() == names {
			t.Error("asked again with nothing written, no name was held")
		}
		check("the first two", "x", 1, "y", 1) // z's name held, its row not read
		raw(`UPDATE Users SET Name = ? WHERE Id = ?`, "c", id["z"])
		check("the first two", "c", 1, "x", 1)
		check("after z was renamed c", "c", 1, "x", 1, "y", 1)

		// A brief call (ids and names only) takes held names as it
		// takes held lists: one statement, no user's row; a deactivation
		// by another program moves the count, so it drops the user
		// without a row read to tell it.
		brief := func(step string, statements int64, want ...any) {
			t.Helper()
			ctx, st := WithStats(ctx)
			got, err := s.Suggestions(ctx, []SuggestionQuery{{User: id["viewer"], First: 10, Brief: true}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(viaOf(got[0]), want) {
				t.Errorf("%s: suggestions %v, want %v", step, viaOf(got[0]), want)
			}
			if statements > 0 && st.Queries() != statements {
				t.Errorf("%s: %d statements, want %d", step, st.Queries(), statements)
			}
			for _, sg := range got[0] {
				was := map[string]string{"c": "z"}[sg.User.Name] // z was renamed c
				if was == "" {
					was = sg.User.Name
				}
				if sg.User.ID != id[was] {
					t.Errorf("%s: suggested %+v, not a user with its id", step, sg.User)
				}
			}
		}
		brief("brief, every name held", 1, "c", 1, "x", 1, "y", 1)
		raw(`UPDATE Users SET DeactivatedAt = ? WHERE Id = ?`, time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC), id["x"])
		brief("brief, after x was deactivated", 0, "c", 1, "y", 1)
		check("after x was deactivated", "c", 1, "y", 1)
		if s.lists.misses.Load() == 0 {
			t.Error("no list was ever read")
		}
	})
}

// viaOf is suggestions as (name, via) for a failure's message.
func viaOf(sgs []Suggestion) []any {
	var out []any
	for _, sg := range sgs {
		out = append(out, sg.User.Name, sg.Via)
	}
	return out
}

// A coded list reads back as the same ids, sorted, whatever their sign
// and gaps.
func TestCodedListsReadBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, ids := range [][]int64{
		nil, {7}, {-5, 3}, {math.MinInt64, math.MaxInt64, 0}, {1 << 40, 2, 1 << 20},
	} {
		want := slices.Sorted(slices.Values(ids))
		if got := appendList(nil, codeList(slices.Clone(ids))); !slices.Equal(got, want) && len(want) > 0 {
			t.Errorf("%v read back as %v", ids, got)
		}
	}
	for range 200 {
		ids := make([]int64, rng.IntN(500))
		for i := range ids {
			ids[i] = rng.Int64N(1 << 31)
		}
		want := slices.Sorted(slices.Values(ids))
		if got := appendList([]int64{-1}, codeList(ids)); !slices.Equal(got[1:], want) {
			t.Fatalf("a list of %d ids did not read back", len(want))
		}
	}
}

// The lists held stay within their bound, the ones asked for again
// stay longer than the ones that are not, and a list is never replaced by
// an older version of it.
func TestFollowListsBound(t *testing.T) {
	c := newFollowLists(64 * (heldCharge + 10))
	list := codeList([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	for user := range int64(1000) {
		c.put(user, 1, list)
		if c.size > c.max {
			t.Fatalf("after %d lists: %d bytes held, bound %d", user+1, c.size, c.max)
		}
		// User 0's list is asked for all along.
		if heads := []listHead{{user: 0, version: 1}}; len(lookupLists(c, heads, nil)) != 0 {
			t.Fatalf("after %d lists, the one asked for every time was dropped", user+1)
		}
	}
	if n := c.entries.Load(); n < 32 || n > 64 {
		t.Errorf("%d lists held, want most of the 64 that fit", n)
	}
	c.put(0, 3, codeList([]int64{42}))
	c.put(0, 2, list)
	heads := []listHead{{user: 0, version: 3}}
	if lookupLists(c, heads, nil); !heads[0].ok || !slices.Equal(appendList(nil, heads[0].ids), []int64{42}) {
		t.Error("an older version of a list replaced the newer one held")
	}
}
