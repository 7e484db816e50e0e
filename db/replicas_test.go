package db

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"follows/db/pgtest"
)

// Replicas are PostgreSQL standbys: a server on another database refuses
// them as it starts, saying so, rather than ignoring the flag.
func TestReplicasNeedPostgreSQL(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "follows.db")
	s, err := Open(context.Background(), dsn, WithReplicas([]string{"postgres://u:p@127.0.0.1:5433/follows"}, time.Second))
	if err == nil {
		s.Close()
		t.Fatal("a SQLite database opened with a replica")
	}
	if !strings.Contains(err.Error(), "read replicas need PostgreSQL") || strings.Contains(err.Error(), "u:p@") {
		t.Errorf("error %q: want it to say replicas need PostgreSQL, without the replica's credentials", err)
	}
	if _, err := os.Stat(dsn); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused start made the database file: %v", err)
	}
}

// A replica's lag is the age of the newest primary position it has
// replayed; one that has replayed none of those kept is further behind
// than they go back, which is not known.
func TestReplicaLag(t *testing.T) {
	now := time.Now()
	p := walPositions{samples: []walSample{{now.Add(-3 * time.Second), 100}, {now.Add(-2 * time.Second), 200}, {now.Add(-time.Second), 300}}}
	for _, c := range []struct {
		replay int64
		lag    time.Duration
		known  bool
	}{{99, 0, false}, {100, 3 * time.Second, true}, {250, 2 * time.Second, true}, {300, time.Second, true}, {400, time.Second, true}} {
		lag, known := p.lag(c.replay, now)
		if lag != c.lag || known != c.known {
			t.Errorf("replayed %d: lag %v, known %v; want %v, %v", c.replay, lag, known, c.lag, c.known)
		}
	}
}

// replicaOf is the DSN of dsn's database on the standby that
// POSTGRES_REPLICA_DSN names, or the test is skipped.
func replicaOf(t *testing.T, dsn string) string {
	t.Helper()
	base := os.Getenv("POSTGRES_REPLICA_DSN")
	if base == "" {
		t.Skip("SKIPPED: needs POSTGRES_REPLICA_DSN, a streaming standby of POSTGRES_DSN's server applying changes 2s late (.ci/run starts one)")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := url.Parse(dsn)
	u.Path = p.Path
	return u.String()
}

// Reads a request allows go to the replica, anonymous ones at once and a
// viewer's once the replica has replayed its writes; a viewer's write is
// recorded at a position a replica can reach; and reads from many
// goroutines share the replicas' state safely (run with -race).
func TestReplicaRouting(t *testing.T) {
	replicaOf(t, "") // skips without a standby, before making a database
	dsn := pgtest.DSN(t, "the replica routing test")
	ctx := context.Background()
	s, err := Open(ctx, dsn, WithReplicas([]string{replicaOf(t, dsn)}, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	viewer, err := s.CreateUser(WritesBy(ctx, 0), "viewer")
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.CreateUser(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	replicaReads := func() uint64 { _, r := s.ReplicaReads(); return r[0].Reads }
	read := func(viewer int64) {
		t.Helper()
		if _, err := s.UsersByID(ReadFromReplica(ctx, viewer), []int64{other.ID}); err != nil {
			t.Fatal(err)
		}
	}
	// The standby has the new database, its tables and both users once
	// it has replayed 2s of changes.
	deadline := time.Now().Add(60 * time.Second)
	for before := replicaReads(); ; before = replicaReads() {
		read(0)
		if replicaReads() > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an anonymous read did not go to the replica within 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}

	if _, err := s.Follow(WritesBy(ctx, viewer.ID), viewer.ID, other.ID); err != nil {
		t.Fatal(err)
	}
	var lsn int64
	if err := s.db.QueryRow(`SELECT "Lsn" FROM "ViewerWrites" WHERE "UserId" = $1`, viewer.ID).Scan(&lsn); err != nil || lsn == 0 || lsn == unrecorded {
		t.Fatalf("the viewer's recorded position: %d, %v", lsn, err)
	}
	before := replicaReads()
	read(viewer.ID)
	if replicaReads() != before {
		t.Error("the viewer's read right after its write went to a replica applying 2s late")
	}

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 50 {
				read(int64(g%2) * viewer.ID)
			}
		})
	}
	wg.Wait()
	if replicaReads() == before {
		t.Error("no anonymous read went to the replica")
	}
}
