package db

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// An import into a new SQLite file loads it without the write-ahead log
// (no -wal file while the rows go in), and leaves it as any other: in WAL
// mode, unmarked, opening cleanly, its counts those of the count rule.
func TestImportIntoNewFileSkipsTheLog(t *testing.T) {
	ctx := context.Background()
	path, s := openFile(t)
	users := []UserRow{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}, {ID: 3, Name: "c"}}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var follows []FollowRow
	for _, p := range [][2]int64{{1, 2}, {1, 3}, {2, 1}, {2, 3}, {3, 1}, {3, 2}} {
		follows = append(follows, FollowRow{Follower: p[0], Followee: p[1], At: at})
	}
	walDuringLoad := true
	progress := func(int) {
		_, err := os.Stat(path + "-wal")
		walDuringLoad = err == nil
	}
	if _, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, progress); err != nil {
		t.Fatal(err)
	}
	if walDuringLoad {
		t.Errorf("the -wal file was there while the rows went in")
	}
	var mode string
	var mark int
	if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode after import = %q, %v; want wal", mode, err)
	}
	if err := s.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&mark); err != nil || mark != 0 {
		t.Errorf("user_version after import = %d, %v; want 0", mark, err)
	}
	if counts, want := countsOf(t, s, 1, 2, 3), [][2]int{{2, 2}, {2, 2}, {2, 2}}; !equalCounts(counts, want) {
		t.Errorf("counts = %v, want %v", counts, want)
	}
	s.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("open after import: %v", err)
	}
	defer s.Close()
	if drift, err := s.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
		t.Errorf("drift after import: %+v, %v", drift, err)
	}
}

// openFile opens a store on a new SQLite file, which the test closes.
func openFile(t *testing.T) (string, *Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "follows.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return path, s
}

func equalCounts(a, b [][2]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A refused import into a new file leaves the empty database, which the
// server opens.
func TestFailedImportLeavesAFileThatOpens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path, s := openFile(t)
	users := []UserRow{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}
	follows := []FollowRow{{Follower: 1, Followee: 2}, {Follower: 1, Followee: 2}}
	_, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, nil)
	var ie ImportErrors
	if !errors.As(err, &ie) {
		t.Fatalf("import of a duplicate follow: %v", err)
	}
	s.Close()
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatalf("open after a failed import: %v", err)
	}
	defer s.Close()
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM Users`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d users after a failed import, %v", n, err)
	}
}

// A file whose import did not finish (the process died while loading:
// its mark is still set) is refused, with what to do.
func TestOpenRefusesAnUnfinishedImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path, s := openFile(t)
	s.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`PRAGMA user_version = ` + strconv.Itoa(sqliteImportMark)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err = Open(ctx, path)
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "import into this file did not finish") {
		t.Fatalf("open of a file marked as being loaded: %v", err)
	}
}

// formatSQLiteTime writes what Format writes, for any time.
func TestFormatSQLiteTime(t *testing.T) {
	times := []time.Time{
		{},
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2024, 6, 6, 12, 35, 0, 288195000, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.FixedZone("x", 5*3600+1800)),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for i := range 10000 {
		times = append(times, time.Unix(int64(i)*987654321, int64(i)*7919%1e9).In(time.Local))
	}
	for _, tm := range times {
		if got, want := formatSQLiteTime(tm), tm.UTC().Format(sqliteTime); got != want {
			t.Errorf("formatSQLiteTime(%v) = %q, want %q", tm, got, want)
		}
	}
}

// An import into a new file that another connection is reading still
// goes in, through the write-ahead log.
func TestImportIntoNewFileBesideAReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path, s := openFile(t)
	defer s.Close()
	reader, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	tx, err := reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRow(`SELECT COUNT(*) FROM Users`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	users := []UserRow{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}
	follows := []FollowRow{{Follower: 1, Followee: 2, At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if _, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, nil); err != nil {
		t.Fatalf("import beside a reader: %v", err)
	}
	tx.Rollback()
	var mark int
	if err := s.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&mark); err != nil || mark != 0 {
		t.Errorf("user_version after import = %d, %v; want 0", mark, err)
	}
	if counts, want := countsOf(t, s, 1, 2), [][2]int{{0, 1}, {1, 0}}; !equalCounts(counts, want) {
		t.Errorf("counts = %v, want %v", counts, want)
	}
}
