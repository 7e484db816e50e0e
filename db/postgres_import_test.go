package db

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// followKeyIndex is the OID of the index behind the follow table's
// primary key, and the key's definition.
func followKeyIndex(t *testing.T, s *Store) (oid int64, def string) {
	t.Helper()
	err := s.db.QueryRow(`SELECT conindid::bigint, pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = '"Follows"'::regclass AND contype = 'p'`).Scan(&oid, &def)
	if err != nil {
		t.Fatalf("read the follow table's primary key: %v", err)
	}
	return oid, def
}

// An import into PostgreSQL's empty follow table builds its primary key
// once, from all the rows, rather than keeping it through the load, which
// cost more than twice as long as building it
// (docs/decisions/postgres-queries.md); into a table with follows, the
// key stays, and finds a follow there already.
func TestPostgresImportBuildsTheFollowKeyAfterTheRows(t *testing.T) {
	s := openPostgres(t)
	ctx := context.Background()
	before, def := followKeyIndex(t, s)
	var users []UserRow
	for id := int64(1); id <= 20; id++ {
		users = append(users, UserRow{ID: id, Name: fmt.Sprintf("u%d", id)})
	}
	var follows []FollowRow
	for a := int64(1); a <= 10; a++ {
		for b := int64(1); b <= 10; b++ {
			if a != b {
				follows = append(follows, FollowRow{Pos: Pos{"f", len(follows) + 2}, Follower: a, Followee: b})
			}
		}
	}
	if _, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, nil); err != nil {
		t.Fatal(err)
	}
	after, afterDef := followKeyIndex(t, s)
	if after == before || afterDef != def {
		t.Errorf("primary key after an import into the empty table: index %d (%q), before %d (%q); want it built again, the same", after, afterDef, before, def)
	}
	more := []FollowRow{{Pos: Pos{"g", 2}, Follower: 11, Followee: 12}, {Pos: Pos{"g", 3}, Follower: 3, Followee: 4}}
	_, err := s.Import(ctx, seqOf[UserRow](), seqOf(more...), 0, nil)
	if want := "g line 3: follow 3 -> 4 is there already"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("import of a follow there already: %v, want %q", err, want)
	}
	if kept, _ := followKeyIndex(t, s); kept != after {
		t.Errorf("primary key index %d after an import into a table with follows, want %d kept", kept, after)
	}
}

// An import into PostgreSQL loses no follow that another connection
// wrote while the import began: it decides how to load the follow table
// by whether it is empty, and an empty table is truncated, so it reads
// that under the table's lock. Here the follow is written, uncommitted,
// before the import starts, and committed while the import waits.
func TestPostgresImportLosesNoFollowWrittenMeanwhile(t *testing.T) {
	s := openPostgres(t)
	ctx := context.Background()
	a, err := s.CreateUser(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateUser(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO "Follows" ("FollowerId", "FolloweeId") VALUES ($1, $2)`, a.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	var writer int
	if err := tx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&writer); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		users := []UserRow{{Pos: Pos{"u", 2}, ID: 100, Name: "c"}, {Pos: Pos{"u", 3}, ID: 101, Name: "d"}}
		follows := []FollowRow{{Pos: Pos{"f", 2}, Follower: 100, Followee: 101}}
		_, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, nil)
		done <- err
	}()
	// Commit once the import waits for the writer's transaction.
	for deadline := time.Now().Add(30 * time.Second); ; {
		var waiting bool
		err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND $1 = ANY (pg_blocking_pids(pid)))`, writer).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the import ended (%v) without waiting for the follow being written", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the import did not wait for the follow being written")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, f := range [][2]int64{{a.ID, b.ID}, {100, 101}} {
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM "Follows" WHERE "FollowerId" = $1 AND "FolloweeId" = $2`, f[0], f[1]).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("follow %d -> %d: %d rows after the import, want 1", f[0], f[1], n)
		}
	}
	if drift, err := s.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
		t.Errorf("drift after the import: %+v, %v", drift, err)
	}
}
