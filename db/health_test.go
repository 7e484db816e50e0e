package db

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A write refused for want of space is ErrStorageFull, and the store is
// not ready from then until a write succeeds again. SQLite's
// max_page_count gives the same SQLITE_FULL as a full disk.
func TestStorageFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "follows.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var pages int
	s.db.QueryRow(`PRAGMA page_count`).Scan(&pages)
	s.Close()

	s, err = Open(ctx, fmt.Sprintf("%s?_pragma=max_page_count(%d)", path, pages+2))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("ready before any write: %v", err)
	}
	var made []User
	for i := range 5000 {
		u, err := s.CreateUser(ctx, fmt.Sprintf("user%04d-%s", i, strings.Repeat("x", 20)))
		if errors.Is(err, ErrStorageFull) {
			break
		}
		if err != nil {
			t.Fatalf("sign-up %d: %v, want success or ErrStorageFull", i, err)
		}
		made = append(made, u)
	}
	if len(made) == 0 || len(made) == 5000 {
		t.Fatalf("%d sign-ups before the storage was full", len(made))
	}
	if err := s.Ready(ctx); !errors.Is(err, ErrStorageFull) {
		t.Errorf("ready while full: %v, want ErrStorageFull", err)
	}
	// Reads go on, and a write that needs no new page frees some.
	if _, err := s.UsersByID(ctx, []int64{made[0].ID}); err != nil {
		t.Errorf("a read while full: %v", err)
	}
	for _, u := range made[:len(made)/2] {
		if _, err := s.DeleteUser(ctx, u.ID); err != nil {
			t.Fatalf("delete while full: %v", err)
		}
	}
	if err := s.Ready(ctx); err != nil {
		t.Errorf("ready after a write succeeded: %v", err)
	}
	if _, err := s.CreateUser(ctx, "after"); err != nil {
		t.Errorf("a sign-up into the freed space: %v", err)
	}
}

// A file whose pages are damaged is refused at start by the integrity
// check, with an error naming the file.
func TestOpenRefusesACorruptFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "follows.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 300 {
		u, err := s.CreateUser(ctx, fmt.Sprintf("u%03d", i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.ID)
	}
	for i := 1; i < len(ids); i++ {
		if _, err := s.Follow(ctx, ids[0], ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	var root, pageSize int64
	s.db.QueryRow(`SELECT rootpage FROM sqlite_schema WHERE name = 'IX_Follows_FolloweeId_CreatedAt_FollowerId'`).Scan(&root)
	s.db.QueryRow(`PRAGMA page_size`).Scan(&pageSize)
	if _, err := s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if root < 2 {
		t.Fatalf("index root page %d", root)
	}

	// Scribble over the index's root page, as a failing disk might.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("\xff", 64)), (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	f.Close()

	_, err = Open(ctx, path)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "quick_check") {
		t.Fatalf("open of a damaged file: %v; want ErrCorrupt naming %s and quick_check", err, path)
	}
}

// The check is bounded: one that runs out of time says so, and the file
// opens.
func TestIntegrityCheckIsBounded(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "follows.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Integrity != "ok" {
		t.Errorf("Integrity = %q, want ok", s.Integrity)
	}
	s.Close()
	s, err = Open(ctx, path, WithIntegrityLimit(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.Integrity, "not fully checked") {
		t.Errorf("Integrity = %q, want not fully checked", s.Integrity)
	}
}

// An error opening a database names it, and says what is wrong.
func TestOpenErrorsNameThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "folder", "follows.db")
	_, err := Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("open in a missing folder: %v; want an error naming %s and that its folder does not exist", err, path)
	}
	_, err = Open(context.Background(), "sqlserver://sa:Secret!1@127.0.0.1:1?database=follows&dial+timeout=1")
	if err == nil || strings.Contains(err.Error(), "Secret!1") || !strings.Contains(err.Error(), "follows on 127.0.0.1:1") {
		t.Errorf("open of an unreachable SQL Server: %v; want an error naming the database and host, not the password", err)
	}
}

// A new database file, and the -wal and -shm files beside it, are its
// owner's alone.
func TestNewFilesAreOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "follows.db")
	s := func() *Store {
		s, err := Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}()
	defer s.Close()
	if _, err := s.CreateUser(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %v, want -rw-------", filepath.Base(p), mode)
		}
	}
}
