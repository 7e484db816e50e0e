package apitest

import (
	"database/sql"
	"testing"
)

// OpenRaw opens a SQLite file directly, beside a server that has it open.
func OpenRaw(t testing.TB, path string) *sql.DB {
	t.Helper()
	d, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TableCount counts the rows of a SQLite file's table, -1 where the
// table is not there.
func TableCount(t testing.TB, path, table string) int {
	t.Helper()
	var n int
	if err := OpenRaw(t, path).QueryRow(`SELECT COUNT(*) FROM "` + table + `"`).Scan(&n); err != nil {
		return -1
	}
	return n
}

// CheckGraph asserts what must hold after any mix of writes: kept counts
// equal recounts, no follow row points at a missing user, and the file is
// sound.
func CheckGraph(t testing.TB, dbPath string) {
	t.Helper()
	raw := OpenRaw(t, dbPath)
	// A drift query that fails (no graph in the file, a column missing)
	// must fail the check: read as zero, it would pass any file.
	var drift int
	if err := raw.QueryRow(countDrift).Scan(&drift); err != nil {
		t.Fatalf("recounting the follows of %s: %v", dbPath, err)
	}
	if drift != 0 {
		t.Errorf("%d users' counts differ from a recount", drift)
	}
	rows, err := raw.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatalf("checking the foreign keys of %s: %v", dbPath, err)
	}
	for rows.Next() {
		t.Error("foreign_key_check reports an orphan follow row")
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		t.Fatalf("checking the foreign keys of %s: %v", dbPath, err)
	}
	var integrity string
	if err := raw.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil {
		t.Fatalf("checking the integrity of %s: %v", dbPath, err)
	}
	if integrity != "ok" {
		t.Errorf("integrity_check: %s", integrity)
	}
}
