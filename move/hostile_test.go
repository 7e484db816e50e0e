package move_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"follows/api/apitest"
	"follows/db"
	"follows/move"
)

// An export folder whose manifest says LastUserId 2^63-1 is refused,
// pointing at the field, and leaves the database taking sign-ups: taken,
// it left every later sign-up refused as if the disk were full.
func TestImportRefusesALastUserIDAboveTheBound(t *testing.T) {
	apitest.Each(t, func(t *testing.T, on apitest.Database) {
		dsn := on.NewDSN(t)
		dir := writeFolder(t, map[string]string{
			"manifest.csv": "Version,LastUserId,Users,Blocks,Follows\n2,9223372036854775807,1,0,0\n",
			"users.csv":    "Id,Name,SecurityStamp,DeactivatedAt,ExternalId\n1,alice,,,\n",
			"blocks.csv":   "BlockerId,BlockedId,CreatedAt\n",
			"follows.csv":  "FollowerId,FolloweeId,CreatedAt,Muted,NotificationsEnabled\n",
		})
		var out strings.Builder
		err := move.Import(t.Context(), dsn, move.Source{Dir: dir}, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "manifest.csv line 2: LastUserId") || !strings.Contains(err.Error(), "2147483647") {
			t.Fatalf("import: %v; want the manifest's LastUserId refused, saying the bound", err)
		}
		store, err := db.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		if u, err := store.CreateUser(context.Background(), "bob"); err != nil || u.ID != 1 {
			t.Errorf("sign-up after the refused import: %+v, %v", u, err)
		}
	})
}

// Version 1 files that an editor saved with a byte order mark import as
// the same files without one.
func TestImportFilesWithAByteOrderMark(t *testing.T) {
	apitest.Each(t, func(t *testing.T, on apitest.Database) {
		dsn := on.NewDSN(t)
		const bom = "\uFEFF"
		dir := writeFolder(t, map[string]string{
			"users.csv":          bom + "Id,Name\n1,alice\n2,bob\n",
			"users.sequence.csv": bom + "LastUserId\n9\n",
			"follows.csv":        bom + "FollowerId,FolloweeId,CreatedAt\n1,2,2026-01-01 00:00:00\n",
		})
		var out strings.Builder
		src := move.Source{Users: filepath.Join(dir, "users.csv"), Follows: filepath.Join(dir, "follows.csv")}
		if err := move.Import(t.Context(), dsn, src, &out, &out); err != nil {
			t.Fatalf("import: %v\n%s", err, &out)
		}
		store, err := db.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		if u, err := store.UserByName(context.Background(), "bob"); err != nil || u.FollowerCount != 1 {
			t.Errorf("bob = %+v, %v; want one follower", u, err)
		}
		if u, err := store.CreateUser(context.Background(), "carol"); err != nil || u.ID != 10 {
			t.Errorf("sign-up after the import: %+v, %v; want id 10, above the sequence file's 9", u, err)
		}
	})
}

// A follows.csv with a 20 MB field is refused with an error of a few
// hundred bytes, not with the field printed back.
func TestImportOfAHugeFieldSaysLittle(t *testing.T) {
	dsn := apitest.SQLite.NewDSN(t)
	dir := writeFolder(t, map[string]string{
		"users.csv":   "Id,Name\n1,alice\n2,bob\n",
		"follows.csv": "FollowerId,FolloweeId,CreatedAt\n1,2," + strings.Repeat("9", 20<<20) + "\n",
	})
	var out strings.Builder
	src := move.Source{Users: filepath.Join(dir, "users.csv"), Follows: filepath.Join(dir, "follows.csv")}
	err := move.Import(t.Context(), dsn, src, &out, &out)
	if err == nil {
		t.Fatalf("import of a 20 MB time: no error\n%.300s", &out)
	}
	if len(err.Error())+out.Len() > 1024 || !strings.Contains(err.Error(), "follows.csv line 2") {
		t.Errorf("import: %d bytes of error and %d of output: %.300s; want under 1 KiB naming follows.csv line 2", len(err.Error()), out.Len(), err)
	}
}
