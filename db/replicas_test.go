package db

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
