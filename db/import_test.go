package db

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"
)

func seqOf[T any](rows ...T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// Imported follows are counted by the count rule, a deactivated end left
// out, and the export yields the rows as they went in.
func TestImportAndExportRows(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	gone, err := s.CreateUser(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SetDeactivated(ctx, gone.ID, true); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 2, 1, 0, 0, 0, 123456700, time.UTC)
	users := []UserRow{{ID: 10, Name: "alice"}, {ID: 20, Name: "bob"}}
	follows := []FollowRow{
		{Follower: 10, Followee: 20, At: at},
		{Follower: 20, Followee: 10, At: at.Add(time.Second)},
		{Follower: gone.ID, Followee: 10, At: at},
		{Follower: 10, Followee: gone.ID, At: at},
	}
	st, err := s.Import(ctx, seqOf(users...), seqOf(follows...), nil)
	if err != nil || st != (ImportStats{Users: 2, Follows: 4}) {
		t.Fatalf("import = %+v, %v", st, err)
	}
	// Alice's follows with gone are not counted; gone's own counts count
	// alice, who is active.
	if counts, want := countsOf(t, s, 10, 20, gone.ID), [][2]int{{1, 1}, {1, 1}, {1, 1}}; !slices.Equal(counts, want) {
		t.Errorf("follower, following counts of alice, bob, gone = %v, want %v", counts, want)
	}
	if drift, err := s.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
		t.Errorf("drift after import: %+v, %v", drift, err)
	}

	var exported []FollowRow
	for f, err := range s.ExportFollows(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		exported = append(exported, f)
	}
	slices.SortFunc(follows, func(a, b FollowRow) int { return int(a.Follower-b.Follower)*1000 + int(a.Followee-b.Followee) })
	if len(exported) != len(follows) {
		t.Fatalf("exported %d follows, want %d", len(exported), len(follows))
	}
	for i := range follows {
		if e, f := exported[i], follows[i]; e.Follower != f.Follower || e.Followee != f.Followee || !e.At.Equal(f.At) {
			t.Errorf("exported %+v, want %+v", e, f)
		}
	}
	var names []string
	for u, err := range s.ExportUsers(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, u.Name)
	}
	if !slices.Equal(names, []string{"gone", "alice", "bob"}) {
		t.Errorf("exported users %v", names)
	}
}

// A follow that is there already is named by the position its row came
// with, and nothing of the import stays.
func TestImportNamesTheDuplicateRow(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	users := []UserRow{{Pos: Pos{"u", 2}, ID: 1, Name: "a"}, {Pos: Pos{"u", 3}, ID: 2, Name: "b"}}
	follows := []FollowRow{{Pos: Pos{"f", 2}, Follower: 1, Followee: 2}, {Pos: Pos{"f", 3}, Follower: 2, Followee: 1}, {Pos: Pos{"f", 4}, Follower: 1, Followee: 2}}
	_, err := s.Import(ctx, seqOf(users...), seqOf(follows...), nil)
	var ie ImportErrors
	if !errors.As(err, &ie) || len(ie) != 1 || !strings.Contains(err.Error(), "f line 4: follow 1 -> 2 is there already") {
		t.Fatalf("import of a follow twice: %v", err)
	}
	if n, err := s.CountUsers(ctx); n != 0 || err != nil {
		t.Errorf("%d users after a refused import (%v), want 0", n, err)
	}
}
