package db

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"follows/db/pgtest"
)

// A dry run on the server's own database, or on a new PostgreSQL one,
// runs the migrations not yet applied in a transaction it rolls back:
// it names them, and changes nothing.
func TestDryRunOfPendingMigrations(t *testing.T) {
	ctx := context.Background()
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "follows.db")
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		// As if migration 5 were new: its trigger, column and record gone.
		for _, q := range []string{`DROP TRIGGER "TR_Users_SecurityStamp"`, `ALTER TABLE Users DROP COLUMN SecurityStamp`, `DELETE FROM goose_db_version WHERE version_id = 5`} {
			if _, err := s.rawExec(q); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		before, _ := os.ReadFile(path)
		plan, err := PlanAdoption(ctx, path)
		if err != nil || plan.Shape != ShapeOurs || !slices.Equal(plan.Migrations, []string{"00005_security_stamp.sql"}) {
			t.Fatalf("dry run: %+v, %v; want migration 5 pending", plan, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Error("the dry run changed the file")
		}
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.DSN(t, "a dry run on a new PostgreSQL database")
		plan, err := PlanAdoption(ctx, dsn)
		if err != nil || plan.Shape != ShapeNew || len(plan.Migrations) < 4 {
			t.Fatalf("dry run: %+v, %v; want every migration", plan, err)
		}
		s, err := Open(ctx, dsn)
		if err != nil {
			t.Fatalf("open after the dry run (which must have left nothing behind): %v", err)
		}
		defer s.Close()
		var applied int
		if err := s.rawQueryRow(`SELECT COUNT(*) FROM goose_db_version WHERE version_id > 0`).Scan(&applied); err != nil || applied != len(plan.Migrations) {
			t.Errorf("%d migrations applied, %v; the dry run named %d", applied, err, len(plan.Migrations))
		}
	})
}
