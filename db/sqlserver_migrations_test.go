package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	mssql "github.com/microsoft/go-mssqldb"

	"follows/db/adopt"
	"follows/db/pgtest"
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

// sqlserverLockTimeout is a connection of its own that waits at most a
// second for a lock: a statement that would queue behind another
// transaction's lock fails at once with Msg 1222 ("Lock request time out
// period exceeded") instead.
func sqlserverLockTimeout(t *testing.T, s *Store) *sql.Conn {
	t.Helper()
	conn, err := s.db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(t.Context(), `SET LOCK_TIMEOUT 1000`); err != nil {
		t.Fatal(err)
	}
	return conn
}

// The counts change only when a follow comes, goes or changes an end, as
// SQLite's and PostgreSQL's UPDATE OF FollowerId, FolloweeId triggers
// fire. T-SQL has none: the trigger returns before touching Users for an
// UPDATE (rows in both inserted and deleted) of neither column. UPDATE()
// is asked of nothing else: it is TRUE for every column of an INSERT
// ("IF UPDATE returns the TRUE value in INSERT actions", UPDATE()), and
// its documentation says nothing of a DELETE. With MSSQL_DSN: muting a
// follow while another transaction holds both users' rows exclusively
// does not wait, and the counts stay exact through a follow, a mute and
// an unfollow.
func TestSQLServerCountTriggerSkipsSettingChanges(t *testing.T) {
	body := sqlserverTrigger(t, "TR_Follows_Counts")
	guard := "AS BEGIN SET NOCOUNT ON; IF EXISTS (SELECT 1 FROM inserted) AND EXISTS (SELECT 1 FROM deleted) AND NOT (UPDATE([FollowerId]) OR UPDATE([FolloweeId])) RETURN; UPDATE u SET [FollowerCount]"
	if !strings.Contains(body, guard) {
		t.Errorf("TR_Follows_Counts does not return, before its first UPDATE of Users, for an UPDATE of neither end:\n%s", body)
	}
	s := openSQLServerLive(t, "to mute a follow while both users are locked")
	if s == nil {
		return
	}
	ctx := t.Context()
	a, _ := s.CreateUser(ctx, "muter")
	b, _ := s.CreateUser(ctx, "muted")
	if _, err := s.Follow(ctx, a.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	holder, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, `SELECT Id FROM Users WITH (XLOCK, ROWLOCK, HOLDLOCK) WHERE Id IN (@p1, @p2)`, a.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	conn := sqlserverLockTimeout(t, s)
	if _, err := conn.ExecContext(ctx, `UPDATE Follows SET Muted = 1, NotificationsEnabled = 0 WHERE FollowerId = @p1 AND FolloweeId = @p2`, a.ID, b.ID); err != nil {
		t.Errorf("muting a follow while another transaction holds both users: %v; want no wait for Users", err)
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	counts := func(when string, following, followers int) {
		t.Helper()
		got, err := s.UsersByID(ctx, []int64{a.ID, b.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got[0].FollowingCount != following || got[1].FollowerCount != followers {
			t.Errorf("%s: following %d, followers %d; want %d, %d", when, got[0].FollowingCount, got[1].FollowerCount, following, followers)
		}
	}
	counts("after the mute", 1, 1)
	if _, err := s.rawExec(`DELETE FROM Follows WHERE FollowerId = ? AND FolloweeId = ?`, a.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	counts("after the unfollow", 0, 0)
}

// Deactivating or deleting an account locks the row of everyone around it
// and updates each: past 5,000 locks in one statement SQL Server would
// escalate to a lock on all of Users ("Lock escalation is triggered when
// lock escalation isn't disabled on the table by using the ALTER TABLE
// SET LOCK_ESCALATION option, and when ... a single Transact-SQL statement
// acquires at least 5,000 locks on a single nonpartitioned table or
// index", Transaction locking and row versioning guide), and every
// sign-up would wait for the commit. With MSSQL_DSN: deactivating an
// account with 6,000 followers holds row locks only, and a sign-up meanwhile
// does not wait.
func TestSQLServerUsersKeepRowLocks(t *testing.T) {
	files := sqlserverMigrationFiles(t)
	var all []string
	for _, m := range files {
		for _, stmt := range m.up {
			all = append(all, tsqlCode(stmt))
		}
	}
	if !slices.Contains(all, "ALTER TABLE [Users] SET (LOCK_ESCALATION = DISABLE);") {
		t.Error("no migration disables lock escalation on Users")
	}
	s := openSQLServerLive(t, "to deactivate an account with 6,000 followers during a sign-up")
	if s == nil {
		return
	}
	ctx := t.Context()
	// The followers are a small part of Users, as on a real graph, so
	// that the locking read seeks their rows: a scan under HOLDLOCK would
	// hold a range lock on every key it passes, the last one too, and the
	// sign-up's new key would wait for that, escalation or not.
	users := func(prefix string, n int) {
		t.Helper()
		if _, err := s.rawExec(`INSERT INTO Users (Name) SELECT CONCAT(?, n) FROM (
    SELECT TOP (?) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS n FROM sys.all_objects AS a CROSS JOIN sys.all_objects AS b) AS t`, prefix, n); err != nil {
			t.Fatal(err)
		}
	}
	users("crowd", 200000)
	star, err := s.CreateUser(ctx, "star")
	if err != nil {
		t.Fatal(err)
	}
	users("fan", 6000)
	if _, err := s.rawExec(`INSERT INTO Follows (FollowerId, FolloweeId) SELECT Id, ? FROM Users WHERE Name LIKE N'fan%'`, star.ID); err != nil {
		t.Fatal(err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	// What SetDeactivated runs, left uncommitted.
	steps := []struct {
		q    string
		args []any
	}{
		{s.q.lockAroundUser, []any{star.ID, star.ID, star.ID}},
		{deactivateUser, []any{s.d.timeArg(nowUTC()), star.ID}},
		{recountAround, []any{star.ID, star.ID, star.ID}},
	}
	for _, st := range steps {
		if _, err := tx.ExecContext(ctx, s.d.rebind(st.q), runner{s: s}.args(st.args)...); err != nil {
			t.Fatal(err)
		}
	}
	var keys, tableLocks int
	if err := tx.QueryRowContext(ctx, `SELECT
    COUNT(CASE WHEN l.resource_type = 'KEY' THEN 1 END),
    COUNT(CASE WHEN l.resource_type = 'OBJECT' AND l.resource_associated_entity_id = OBJECT_ID(N'Users')
               AND l.request_mode NOT IN ('IS', 'IU', 'IX', 'Sch-S') THEN 1 END)
FROM sys.dm_tran_locks AS l WHERE l.request_session_id = @@SPID AND l.resource_database_id = DB_ID()`).Scan(&keys, &tableLocks); err != nil {
		t.Fatal(err)
	}
	if keys < 6000 {
		t.Errorf("the deactivation holds %d key locks; want one for each of the 6,000 followers at least", keys)
	}
	if tableLocks != 0 {
		t.Errorf("the deactivation holds %d locks on the whole of Users; want row locks only", tableLocks)
	}
	conn := sqlserverLockTimeout(t, s)
	if _, err := conn.ExecContext(ctx, `INSERT INTO Users (Name) VALUES (N'newcomer')`); err != nil {
		t.Errorf("a sign-up during the deactivation: %v; want no wait", err)
	}
}

// Names compare case-insensitively whatever the database's default
// collation, as on SQLite (NOCASE) and PostgreSQL (lower()): migration 11
// refuses names that would collide before it changes anything, then
// drops what a collation change needs gone ("You cannot change the
// collation of a column that is currently referenced by ... An index ...
// Distribution statistics, either generated automatically or by the
// CREATE STATISTICS statement", Set or Change the Column Collation),
// alters the column and makes the index again. Adoption replays the
// migration on an EF Core database: no statement of it is one adoption
// would skip as already there (an ALTER TABLE ... ADD, a CREATE INDEX),
// and the schema script prints it. With MSSQL_DSN: "Alice" takes "alice",
// and the migration's check refuses a table holding both.
func TestSQLServerNameCollation(t *testing.T) {
	files := sqlserverMigrationFiles(t)
	i := slices.IndexFunc(files, func(m tsqlMigration) bool { return m.version == 11 })
	if i < 0 || len(files[i].up) == 0 {
		t.Fatal("no SQL Server migration 00011 with an Up section")
	}
	m := files[i]
	first := tsqlCode(m.up[0])
	order := []string{
		"collation_name <> N'Latin1_General_100_CI_AS'",
		"THROW 50000, @message, 1;",
		"DROP STATISTICS [Users].",
		"DROP INDEX IF EXISTS [IX_Users_Name] ON [Users];",
		"ALTER TABLE [Users] ALTER COLUMN [Name] nvarchar(450) COLLATE Latin1_General_100_CI_AS NOT NULL;",
		"CREATE UNIQUE INDEX [IX_Users_Name] ON [Users] ([Name]);",
	}
	requireSubsequence(t, "migration 11's first statement", first, order)
	skipped := regexp.MustCompile(`(?is)^(CREATE\s+(UNIQUE\s+)?INDEX|ALTER TABLE\s+\S+\s+ADD\s)`)
	script, err := SchemaScript("sqlserver")
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range m.up {
		if skipped.MatchString(tsqlCode(stmt)) {
			t.Errorf("adoption would skip this statement of migration 11 when its object exists:\n%s", stmt)
		}
		if !strings.Contains(tsqlCode(script), tsqlCode(stmt)) {
			t.Errorf("the schema script lacks this statement of migration 11:\n%s", stmt)
		}
	}
	s := openSQLServerLive(t, "to sign up Alice and alice, and run the check on a table holding both")
	if s == nil {
		return
	}
	ctx := t.Context()
	var collation string
	if err := s.rawQueryRow(`SELECT collation_name FROM sys.columns WHERE object_id = OBJECT_ID(N'Users') AND name = N'Name'`).Scan(&collation); err != nil {
		t.Fatal(err)
	}
	if collation != "Latin1_General_100_CI_AS" {
		t.Errorf("Users.Name's collation is %s, want Latin1_General_100_CI_AS", collation)
	}
	if _, err := s.CreateUser(ctx, "Alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, "alice"); !errors.Is(err, ErrNameTaken) {
		t.Errorf("signing up alice beside Alice: %v, want ErrNameTaken", err)
	}
	// The check, on a column made case-sensitive for the test and put
	// back by the rollback.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, q := range []string{
		`DROP INDEX [IX_Users_Name] ON [Users]`,
		`ALTER TABLE [Users] ALTER COLUMN [Name] nvarchar(450) COLLATE Latin1_General_100_CS_AS NOT NULL`,
		`CREATE UNIQUE INDEX [IX_Users_Name] ON [Users] ([Name])`,
		`INSERT INTO Users (Name) VALUES (N'alice')`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, err = tx.ExecContext(ctx, m.up[0])
	var me mssql.Error
	if !errors.As(err, &me) || me.Number != 50000 || !strings.Contains(me.Message, "Alice") || !strings.Contains(me.Message, "alice") {
		t.Errorf("migration 11 on a table holding Alice and alice: %v; want error 50000 naming both", err)
	}
}

// Migrating down to the counters of version 2 leaves a database whose
// follows still count: no Down leaves a trigger reading a column it has
// dropped (SQL Server's migration 3 did). SQLite and PostgreSQL always,
// SQL Server with MSSQL_DSN, its shared database migrated up again after.
func TestMigrateDownToCounters(t *testing.T) {
	for _, d := range []struct {
		name string
		open opener
	}{{"sqlite", openTestStore}, {"postgres", openPostgres}, {"sqlserver", openSQLServer}} {
		t.Run(d.name, func(t *testing.T) {
			if d.name == "postgres" && !pgtest.Available() {
				t.Skip(pgtest.SkipMessage("migrating PostgreSQL down"))
			}
			s := d.open(t)
			ctx := t.Context()
			p := gooseProvider(t, s)
			if _, err := p.DownTo(ctx, 2); err != nil {
				t.Fatalf("down to version 2: %v", err)
			}
			if d.name == "sqlserver" {
				t.Cleanup(func() {
					if _, err := p.Up(context.Background()); err != nil {
						t.Errorf("migrate the shared database up again: %v", err)
					}
				})
			}
			ids := map[string]int64{}
			for _, name := range []string{"down_a", "down_b"} {
				if _, err := s.rawExec(`INSERT INTO Users (Name) VALUES (?)`, name); err != nil {
					t.Fatal(err)
				}
				var id int64
				if err := s.rawQueryRow(`SELECT Id FROM Users WHERE Name = ?`, name).Scan(&id); err != nil {
					t.Fatal(err)
				}
				ids[name] = id
			}
			counts := func(when string, want int) {
				t.Helper()
				var following, followers int
				err := s.rawQueryRow(`SELECT (SELECT FollowingCount FROM Users WHERE Id = ?), (SELECT FollowerCount FROM Users WHERE Id = ?)`,
					ids["down_a"], ids["down_b"]).Scan(&following, &followers)
				if err != nil {
					t.Fatal(err)
				}
				if following != want || followers != want {
					t.Errorf("%s: following %d, followers %d; want %d", when, following, followers, want)
				}
			}
			if _, err := s.rawExec(`INSERT INTO Follows (FollowerId, FolloweeId) VALUES (?, ?)`, ids["down_a"], ids["down_b"]); err != nil {
				t.Fatalf("a follow at version 2: %v", err)
			}
			counts("after the follow", 1)
			if _, err := s.rawExec(`DELETE FROM Follows WHERE FollowerId = ? AND FolloweeId = ?`, ids["down_a"], ids["down_b"]); err != nil {
				t.Fatalf("an unfollow at version 2: %v", err)
			}
			counts("after the unfollow", 0)
		})
	}
}

// Users.FollowingVersion goes up whenever the set of users a user follows
// changes, whoever writes: migration 14 has the count trigger add, in the
// UPDATE that adjusts the follower's FollowingCount (no second write of
// the row), the number of the follower's follows the statement changed,
// with no filter on the followee, so that a follow of a deactivated user
// (FollowingCount unchanged) moves it too. A user who follows anyone
// starts at 1. With MSSQL_DSN: a follow, a follow of a deactivated user,
// a move of a follow to another follower (both move), and deleting a
// followee through TR_Users_Delete each move the version; a mute does
// not.
func TestSQLServerFollowingVersion(t *testing.T) {
	files := sqlserverMigrationFiles(t)
	i := slices.IndexFunc(files, func(m tsqlMigration) bool { return m.version == 14 })
	if i < 0 {
		t.Fatal("no SQL Server migration 00014")
	}
	var up []string
	for _, stmt := range files[i].up {
		up = append(up, tsqlCode(stmt))
	}
	for _, want := range []string{
		"ALTER TABLE [Users] ADD [FollowingVersion] bigint NOT NULL CONSTRAINT [DF_Users_FollowingVersion] DEFAULT 0;",
		"UPDATE u SET [FollowingVersion] = 1 FROM [Users] AS u WITH (TABLOCKX) WHERE u.[FollowingVersion] = 0 AND EXISTS (SELECT 1 FROM [Follows] AS f WHERE f.[FollowerId] = u.[Id]);",
	} {
		if !slices.Contains(up, want) {
			t.Errorf("migration 14's Up lacks\n%s", want)
		}
	}
	body := sqlserverTrigger(t, "TR_Follows_Counts")
	_, following, ok := strings.Cut(body, "UPDATE u SET [FollowingCount] = u.[FollowingCount] + c.n, [FollowingVersion] = u.[FollowingVersion] + c.changed FROM [Users] AS u")
	switch {
	case !ok:
		t.Errorf("TR_Follows_Counts does not move FollowingVersion in the UPDATE of FollowingCount:\n%s", body)
	case strings.Count(body, "[FollowingVersion]") != 2:
		t.Errorf("TR_Follows_Counts names FollowingVersion other than in its one UPDATE of the follower:\n%s", body)
	case !strings.Contains(following, "COUNT(*) AS changed"):
		t.Errorf("TR_Follows_Counts does not count the follower's changed follows:\n%s", body)
	case strings.Contains(following, "WHERE NOT EXISTS"):
		t.Errorf("TR_Follows_Counts leaves follows of deactivated users out of the follower's UPDATE, and their versions stay:\n%s", body)
	}
	s := openSQLServerLive(t, "to move versions by follows, a follow of a deactivated user, a moved follow and a delete")
	if s == nil {
		return
	}
	ctx := t.Context()
	id := users(t, s, "ann", "ben", "cat", "dan")
	type state struct{ following, version int64 }
	read := func(name string) state {
		t.Helper()
		var st state
		if err := s.rawQueryRow(`SELECT FollowingCount, FollowingVersion FROM Users WHERE Id = ?`, id[name]).Scan(&st.following, &st.version); err != nil {
			t.Fatal(err)
		}
		return st
	}
	step := func(what string, do func() error, moved ...string) {
		t.Helper()
		before := map[string]state{}
		for name := range id {
			before[name] = read(name)
		}
		if err := do(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for name := range id {
			after := read(name)
			if want := slices.Contains(moved, name); (after.version > before[name].version) != want || after.version < before[name].version {
				t.Errorf("%s: %s's version went from %d to %d; want it moved: %v", what, name, before[name].version, after.version, want)
			}
		}
	}
	exec := func(q string, args ...any) func() error {
		return func() error { _, err := s.rawExec(q, args...); return err }
	}
	// A plain DELETE, as an EF Core app's Remove sends it: TR_Users_Delete
	// deletes the follows of the user first.
	remove := func(name string) func() error {
		return func() error {
			_, err := s.rawExec(`DELETE FROM Users WHERE Id = ?`, id[name])
			delete(id, name)
			return err
		}
	}
	step("ann follows ben", func() error { _, err := s.Follow(ctx, id["ann"], id["ben"]); return err }, "ann")
	if got := read("ann"); got.following != 1 || got.version < 1 {
		t.Errorf("after a follow ann follows %d at version %d; want 1 at version 1 or more", got.following, got.version)
	}
	step("ann mutes ben", exec(`UPDATE Follows SET Muted = 1 WHERE FollowerId = ? AND FolloweeId = ?`, id["ann"], id["ben"]))
	if _, _, err := s.SetDeactivated(ctx, id["cat"], true); err != nil {
		t.Fatal(err)
	}
	// As an EF Core app would: the server refuses to follow a deactivated
	// user.
	step("ann follows the deactivated cat", exec(`INSERT INTO Follows (FollowerId, FolloweeId) VALUES (?, ?)`, id["ann"], id["cat"]), "ann")
	if got := read("ann"); got.following != 1 {
		t.Errorf("after following the deactivated cat ann follows %d, want 1", got.following)
	}
	step("ann's follow of ben moves to dan", exec(`UPDATE Follows SET FollowerId = ? WHERE FollowerId = ? AND FolloweeId = ?`, id["dan"], id["ann"], id["ben"]), "ann", "dan")
	step("deleting ben", remove("ben"), "dan")
	step("deleting the deactivated cat", remove("cat"), "ann")
	requireExactCounts(t, s, "the follows and deletes")
}
