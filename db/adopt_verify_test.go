package db

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"follows/db/pgtest"
)

// The no-self-follow CHECK is known by what it says, however a catalogue
// prints it: SQLite's text as written, PostgreSQL's pg_get_constraintdef,
// SQL Server's sys.check_constraints.definition.
func TestIsNoSelfFollow(t *testing.T) {
	for expr, want := range map[string]bool{
		`FollowerId <> FolloweeId`:               true,
		`"FolloweeId" != "FollowerId"`:           true,
		`CHECK (("FollowerId" <> "FolloweeId"))`: true,
		`([FollowerId]<>[FolloweeId])`:           true,
		`"FollowerId" > 0`:                       false,
		`FollowerId <> FolloweeId OR 1 = 1`:      false,
		`FollowerId = FolloweeId`:                false,
	} {
		if got := isNoSelfFollow(expr); got != want {
			t.Errorf("isNoSelfFollow(%q) = %v, want %v", expr, got, want)
		}
	}
}

// SQLite keeps CHECKs only in the CREATE TABLE text: each is found with
// its name, and none inside a literal or a quoted name.
func TestSQLiteChecks(t *testing.T) {
	got := sqliteChecks(`CREATE TABLE "Follows" ("A" INTEGER CHECK (A > (0)), "check (x)" TEXT DEFAULT 'CHECK (1)',
    CONSTRAINT "CK_Follows_NoSelfFollow" CHECK ("FollowerId" <> FolloweeId), constraint [CK_b] check(length(')') = 1))`)
	want := []checkDef{{"", "A > (0)"}, {"CK_Follows_NoSelfFollow", `"FollowerId" <> FolloweeId`}, {"CK_b", "length(')') = 1"}}
	if !slices.Equal(got, want) {
		t.Errorf("sqliteChecks = %q, want %q", got, want)
	}
}

// Adoption skips only what each migration adds one at a time: every
// dialect's migrations add one column a statement.
func TestMigrationsAddOneColumnAStatement(t *testing.T) {
	for _, d := range Dialects {
		files, err := migrationFiles(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range files {
			for _, stmt := range upStatements(m.src) {
				sub := addColumnRE.FindStringSubmatch(withoutComments(stmt))
				if sub != nil && strings.Contains(stripParens(sub[3]), ",") {
					t.Errorf("%s/%s adds more than one column in one statement:\n%s", d, m.name, stmt)
				}
			}
		}
	}
}

// stripParens drops what stands in parentheses.
func stripParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, c := range s {
		switch {
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0:
			b.WriteRune(c)
		}
	}
	return b.String()
}

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
