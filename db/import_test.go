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

// importDialects are the dialects with a bulk import: SQLite's through
// multi-row INSERTs, PostgreSQL's through COPY.
var importDialects = []struct {
	name string
	open opener
}{{"sqlite", openTestStore}, {"postgres", openPostgres}}

// eachImportDialect runs fn as a subtest on an empty store of each of
// importDialects.
func eachImportDialect(t *testing.T, fn func(t *testing.T, s *Store)) {
	for _, d := range importDialects {
		t.Run(d.name, func(t *testing.T) { fn(t, d.open(t)) })
	}
}

// Imported follows are counted by the count rule, a deactivated end left
// out, and the export yields the rows as they went in.
func TestImportAndExportRows(t *testing.T) { eachImportDialect(t, testImportAndExportRows) }

func testImportAndExportRows(t *testing.T, s *Store) {
	ctx := context.Background()
	gone, err := s.CreateUser(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SetDeactivated(ctx, gone.ID, true); err != nil {
		t.Fatal(err)
	}
	// In microseconds, which every dialect keeps (PostgreSQL no more).
	at := time.Date(2026, 2, 1, 0, 0, 0, 123456000, time.UTC)
	users := []UserRow{{ID: 10, Name: "alice"}, {ID: 20, Name: "bob"}}
	follows := []FollowRow{
		{Follower: 10, Followee: 20, At: at},
		{Follower: 20, Followee: 10, At: at.Add(time.Second)},
		{Follower: gone.ID, Followee: 10, At: at},
		{Follower: 10, Followee: gone.ID, At: at},
	}
	st, err := s.Import(ctx, seqOf(users...), seqOf(follows...), nil)
	if err != nil || st.Users != 2 || st.Follows != 4 {
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
// with, and nothing of the import stays: not its users, and not the
// follow table's indexes and triggers set aside during the load.
func TestImportNamesTheDuplicateRow(t *testing.T) {
	eachImportDialect(t, testImportNamesTheDuplicateRow)
}

func testImportNamesTheDuplicateRow(t *testing.T, s *Store) {
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
	// The count trigger is there: follows made now are counted.
	a, _ := s.CreateUser(ctx, "a")
	b, _ := s.CreateUser(ctx, "b")
	if f, err := s.Follow(ctx, a.ID, b.ID); err != nil || f.Followee.FollowerCount != 1 {
		t.Errorf("a follow after the refused import: %+v, %v", f, err)
	}
}

// Users keep their imported ids, and a user signed up afterwards gets an
// id past all of them, and past every id given before, a deleted user's
// included: ids are never given twice.
func TestImportedIDsAreNotGivenAgain(t *testing.T) {
	eachImportDialect(t, testImportedIDsAreNotGivenAgain)
}

func testImportedIDsAreNotGivenAgain(t *testing.T, s *Store) {
	ctx := context.Background()
	var ids []int64
	for _, name := range []string{"a", "b", "c", "d"} {
		u, err := s.CreateUser(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.ID)
	}
	for _, id := range []int64{ids[1], ids[3]} {
		if _, err := s.DeleteUser(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// The highest id after this import is below the highest ever given.
	if _, err := s.Import(ctx, seqOf(UserRow{ID: ids[1], Name: "b2"}), seqOf[FollowRow](), nil); err != nil {
		t.Fatal(err)
	}
	if u, err := s.CreateUser(ctx, "e"); err != nil || u.ID != ids[3]+1 {
		t.Errorf("signed up after an import below the last id: %+v, %v; want id %d", u, err, ids[3]+1)
	}
	if _, err := s.Import(ctx, seqOf(UserRow{ID: 1000, Name: "f"}), seqOf[FollowRow](), nil); err != nil {
		t.Fatal(err)
	}
	if u, err := s.CreateUser(ctx, "g"); err != nil || u.ID != 1001 {
		t.Errorf("signed up after importing id 1000: %+v, %v; want id 1001", u, err)
	}
}
