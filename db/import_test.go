package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
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

// graphRows are a graph's rows, read whole.
type graphRows struct {
	users   []UserRow
	blocks  []BlockRow
	follows []FollowRow
	last    int64
}

// readGraph reads the store's graph as export does.
func readGraph(t *testing.T, s *Store) graphRows {
	t.Helper()
	gr, err := s.ReadGraph(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer gr.Close()
	g := gr.Graph(context.Background())
	var out graphRows
	out.last = g.LastUserID
	collect := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for u, err := range g.Users {
		collect(err)
		out.users = append(out.users, u)
	}
	for b, err := range g.Blocks {
		collect(err)
		out.blocks = append(out.blocks, b)
	}
	for f, err := range g.Follows {
		collect(err)
		out.follows = append(out.follows, f)
	}
	return out
}

// importDialects are the dialects with a bulk import: SQLite's through
// multi-row INSERTs, PostgreSQL's through COPY, SQL Server's through its
// bulk copy (when MSSQL_DSN names one; skipped otherwise).
var importDialects = []struct {
	name string
	open opener
}{{"sqlite", openTestStore}, {"postgres", openPostgres}, {"sqlserver", openSQLServer}}

// eachImportDialect runs fn as a subtest on an empty store of each of
// importDialects.
func eachImportDialect(t *testing.T, fn func(t *testing.T, s *Store)) {
	for _, d := range importDialects {
		t.Run(d.name, func(t *testing.T) {
			if d.name != "sqlserver" { // SQL Server's tests share one database
				t.Parallel()
			}
			fn(t, d.open(t))
		})
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
	st, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, nil)
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

	g := readGraph(t, s)
	exported := g.follows
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
	for _, u := range g.users {
		names = append(names, u.Name)
	}
	if !slices.Equal(names, []string{"gone", "alice", "bob"}) {
		t.Errorf("exported users %v", names)
	}
}

// A graph moves whole: a deactivated account stays deactivated (and out of
// lists and counts), a block stays (the blocked user still cannot follow),
// follows keep their settings and times, accounts their stamps and their
// provider's subjects, and the next id stays past the highest ever given;
// read back, it is the graph that went in.
func TestImportRestoresTheWholeGraph(t *testing.T) {
	eachImportDialect(t, testImportRestoresTheWholeGraph)
}

func testImportRestoresTheWholeGraph(t *testing.T, s *Store) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
	in := graphRows{
		users: []UserRow{
			{ID: 3, Name: "ann", SecurityStamp: strings.Repeat("a", 32), ExternalID: "auth0|ann"},
			{ID: 5, Name: "ben", SecurityStamp: strings.Repeat("b", 32), DeactivatedAt: at.Add(time.Hour)},
			// Subjects differing only in case are two subjects.
			{ID: 7, Name: "cat", SecurityStamp: strings.Repeat("c", 32), ExternalID: "AUTH0|ANN"},
			{ID: 9, Name: "dan", SecurityStamp: strings.Repeat("d", 32)},
		},
		blocks: []BlockRow{{Blocker: 3, Blocked: 9, At: at.Add(2 * time.Hour)}},
		follows: []FollowRow{
			{Follower: 3, Followee: 5, At: at},
			{Follower: 3, Followee: 7, At: at.Add(time.Second), Muted: true},
			{Follower: 7, Followee: 3, At: at.Add(2 * time.Second), NotificationsOff: true},
			{Follower: 9, Followee: 7, At: at.Add(3 * time.Second), Muted: true, NotificationsOff: true},
		},
		last: 12,
	}
	st, err := s.ImportGraph(ctx, Graph{Users: seqOf(in.users...), Blocks: seqOf(in.blocks...), Follows: seqOf(in.follows...), LastUserID: in.last}, nil)
	if err != nil || st.Users != 4 || st.Blocks != 1 || st.Follows != 4 {
		t.Fatalf("import = %+v, %v", st, err)
	}
	got := readGraph(t, s)
	if !slices.EqualFunc(got.users, in.users, func(a, b UserRow) bool {
		return a.ID == b.ID && a.Name == b.Name && a.SecurityStamp == b.SecurityStamp && a.DeactivatedAt.Equal(b.DeactivatedAt) && a.ExternalID == b.ExternalID
	}) {
		t.Errorf("users read back %+v, want %+v", got.users, in.users)
	}
	if !slices.EqualFunc(got.blocks, in.blocks, func(a, b BlockRow) bool {
		return a.Blocker == b.Blocker && a.Blocked == b.Blocked && a.At.Equal(b.At)
	}) {
		t.Errorf("blocks read back %+v, want %+v", got.blocks, in.blocks)
	}
	if !slices.EqualFunc(got.follows, in.follows, func(a, b FollowRow) bool {
		return a.Follower == b.Follower && a.Followee == b.Followee && a.At.Equal(b.At) && a.Muted == b.Muted && a.NotificationsOff == b.NotificationsOff
	}) {
		t.Errorf("follows read back %+v, want %+v", got.follows, in.follows)
	}
	if got.last != in.last {
		t.Errorf("LastUserID read back %d, want %d", got.last, in.last)
	}
	// The provider's tokens find the same accounts.
	for subject, id := range map[string]int64{"auth0|ann": 3, "AUTH0|ANN": 7} {
		if u, err := s.UserByExternalID(ctx, subject); err != nil || u.ID != id {
			t.Errorf("the account of %q after the move = %+v, %v; want id %d", subject, u, err, id)
		}
	}

	// The deactivated account is hidden: not counted, not listed.
	if counts := countsOf(t, s, 3); counts[0] != [2]int{1, 1} {
		t.Errorf("ann's follower, following counts = %v, want [1 1] (ben, deactivated, left out)", counts[0])
	}
	pages, err := s.FollowPages(ctx, Following, []PageQuery{{User: 3, First: 10}}, nil)
	if err != nil || len(pages[0].Edges) != 1 || pages[0].Edges[0].User.ID != 7 {
		t.Errorf("whom ann follows = %+v, %v; want cat only", pages, err)
	}
	// The block holds: dan cannot follow ann.
	if _, err := s.Follow(ctx, 9, 3); !errors.Is(err, ErrBlocked) {
		t.Errorf("the blocked user follows the blocker after the move: %v, want ErrBlocked", err)
	}
	if u, err := s.CreateUser(ctx, "eve"); err != nil || u.ID != in.last+1 {
		t.Errorf("the next sign-up = %+v, %v; want id %d", u, err, in.last+1)
	}
	if drift, err := s.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
		t.Errorf("drift after import: %+v, %v", drift, err)
	}
}

// A graph a server could not have made is refused with its rows named: a
// block of a missing user, a self-block, and a block between users with a
// follow between them (a block removes their follows).
func TestImportRefusesBadBlocks(t *testing.T) { eachImportDialect(t, testImportRefusesBadBlocks) }

func testImportRefusesBadBlocks(t *testing.T, s *Store) {
	ctx := context.Background()
	users := []UserRow{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}
	for _, tc := range []struct {
		name    string
		blocks  []BlockRow
		follows []FollowRow
		want    string
	}{
		{"missing user", []BlockRow{{Pos: Pos{"b", 2}, Blocker: 1, Blocked: 4}}, nil, "b line 2: blocked user 4 is not a user"},
		{"self-block", []BlockRow{{Pos: Pos{"b", 2}, Blocker: 2, Blocked: 2}}, nil, "b line 2: a user cannot block itself"},
		{"a follow across it", []BlockRow{{Pos: Pos{"b", 2}, Blocker: 1, Blocked: 2}}, []FollowRow{{Follower: 2, Followee: 1}},
			"b line 2: block 1 -> 2 stands between users with a follow between them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.ImportGraph(ctx, Graph{Users: seqOf(users...), Blocks: seqOf(tc.blocks...), Follows: seqOf(tc.follows...)}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("import = %v, want %q", err, tc.want)
			}
			if n, _ := s.CountUsers(ctx); n != 0 {
				t.Errorf("%d users after a refused import", n)
			}
		})
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
	_, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, nil)
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

// numberedUsers are users 1 to n, named u1 to un, from the lines of a
// file "u" after its header.
func numberedUsers(n int) []UserRow {
	users := make([]UserRow, n)
	for i := range users {
		users[i] = UserRow{Pos: Pos{"u", i + 2}, ID: int64(i + 1), Name: fmt.Sprintf("u%d", i+1)}
	}
	return users
}

// A follow there already is named by its row in a later batch too, where
// COPY writes a batch while the next is read (see copySink), and nothing
// of the import stays.
func TestImportNamesADuplicateInALaterBatch(t *testing.T) {
	eachImportDialect(t, testImportNamesADuplicateInALaterBatch)
}

func testImportNamesADuplicateInALaterBatch(t *testing.T, s *Store) {
	ctx := context.Background()
	const n = 400
	users := numberedUsers(n)
	var follows []FollowRow
	for a := int64(1); a <= n && len(follows) < copyBatch+10_000; a++ {
		for b := int64(1); b <= n; b++ {
			if a != b {
				follows = append(follows, FollowRow{Pos: Pos{"f", len(follows) + 2}, Follower: a, Followee: b})
			}
		}
	}
	line := len(follows) + 2
	follows = append(follows, FollowRow{Pos: Pos{"f", line}, Follower: 1, Followee: 2})
	_, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, nil)
	want := fmt.Sprintf("f line %d: follow 1 -> 2 is there already", line)
	var ie ImportErrors
	if !errors.As(err, &ie) || len(ie) != 1 || !strings.Contains(err.Error(), want) {
		t.Fatalf("import of a follow twice, %d rows apart: %v, want %q", len(follows)-1, err, want)
	}
	if n, err := s.CountUsers(ctx); n != 0 || err != nil {
		t.Errorf("%d users after a refused import (%v), want 0", n, err)
	}
}

// A follow that comes twice within its follower's follows is named by
// its row, where the follows come grouped by follower (as an export writes
// them) and PostgreSQL loads them without the primary key (see
// followGroups), after a follower with more followees than the check
// keeps between followers too; nothing of the import stays.
func TestImportNamesAFollowTwiceInItsFollowersRows(t *testing.T) {
	eachImportDialect(t, testImportNamesAFollowTwiceInItsFollowersRows)
}

func testImportNamesAFollowTwiceInItsFollowersRows(t *testing.T, s *Store) {
	ctx := context.Background()
	const n = 1200
	users := numberedUsers(n)
	var follows []FollowRow
	add := func(a, b int64) {
		follows = append(follows, FollowRow{Pos: Pos{"f", len(follows) + 2}, Follower: a, Followee: b})
	}
	for b := int64(2); b <= n; b++ {
		add(1, b)
	}
	add(2, 1)
	add(2, 3)
	add(3, 4)
	add(3, 5)
	add(3, 4)
	line := len(follows) + 1
	add(4, 1)
	_, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, nil)
	want := fmt.Sprintf("f line %d: follow 3 -> 4 is there already", line)
	var ie ImportErrors
	if !errors.As(err, &ie) || len(ie) != 1 || !strings.Contains(err.Error(), want) {
		t.Fatalf("import of a follow twice among its follower's: %v, want %q", err, want)
	}
	if n, err := s.CountUsers(ctx); n != 0 || err != nil {
		t.Errorf("%d users after a refused import (%v), want 0", n, err)
	}
	// Without the follow twice, the same rows go in, with their key.
	follows = slices.Delete(follows, line-2, line-1)
	if _, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, nil); err != nil {
		t.Fatal(err)
	}
	err = s.inTx(ctx, func(r runner) error {
		_, err := r.exec(ctx, `INSERT INTO Follows (FollowerId, FolloweeId) VALUES (?, ?)`, 3, 4)
		return err
	})
	if !errors.Is(s.d.classify(err), errDuplicate) {
		t.Errorf("a second row 3 -> 4 after the import: %v, want the primary key's refusal", err)
	}
	if got := countsOf(t, s, 1, 3, 4); !slices.Equal(got, [][2]int{{2, n - 1}, {2, 2}, {2, 1}}) {
		t.Errorf("counts of users 1, 3, 4 = %v", got)
	}
}

// An ExternalId given twice is refused, naming both rows, or the row and
// the account that had it before the import; nothing of the import stays.
func TestImportRefusesADuplicateExternalID(t *testing.T) {
	eachImportDialect(t, testImportRefusesADuplicateExternalID)
}

func testImportRefusesADuplicateExternalID(t *testing.T, s *Store) {
	ctx := context.Background()
	users := []UserRow{
		{Pos: Pos{"u", 2}, ID: 1, Name: "a", ExternalID: "sub"},
		{Pos: Pos{"u", 3}, ID: 2, Name: "b"},
		{Pos: Pos{"u", 4}, ID: 3, Name: "c"},
		{Pos: Pos{"u", 5}, ID: 4, Name: "d", ExternalID: "sub"},
	}
	_, err := s.Import(ctx, seqOf(users...), seqOf[FollowRow](), 0, nil)
	var ie ImportErrors
	if !errors.As(err, &ie) || len(ie) != 1 || ie[0].Error() != `u line 5: ExternalId "sub" is taken (by u line 2)` {
		t.Errorf("import of an ExternalId twice: %v", err)
	}
	if n, err := s.CountUsers(ctx); n != 0 || err != nil {
		t.Errorf("%d users after a refused import (%v), want 0", n, err)
	}

	had, err := s.ProvisionUser(ctx, "sub", "had")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Import(ctx, seqOf(UserRow{Pos: Pos{"u", 2}, ID: 100, Name: "a", ExternalID: "sub"}), seqOf[FollowRow](), 0, nil)
	if want := fmt.Sprintf(`u line 2: ExternalId "sub" is taken (by user %d, there before the import)`, had.ID); !errors.As(err, &ie) || len(ie) != 1 || ie[0].Error() != want {
		t.Errorf("import of an ExternalId an account has: %v; want %s", err, want)
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
	if _, err := s.Import(ctx, seqOf(UserRow{ID: ids[1], Name: "b2"}), seqOf[FollowRow](), 0, nil); err != nil {
		t.Fatal(err)
	}
	if u, err := s.CreateUser(ctx, "e"); err != nil || u.ID != ids[3]+1 {
		t.Errorf("signed up after an import below the last id: %+v, %v; want id %d", u, err, ids[3]+1)
	}
	if _, err := s.Import(ctx, seqOf(UserRow{ID: 1000, Name: "f"}), seqOf[FollowRow](), 0, nil); err != nil {
		t.Fatal(err)
	}
	if u, err := s.CreateUser(ctx, "g"); err != nil || u.ID != 1001 {
		t.Errorf("signed up after importing id 1000: %+v, %v; want id 1001", u, err)
	}
}

// No id is given twice, across export and import: the highest id ever
// given (LastUserID) travels with the graph, and an import keeps new ids
// above it even when the user who had it is gone. Stamps travel too; a
// user imported without one gets a new one.
func TestImportKeepsIDsAndStamps(t *testing.T) {
	t.Parallel()
	src := openTestStore(t)
	ctx := context.Background()
	var last User
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		u, err := src.CreateUser(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		last = u
	}
	if _, err := src.DeleteUser(ctx, last.ID); err != nil {
		t.Fatal(err)
	}
	mark, err := src.LastUserID(ctx)
	if err != nil || mark != last.ID {
		t.Fatalf("LastUserID = %d, %v; want %d, the deleted user's", mark, err, last.ID)
	}
	users := readGraph(t, src).users
	for _, u := range users {
		if !ValidStamp(u.SecurityStamp) {
			t.Errorf("exported %+v without a stamp", u)
		}
	}

	for _, tc := range []struct {
		name   string
		mark   int64
		wantID int64
	}{
		{"with the mark", mark, last.ID + 1},
		// Without it the highest imported id is the mark, as SQLite keeps it.
		{"without the mark", 0, last.ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := openTestStore(t)
			if _, err := dst.Import(ctx, seqOf(users...), seqOf[FollowRow](), tc.mark, nil); err != nil {
				t.Fatal(err)
			}
			got, err := dst.UsersByID(ctx, []int64{users[0].ID})
			if err != nil || got[0] == nil || got[0].SecurityStamp != users[0].SecurityStamp {
				t.Errorf("imported %+v, %v; want the stamp %q", got[0], err, users[0].SecurityStamp)
			}
			next, err := dst.CreateUser(ctx, "newcomer")
			if err != nil || next.ID != tc.wantID {
				t.Errorf("the next sign-up got id %d (%v), want %d", next.ID, err, tc.wantID)
			}
			if again, _ := dst.LastUserID(ctx); again != next.ID {
				t.Errorf("LastUserID after a sign-up = %d, want %d", again, next.ID)
			}
		})
	}

	// An import never lowers the mark.
	dst := openTestStore(t)
	for range 3 {
		if _, err := dst.CreateUser(ctx, "x"+newStamp()[:8]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dst.Import(ctx, seqOf(UserRow{ID: 100, Name: "hundred"}), seqOf[FollowRow](), 1, nil); err != nil {
		t.Fatal(err)
	}
	if m, _ := dst.LastUserID(ctx); m != 100 {
		t.Errorf("LastUserID after importing id 100 with a lower mark = %d, want 100", m)
	}
	got, _ := dst.UsersByID(ctx, []int64{100})
	if got[0] == nil || !ValidStamp(got[0].SecurityStamp) {
		t.Errorf("a user imported without a stamp: %+v, want a new one", got[0])
	}
}

// A database at a migration before Users.ExternalId (00007) exports as it
// is, its users without one.
func TestExportBeforeExternalIDs(t *testing.T) {
	t.Parallel()
	s := openTestStore(t)
	ctx := context.Background()
	if _, err := s.CreateUser(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	p := gooseProvider(t, s)
	if _, err := p.DownTo(ctx, 6); err != nil {
		t.Fatal(err)
	}
	if users := readGraph(t, s).users; len(users) != 1 || users[0].Name != "old" || users[0].ExternalID != "" {
		t.Errorf("exported %+v; want old, without an ExternalId", users)
	}
}

// Every account gets a random stamp, whoever inserts it: the server, or
// another program that knows nothing of the column (the trigger's part).
func TestSecurityStamps(t *testing.T) {
	t.Parallel()
	s := openTestStore(t)
	ctx := context.Background()
	a, err := s.CreateUser(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO Users (Name) VALUES ('b'), ('c')`); err != nil {
		t.Fatal(err)
	}
	b, err := s.UserByName(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.UserByName(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	found, err := s.UsersByID(ctx, []int64{a.ID})
	if err != nil || found[0].SecurityStamp != a.SecurityStamp {
		t.Errorf("read back %+v, %v; want the stamp CreateUser gave, %q", found[0], err, a.SecurityStamp)
	}
	stamps := map[string]bool{a.SecurityStamp: true, b.SecurityStamp: true, c.SecurityStamp: true}
	for st := range stamps {
		if len(st) != 32 || !ValidStamp(st) {
			t.Errorf("stamp %q is not 32 hex digits", st)
		}
	}
	if len(stamps) != 3 {
		t.Errorf("stamps %q, %q, %q are not all different", a.SecurityStamp, b.SecurityStamp, c.SecurityStamp)
	}
}

// Every dialect the server runs on has a bulk import and an export (the
// SQL Server one runs live only with MSSQL_DSN; this checks it is there,
// where it used to refuse and send the graph through SQLite).
func TestEveryDialectMovesGraphs(t *testing.T) {
	for _, dsn := range []string{"x.db", "postgres://h/db", "sqlserver://h?database=d"} {
		d, _, err := dialectFor(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := d.(bulkLoader); !ok {
			t.Errorf("%s: no bulk import", d.name())
		}
		if a, ok := d.(adopter); !ok || a.adoption() == nil {
			t.Errorf("%s: no export", d.name())
		}
	}
	if d, _, _ := dialectFor("sqlserver://h"); !dialectCopies(d, "Follows") || dialectCopies(d, "Users") {
		t.Error("sqlserver: follows do not go in through the bulk copy, or users not by INSERT (the bulk copy would renumber them)")
	}
}

// dialectCopies says whether d loads table's rows with its bulk copy.
func dialectCopies(d dialect, table string) bool {
	c, ok := d.(bulkCopier)
	return ok && c.copies(table)
}

// gooseProvider is goose's provider for s's migrations, as the store runs
// them, for tests that migrate down or read the versions applied.
func gooseProvider(t *testing.T, s *Store) *goose.Provider {
	t.Helper()
	fsys, err := fs.Sub(migrations, "migrations/"+s.d.name())
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(s.d.gooseDialect(), s.db, fsys)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// An import into PostgreSQL writes each new user's row once, its counts
// and following version in it: setting them afterwards left a dead
// version of every row, Users twice its size, until a VACUUM FULL. Every
// page of the table then holds a row that is there. The counts and
// versions are those the UPDATE set: the count rule's, and one for a user
// at either end of an imported follow.
func TestImportWritesEachUserOnce(t *testing.T) {
	s := openPostgres(t)
	ctx := context.Background()
	var users []UserRow
	var follows []FollowRow
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	const n = 3000
	for id := int64(1); id <= n; id++ {
		u := UserRow{ID: id, Name: fmt.Sprintf("user%05d", id)}
		if id == 3 {
			u.DeactivatedAt = at
		}
		users = append(users, u)
		if id > 1 && id < n { // the last follows no one, and no one follows it
			follows = append(follows, FollowRow{Follower: id, Followee: 1, At: at}, FollowRow{Follower: 1, Followee: id, At: at})
		}
	}
	if _, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, nil); err != nil {
		t.Fatal(err)
	}
	var pages, live int
	err := s.db.QueryRowContext(ctx, `SELECT pg_relation_size('"Users"') / current_setting('block_size')::integer,
  (SELECT count(DISTINCT (ctid::text::point)[0]) FROM "Users")`).Scan(&pages, &live)
	if err != nil {
		t.Fatal(err)
	}
	if pages != live {
		t.Errorf("Users has %d pages, %d of them with a row that is there: the import wrote rows twice", pages, live)
	}
	// User 1 follows and is followed by all but itself, the last and the
	// deactivated 3; 3 counts user 1 (active) both ways.
	if counts, want := countsOf(t, s, 1, 2, 3, n), [][2]int{{n - 3, n - 3}, {1, 1}, {1, 1}, {0, 0}}; !slices.Equal(counts, want) {
		t.Errorf("follower, following counts of users 1, 2, 3, %d = %v, want %v", n, counts, want)
	}
	var versions []int64
	rs, err := s.db.QueryContext(ctx, `SELECT "FollowingVersion" FROM "Users" WHERE "Id" = ANY($1) ORDER BY "Id"`, []int64{1, 2, 3, n})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var v int64
		if err := rs.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []int64{1, 1, 1, 0}; !slices.Equal(versions, want) {
		t.Errorf("following versions of users 1, 2, 3, %d = %v, want %v", n, versions, want)
	}
	if drift, err := s.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
		t.Errorf("drift after import: %+v, %v", drift, err)
	}
}

// userSet answers as the map it is made from, whether it keeps a bitmap
// (ids dense) or the map (ids far apart, or one below zero).
func TestUserSet(t *testing.T) {
	for _, ids := range []map[int64]bool{
		{},
		{1: true, 2: true, 63: true, 64: true, 65: true, 100_000: true},
		{1: true, 1 << 40: true},
		{-3: true, 5: true},
	} {
		s := newUserSet(ids)
		for _, id := range []int64{-3, -1, 0, 1, 2, 3, 62, 63, 64, 65, 66, 127, 128, 99_999, 100_000, 100_001, 1 << 40, 1<<40 + 1} {
			if s.has(id) != ids[id] {
				t.Errorf("users %v: has(%d) = %v", slices.Sorted(maps.Keys(ids)), id, s.has(id))
			}
		}
	}
}
