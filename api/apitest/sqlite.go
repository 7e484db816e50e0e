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

// CheckGraph asserts what must hold after any mix of writes: kept counts
// equal recounts, no follow row points at a missing user, and the file is
// sound.
func CheckGraph(t testing.TB, dbPath string) {
	t.Helper()
	raw := OpenRaw(t, dbPath)
	var drift int
	// Counts count the follows whose other end is an active account.
	raw.QueryRow(countDrift).Scan(&drift)
	if drift != 0 {
		t.Errorf("%d users' counts differ from a recount", drift)
	}
	rows, err := raw.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		t.Error("foreign_key_check reports an orphan follow row")
	}
	rows.Close()
	var integrity string
	raw.QueryRow(`PRAGMA integrity_check`).Scan(&integrity)
	if integrity != "ok" {
		t.Errorf("integrity_check: %s", integrity)
	}
}
