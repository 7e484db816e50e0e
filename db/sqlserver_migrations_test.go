package db

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"follows/db/adopt"
)

// The SQL Server migrations are read here as SQL Server would run them,
// statement by statement, keeping the trigger bodies and indexes in force
// after each: no SQL Server runs where these tests run, so what the
// server would refuse, or what would break later, is worked out from the
// files.

// tsqlMigration is one SQL Server migration file, split as goose splits
// it.
type tsqlMigration struct {
	version  int
	name     string
	up, down []string
}

func sqlserverMigrationFiles(t *testing.T) []tsqlMigration {
	t.Helper()
	entries, err := fs.ReadDir(migrations, "migrations/sqlserver")
	if err != nil {
		t.Fatal(err)
	}
	var out []tsqlMigration
	for _, e := range entries {
		src, err := fs.ReadFile(migrations, "migrations/sqlserver/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		_, down, ok := strings.Cut(string(src), "-- +goose Down\n")
		if !ok {
			t.Fatalf("%s has no Down section", e.Name())
		}
		out = append(out, tsqlMigration{v, e.Name(), adopt.Statements(string(src)), adopt.Statements("-- +goose Up\n" + down)})
	}
	return out
}

// tsqlCode is a statement without its comment lines, its spaces folded.
func tsqlCode(stmt string) string {
	var lines []string
	for _, l := range strings.Split(stmt, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "--") {
			lines = append(lines, l)
		}
	}
	return strings.Join(strings.Fields(strings.Join(lines, " ")), " ")
}

// tsqlSchema is what the statements run so far leave in force: each
// trigger's definition (from its name on, so CREATE and ALTER of one body
// are equal) with the table it is on, and each index's table and text.
type tsqlSchema struct {
	triggers map[string]tsqlObject
	indexes  map[string]tsqlObject
}

type tsqlObject struct{ table, text string }

var (
	tsqlTriggerRE    = regexp.MustCompile(`(?i)^(?:CREATE|ALTER) TRIGGER \[(\w+)\] ON \[(\w+)\]`)
	tsqlDropTrigRE   = regexp.MustCompile(`(?i)^DROP TRIGGER \[(\w+)\]`)
	tsqlIndexRE      = regexp.MustCompile(`(?i)^CREATE (?:UNIQUE )?INDEX \[(\w+)\] ON \[(\w+)\]`)
	tsqlDropIndexRE  = regexp.MustCompile(`(?i)^DROP INDEX (?:IF EXISTS )?\[(\w+)\]`)
	tsqlDropTableRE  = regexp.MustCompile(`(?i)^DROP TABLE \[(\w+)\]`)
	tsqlDropColumnRE = regexp.MustCompile(`(?i)^ALTER TABLE \[(\w+)\] DROP COLUMN (.*?);?$`)
)

// run applies one statement, and says what in force it would break: a
// column or table dropped while a trigger body or an index still names
// it. SQL Server lets the DROP COLUMN through when only a trigger reads
// the column (a trigger's body is resolved when it runs), and every later
// write that fires the trigger then fails with Msg 207, "Invalid column
// name".
func (s *tsqlSchema) run(stmt string) []string {
	code := tsqlCode(stmt)
	var broken []string
	mentions := func(text, name string) bool {
		return regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(name) + `\b`).MatchString(text)
	}
	switch {
	case tsqlTriggerRE.MatchString(code):
		m := tsqlTriggerRE.FindStringSubmatch(code)
		_, def, _ := strings.Cut(code, " TRIGGER ")
		s.triggers[m[1]] = tsqlObject{m[2], def}
	case tsqlDropTrigRE.MatchString(code):
		delete(s.triggers, tsqlDropTrigRE.FindStringSubmatch(code)[1])
	case tsqlIndexRE.MatchString(code):
		m := tsqlIndexRE.FindStringSubmatch(code)
		s.indexes[m[1]] = tsqlObject{m[2], code}
	case tsqlDropIndexRE.MatchString(code):
		delete(s.indexes, tsqlDropIndexRE.FindStringSubmatch(code)[1])
	case tsqlDropTableRE.MatchString(code):
		table := tsqlDropTableRE.FindStringSubmatch(code)[1]
		maps.DeleteFunc(s.triggers, func(_ string, o tsqlObject) bool { return o.table == table })
		maps.DeleteFunc(s.indexes, func(_ string, o tsqlObject) bool { return o.table == table })
		for name, o := range s.triggers {
			if mentions(o.text, table) {
				broken = append(broken, fmt.Sprintf("table %s dropped while %s reads it", table, name))
			}
		}
	case tsqlDropColumnRE.MatchString(code):
		m := tsqlDropColumnRE.FindStringSubmatch(code)
		for _, col := range strings.Split(m[2], ",") {
			col = strings.Trim(strings.TrimSpace(col), "[]")
			for name, o := range s.triggers {
				if mentions(o.text, col) {
					broken = append(broken, fmt.Sprintf("column %s.%s dropped while %s reads it", m[1], col, name))
				}
			}
			for name, o := range s.indexes {
				if o.table == m[1] && mentions(o.text, col) {
					broken = append(broken, fmt.Sprintf("column %s.%s dropped while index %s covers it", m[1], col, name))
				}
			}
		}
	}
	return broken
}

func (s *tsqlSchema) clone() tsqlSchema {
	return tsqlSchema{maps.Clone(s.triggers), maps.Clone(s.indexes)}
}

// sqlserverSchemaAfter is what the Up sections of the migrations up to
// and including version leave in force.
func sqlserverSchemaAfter(t *testing.T, files []tsqlMigration, version int) tsqlSchema {
	t.Helper()
	s := tsqlSchema{map[string]tsqlObject{}, map[string]tsqlObject{}}
	for _, m := range files {
		if m.version > version {
			break
		}
		for _, stmt := range m.up {
			if broken := s.run(stmt); broken != nil {
				t.Errorf("%s Up: %s", m.name, strings.Join(broken, "; "))
			}
		}
	}
	return s
}

// Each Down leaves the schema as the migration before it had it: every
// trigger body back (migration 3's Down dropped Users.DeactivatedAt while
// TR_Follows_Counts still read it, and every later follow failed), and no
// column or table dropped while a trigger body or an index in force still
// names it, at any point of the Down.
func TestSQLServerDownsRestoreTheTriggers(t *testing.T) {
	files := sqlserverMigrationFiles(t)
	for i := len(files) - 1; i >= 0; i-- {
		m := files[i]
		s := sqlserverSchemaAfter(t, files, m.version)
		for _, stmt := range m.down {
			if broken := s.run(stmt); broken != nil {
				t.Errorf("%s Down: %s", m.name, strings.Join(broken, "; "))
			}
		}
		before := 0
		if i > 0 {
			before = files[i-1].version
		}
		want := sqlserverSchemaAfter(t, files, before)
		for name, o := range want.triggers {
			if got, ok := s.triggers[name]; !ok || got != o {
				t.Errorf("%s Down leaves %s as\n%s\nwant migration %d's\n%s", m.name, name, got.text, before, o.text)
			}
		}
		for name := range s.triggers {
			if _, ok := want.triggers[name]; !ok {
				t.Errorf("%s Down leaves trigger %s, which migration %d did not have", m.name, name, before)
			}
		}
		if !slices.Equal(slices.Sorted(maps.Keys(s.indexes)), slices.Sorted(maps.Keys(want.indexes))) {
			t.Errorf("%s Down leaves indexes %v, want migration %d's %v", m.name,
				slices.Sorted(maps.Keys(s.indexes)), before, slices.Sorted(maps.Keys(want.indexes)))
		}
	}
}

// sqlserverTrigger is the body of a trigger as the migrations leave it.
func sqlserverTrigger(t *testing.T, name string) string {
	t.Helper()
	files := sqlserverMigrationFiles(t)
	s := sqlserverSchemaAfter(t, files, files[len(files)-1].version)
	trig, ok := s.triggers[name]
	if !ok {
		t.Fatalf("no trigger %s after the migrations", name)
	}
	return trig.text
}

// Deleting N users reports N rows affected, to a driver that adds up the
// counts the server sends (go-mssqldb's RowsAffected, SqlClient's
// ExecuteNonQuery, so EF Core's ExecuteDelete) and to @@ROWCOUNT (EF
// Core's SaveChanges with HasTrigger). The INSTEAD OF trigger must send no
// count of its own: "SET NOCOUNT ON prevents the sending of DONEINPROC
// messages to the client for each statement" (SET NOCOUNT), and the
// settings a trigger makes last until it returns ("Any SET statement can
// be specified inside a trigger. The SET option selected remains in
// effect during the execution of the trigger", CREATE TRIGGER). What is
// left is the replaced DELETE's own count, of the rows in deleted, which
// NOCOUNT never changed in @@ROWCOUNT either ("The @@ROWCOUNT function is
// updated even when SET NOCOUNT is ON"). Under NOCOUNT OFF, its last
// DELETE added a second count a user. With MSSQL_DSN, a server counts.
func TestSQLServerUsersDeleteCountsOnce(t *testing.T) {
	body := sqlserverTrigger(t, "TR_Users_Delete")
	if !strings.Contains(body, "INSTEAD OF DELETE AS BEGIN SET NOCOUNT ON;") {
		t.Errorf("TR_Users_Delete does not begin with SET NOCOUNT ON:\n%s", body)
	}
	if strings.Contains(strings.ToUpper(body), "NOCOUNT OFF") {
		t.Errorf("TR_Users_Delete turns NOCOUNT off, and its DELETE adds a second count for each user:\n%s", body)
	}
	s := openSQLServerLive(t, "to count DELETEs of three users")
	if s == nil {
		return
	}
	ctx := t.Context()
	keep, err := s.CreateUser(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	users := func(prefix string) []any {
		ids := make([]any, 3)
		for i := range ids {
			u, err := s.CreateUser(ctx, fmt.Sprintf("%s%d", prefix, i))
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = u.ID
			if _, err := s.Follow(ctx, keep.ID, u.ID); err != nil {
				t.Fatal(err)
			}
		}
		return ids
	}
	res, err := s.rawExec(`DELETE FROM Users WHERE Id IN (?, ?, ?)`, users("a")...)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 3 {
		t.Errorf("RowsAffected after one DELETE of 3 users = %d, %v; want 3", n, err)
	}
	var n int
	if err := s.rawQueryRow(`DELETE FROM Users WHERE Id IN (?, ?, ?); SELECT @@ROWCOUNT`, users("b")...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("@@ROWCOUNT after one DELETE of 3 users = %d, want 3", n)
	}
	got, err := s.UsersByID(ctx, []int64{keep.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].FollowingCount != 0 {
		t.Errorf("the follower of the deleted users follows %d, want 0", got[0].FollowingCount)
	}
}

// openSQLServerLive is openSQLServer for a test whose static part has
// run: without MSSQL_DSN it says what the live part would have shown, and
// returns nil.
func openSQLServerLive(t *testing.T, why string) *Store {
	t.Helper()
	if os.Getenv("MSSQL_DSN") == "" {
		t.Log(sqlserverSkip + " (" + why + ")")
		return nil
	}
	return openSQLServer(t)
}
