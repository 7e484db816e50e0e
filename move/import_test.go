package move_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"follows/api/apitest"
	"follows/db"
	"follows/move"
)

// importFiles writes the two CSV files and imports them into dbPath, as
// import -users -follows does, returning what it printed and its error.
func importFiles(t *testing.T, dbPath, users, follows string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	up, fp := filepath.Join(dir, "users.csv"), filepath.Join(dir, "follows.csv")
	os.WriteFile(up, []byte(users), 0o644)
	os.WriteFile(fp, []byte(follows), 0o644)
	var out, errs bytes.Buffer
	err := move.Import(t.Context(), dbPath, move.Source{Users: up, Follows: fp}, &out, &errs)
	return out.String(), err
}

const sampleUsersCSV = "Id,Name\n10,alice\n20,bob\n30,carol\n40,dave\n"

// The sample graph, with times in the order the follows were made.
const sampleFollowsCSV = `FollowerId,FolloweeId,CreatedAt
10,20,2026-01-01 00:00:01
10,30,2026-01-01 00:00:02.5
20,10,2026-01-01 00:00:03.123456
30,40,2026-01-01 00:00:04
20,40,2026-01-01 00:00:05
`

// followsObjects counts, in each database's catalogue, what the import
// sets aside on the follow table: the keyset indexes and count triggers,
// and on PostgreSQL the foreign keys.
var followsObjects = map[apitest.Database]struct {
	query string
	want  int
}{
	apitest.SQLite: {`SELECT COUNT(*) FROM sqlite_schema WHERE tbl_name = 'Follows'
	  AND name IN ('IX_Follows_FolloweeId_CreatedAt_FollowerId', 'IX_Follows_FollowerId_CreatedAt_FolloweeId',
	               'TR_Follows_Insert_Counts', 'TR_Follows_Delete_Counts', 'TR_Follows_Update_Counts')`, 5},
	apitest.Postgres: {`SELECT (SELECT COUNT(*) FROM pg_indexes WHERE tablename = 'Follows'
	    AND indexname IN ('IX_Follows_FolloweeId_CreatedAt_FollowerId', 'IX_Follows_FollowerId_CreatedAt_FolloweeId'))
	  + (SELECT COUNT(*) FROM pg_trigger WHERE tgname = 'TR_Follows_Counts')
	  + (SELECT COUNT(*) FROM pg_constraint WHERE conrelid = '"Follows"'::regclass AND contype = 'f')`, 5},
}

func TestImport(t *testing.T) { apitest.Each(t, testImport) }

func testImport(t *testing.T, on apitest.Database) {
	dbPath := on.NewDSN(t)
	out, err := importFiles(t, dbPath, sampleUsersCSV, sampleFollowsCSV)
	if err != nil || !strings.Contains(out, "imported 4 users, 0 blocks and 5 follows") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	store, err := db.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	alice, err := store.UserByName(ctx, "alice")
	if err != nil || alice.ID != 10 || alice.FollowerCount != 1 || alice.FollowingCount != 2 {
		t.Errorf("alice = %+v, %v; want id 10, 1 follower, following 2", alice, err)
	}
	pages, err := store.FollowPages(ctx, db.Followers, []db.PageQuery{{User: 40, First: 10}}, nil)
	if err != nil || len(pages[0].Edges) != 2 || pages[0].Edges[0].User.Name != "bob" ||
		pages[0].Edges[0].At.Format("2006-01-02 15:04:05") != "2026-01-01 00:00:05" {
		t.Errorf("dave's followers = %+v, %v; want bob at 00:00:05 first", pages, err)
	}
	if drift, err := store.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
		t.Errorf("counts drift after import: %+v, %v", drift, err)
	}
	// The count triggers are back: a follow after the import is counted.
	if _, err := store.Follow(ctx, 40, 10); err != nil {
		t.Fatal(err)
	}
	if drift, err := store.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
		t.Errorf("counts drift after a follow: %+v, %v", drift, err)
	}
	var objects int
	want := followsObjects[on]
	if err := apitest.OpenDSN(t, dbPath).QueryRow(want.query).Scan(&objects); err != nil || objects != want.want {
		t.Errorf("%d of the %d indexes, triggers and keys set aside on Follows are there after import (%v)", objects, want.want, err)
	}
}

// Follows imported to and from a deactivated user leave the counts as the
// triggers would: a deactivated end is not counted.
func TestImportBesideADeactivatedUser(t *testing.T) {
	apitest.Each(t, testImportBesideADeactivatedUser)
}

func testImportBesideADeactivatedUser(t *testing.T, on apitest.Database) {
	dbPath := on.NewDSN(t)
	if _, err := importFiles(t, dbPath, sampleUsersCSV, sampleFollowsCSV); err != nil {
		t.Fatal(err)
	}
	store, err := db.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.SetDeactivated(context.Background(), 10, true); err != nil {
		t.Fatal(err)
	}
	store.Close()
	if _, err := importFiles(t, dbPath, "Id,Name\n50,erin\n", "FollowerId,FolloweeId,CreatedAt\n50,10,2026-02-01 00:00:00\n10,50,2026-02-01 00:00:00\n50,20,2026-02-01 00:00:00\n"); err != nil {
		t.Fatal(err)
	}
	apitest.CheckDSN(t, dbPath)
}

// A file with bad rows is refused whole, naming each bad row's line, and
// leaves the database as it was.
func TestImportRefusesBadRows(t *testing.T) { apitest.Each(t, testImportRefusesBadRows) }

func testImportRefusesBadRows(t *testing.T, on apitest.Database) {
	dbPath := on.NewDSN(t)
	if _, err := importFiles(t, dbPath, sampleUsersCSV, sampleFollowsCSV); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, users, follows string
		want                 []string
	}{
		{"bad user rows", "Id,Name\n50,erin\nx,frank\n60,a b\n20,bobby\n70,ERIN\n", "FollowerId,FolloweeId,CreatedAt\n",
			[]string{"users.csv line 3: Id \"x\"", "users.csv line 4: Name \"a b\"", "users.csv line 5: user id 20 exists", "users.csv line 6: name \"ERIN\" is taken"}},
		{"bad follow rows", "Id,Name\n50,erin\n", `FollowerId,FolloweeId,CreatedAt
50,10,2026-02-01 00:00:00
50,99,2026-02-01 00:00:00
50,50,2026-02-01 00:00:00
50,20,yesterday
50,20
`, []string{"follows.csv line 3: followee 99 is not a user", "follows.csv line 4: a user cannot follow itself",
			"follows.csv line 5: CreatedAt \"yesterday\"", "follows.csv line 6: 2 fields, want 3"}},
		{"a follow twice in the file", "Id,Name\n50,erin\n", "FollowerId,FolloweeId,CreatedAt\n50,10,2026-02-01 00:00:00\n50,20,2026-02-01 00:00:00\n50,10,2026-02-02 00:00:00\n",
			[]string{"follows.csv line 4: follow 50 -> 10 is there already"}},
		{"a follow the database has", "Id,Name\n", "FollowerId,FolloweeId,CreatedAt\n30,10,2026-02-01 00:00:00\n10,20,2026-02-01 00:00:00\n",
			[]string{"follows.csv line 3: follow 10 -> 20 is there already"}},
		{"an ExternalId twice", "Id,Name,SecurityStamp,DeactivatedAt,ExternalId\n50,erin,,,auth0|x\n51,frank,,,auth0|x\n", "FollowerId,FolloweeId,CreatedAt\n",
			[]string{`users.csv line 3: ExternalId "auth0|x" is taken (by `, "users.csv line 2)"}},
		{"wrong header", "Id,Name\n", "Follower,Followee,When\n", []string{"follows.csv line 1: the header must be FollowerId,FolloweeId,CreatedAt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := importFiles(t, dbPath, tc.users, tc.follows)
			if err == nil {
				t.Fatal("import succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
			store, err := db.Open(context.Background(), dbPath)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			n, _ := store.CountUsers(context.Background())
			page, _ := store.FollowPages(context.Background(), db.Following, []db.PageQuery{{User: 30, First: 10}, {User: 50, First: 10}}, nil)
			if n != 4 || len(page[0].Edges) != 1 || len(page[1].Edges) != 0 {
				t.Errorf("after a refused import: %d users, carol follows %d, erin %d; want 4, 1, 0", n, len(page[0].Edges), len(page[1].Edges))
			}
			if drift, err := store.CheckCounts(context.Background(), false); err != nil || len(drift) > 0 {
				t.Errorf("counts drift: %+v, %v", drift, err)
			}
		})
	}
}
