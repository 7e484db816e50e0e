package db

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"follows/db/pgtest"
)

// Instances started at once on a new database all come up: one migrates
// while the others wait for it, and each migration is applied once.
func TestOpenConcurrently(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "follows.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.DSN(t, "opening PostgreSQL concurrently") }},
		// The migration lock through a transaction-mode pooler.
		{"pgbouncer", func(t *testing.T) string {
			pooled, _ := pgtest.PooledDSN(t, "opening PostgreSQL through PgBouncer concurrently")
			return pooled
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := tc.dsn(t)
			const instances = 4
			stores := make([]*Store, instances)
			errs := make([]error, instances)
			var wg sync.WaitGroup
			for i := range instances {
				wg.Go(func() { stores[i], errs[i] = Open(context.Background(), dsn) })
			}
			wg.Wait()
			for i, s := range stores {
				if s != nil {
					defer s.Close()
				}
				if errs[i] != nil {
					t.Errorf("instance %d of %d: %v", i+1, instances, errs[i])
				}
			}
			if t.Failed() {
				return
			}
			s := stores[0]
			var applied, distinct int
			if err := s.rawQueryRow(`SELECT COUNT(*), COUNT(DISTINCT version_id) FROM goose_db_version`).Scan(&applied, &distinct); err != nil {
				t.Fatal(err)
			}
			if applied != distinct {
				t.Errorf("goose_db_version holds %d rows for %d versions: a migration ran more than once", applied, distinct)
			}
			// And the stores work, each seeing the others' writes.
			u, err := stores[1].CreateUser(context.Background(), "first")
			if err != nil {
				t.Fatal(err)
			}
			if got, err := stores[3].UserByName(context.Background(), "first"); err != nil || got.ID != u.ID {
				t.Errorf("another instance reads %+v, %v", got, err)
			}
		})
	}
}
