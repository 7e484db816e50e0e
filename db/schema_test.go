package db

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"follows/db/adopt"
	"follows/db/mssqltest"
	"follows/db/pgtest"
)

// sqlcmdBatches are a SQL Server script's GO batches, comment lines
// dropped, empty ones left out.
func sqlcmdBatches(t *testing.T, script string) []string {
	t.Helper()
	if !strings.HasSuffix(script, "\nGO\n") {
		t.Errorf("the script does not end with GO: its last batch would not run in sqlcmd")
	}
	var out []string
	for _, batch := range strings.Split(script, "\nGO\n") {
		if s := withoutCommentLines(batch); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// wantScript is the statements a dialect's script must run, in order:
// first, then goose's table and version 0, then each migration file's
// statements (read here from the files) and the row recording it, then
// last. insert is goose's row for a version, as the script writes it.
func wantScript(t *testing.T, dialect string, first []string, insert func(v int64) string, last string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("migrations", dialect))
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(first), "CREATE TABLE goose_db_version (", insert(0))
	for _, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		src, err := os.ReadFile(filepath.Join("migrations", dialect, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range adopt.Statements(string(src)) {
			if stmt = strings.TrimSpace(stmt); stmt != "" {
				want = append(want, stmt)
			}
		}
		want = append(want, insert(v))
	}
	return append(want, last)
}

// withoutCommentLines is a statement without its comment lines, trimmed.
func withoutCommentLines(s string) string {
	var lines []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			lines = append(lines, line)
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// compareBatches reports where got, a script's batches, departs from
// want, statements each a batch of its own; a want ending in "(" is a
// prefix.
func compareBatches(t *testing.T, got, want []string) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = withoutCommentLines(want[i])
		}
		if g == w || (strings.HasSuffix(w, "(") && strings.HasPrefix(g, w)) {
			continue
		}
		t.Fatalf("batch %d of the script is\n%s\nwant\n%s", i+1, g, w)
	}
}

// requireInOrder checks that script holds want's statements in order,
// each on lines of its own, nothing but comments between them or after
// the last; a want ending in "(" is a prefix.
func requireInOrder(t *testing.T, script string, want []string) {
	t.Helper()
	rest := script
	for i, w := range want {
		at := strings.Index(rest, "\n"+w)
		if at < 0 {
			t.Fatalf("the script lacks, after statement %d, the statement\n%s", i, w)
		}
		if between := withoutCommentLines(rest[:at]); between != "" {
			t.Fatalf("the script runs, before\n%s\nthe unexpected\n%s", w, between)
		}
		end := at + 1 + len(w)
		if strings.HasSuffix(w, "(") { // a prefix: to the statement's end
			end = at + strings.Index(rest[at:], ";\n") + 1
		}
		rest = rest[end:]
	}
	if after := withoutCommentLines(rest); after != "" {
		t.Errorf("the script ends with\n%s", after)
	}
}

// The SQL Server script runs in sqlcmd as it is: first the SET options a
// filtered index and the triggers need (classic sqlcmd connects with
// QUOTED_IDENTIFIER OFF, and migration 7's filtered index then fails with
// error 1934), each a batch of its own, then one transaction, then goose's
// table with version 0, then each migration's statements, each a batch
// ended by GO, followed by the row that records the migration as goose
// does, so that a server started afterwards neither adopts the database
// nor runs a migration again.
func TestSQLServerScriptForSqlcmd(t *testing.T) {
	script, err := SchemaScript("sqlserver")
	if err != nil {
		t.Fatal(err)
	}
	head := []string{
		// "CREATE INDEX (Transact-SQL)", Required SET Options for
		// Filtered Indexes.
		"SET ANSI_NULLS ON;", "SET ANSI_PADDING ON;", "SET ANSI_WARNINGS ON;", "SET ARITHABORT ON;",
		"SET CONCAT_NULL_YIELDS_NULL ON;", "SET NUMERIC_ROUNDABORT OFF;", "SET QUOTED_IDENTIFIER ON;",
		"SET XACT_ABORT ON;", "BEGIN TRANSACTION;",
	}
	insert := func(v int64) string {
		return fmt.Sprintf("INSERT INTO goose_db_version (version_id, is_applied) VALUES (%d, 1);", v)
	}
	got := sqlcmdBatches(t, script)
	compareBatches(t, got, wantScript(t, "sqlserver", head, insert, "COMMIT TRANSACTION;"))
	// goose's table as goose's SQL Server dialect makes it.
	for _, col := range []string{"id INT NOT NULL IDENTITY(1,1) PRIMARY KEY", "version_id BIGINT NOT NULL", "is_applied BIT NOT NULL", "tstamp DATETIME NULL DEFAULT CURRENT_TIMESTAMP"} {
		if !strings.Contains(got[len(head)], col) {
			t.Errorf("goose's table lacks %s:\n%s", col, got[len(head)])
		}
	}
	// sqlcmd reads a line that starts with one of its commands as the
	// command ("sqlcmd Utility": GO, :commands, !!, ED, RESET, EXIT, QUIT
	// "must be the first statement on a line"), and $(name) anywhere as a
	// scripting variable.
	for _, stmt := range got {
		for _, line := range strings.Split(stmt, "\n") {
			word := strings.ToUpper(strings.Fields(line + " x")[0])
			if strings.HasPrefix(word, ":") || strings.HasPrefix(word, "!!") || slices.Contains([]string{"GO", "ED", "RESET", "EXIT", "QUIT"}, word) {
				t.Errorf("sqlcmd would take this line for its command: %q", line)
			}
		}
		if strings.Contains(stmt, "$(") {
			t.Errorf("sqlcmd would take $( for a scripting variable:\n%s", stmt)
		}
	}
	for _, want := range []string{"sqlcmd -b -I ", "-i schema.sql"} {
		if !strings.Contains(script, want) {
			t.Errorf("the script's header does not say how to run it: no %q", want)
		}
	}
}

// PostgreSQL's and SQLite's scripts are one transaction too, with goose's
// rows after each migration.
func TestScriptsRecordMigrations(t *testing.T) {
	for _, tc := range []struct {
		dialect, yes, run string
	}{
		{"postgres", "true", "psql -v ON_ERROR_STOP=1 "},
		{"sqlite", "1", "sqlite3 -bail "},
	} {
		script, err := SchemaScript(tc.dialect)
		if err != nil {
			t.Fatal(err)
		}
		insert := func(v int64) string {
			return fmt.Sprintf("INSERT INTO goose_db_version (version_id, is_applied) VALUES (%d, %s);", v, tc.yes)
		}
		requireInOrder(t, script, wantScript(t, tc.dialect, []string{"BEGIN;"}, insert, "COMMIT;"))
		if !strings.Contains(script, tc.run) {
			t.Errorf("the %s script's header does not say how to run it: no %q", tc.dialect, tc.run)
		}
	}
}

// A migration goose runs outside a transaction (none does yet) runs
// outside the script's too, recorded right after it.
func TestScriptNoTransactionMigration(t *testing.T) {
	fsys := fstest.MapFS{
		"00001_a.sql": {Data: []byte("-- +goose Up\nCREATE TABLE a (x int);\n\n-- +goose Down\nDROP TABLE a;\n")},
		"00002_b.sql": {Data: []byte("-- +goose NO TRANSACTION\n-- +goose Up\nCREATE INDEX CONCURRENTLY i ON a (x);\n")},
	}
	script, err := schemaScript(&postgresDialect{}, fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"BEGIN;", "CREATE TABLE goose_db_version (",
		"INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, true);",
		"CREATE TABLE a (x int);",
		"INSERT INTO goose_db_version (version_id, is_applied) VALUES (1, true);",
		"COMMIT;", "CREATE INDEX CONCURRENTLY i ON a (x);",
		"INSERT INTO goose_db_version (version_id, is_applied) VALUES (2, true);",
		"BEGIN;", "COMMIT;"}
	requireInOrder(t, script, want)
}

// requireCurrent checks that a store opened on a database the script made
// found it its own and current: nothing adopted, no migration run, goose
// at the newest migration's version. Then a sign-up and a follow work,
// with their counts.
func requireCurrent(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	if s.Adopted.Shape != ShapeOurs || len(s.Adopted.Steps) > 0 || len(s.Adopted.Migrations) > 0 {
		t.Errorf("the server adopted the database the script made:\n%s", s.Adopted)
	}
	p := gooseProvider(t, s)
	sources := p.ListSources()
	newest := sources[len(sources)-1].Version
	if v, err := p.GetDBVersion(ctx); err != nil || v != newest {
		t.Errorf("goose finds version %d (%v), want %d", v, err, newest)
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM goose_db_version`).Scan(&rows); err != nil || rows != len(sources)+1 {
		t.Errorf("goose's table has %d rows (%v), want %d: version 0 and each migration once", rows, err, len(sources)+1)
	}
	a, err := s.CreateUser(ctx, "ada")
	if err != nil {
		t.Fatalf("sign-up: %v", err)
	}
	b, err := s.CreateUser(ctx, "bob")
	if err != nil {
		t.Fatalf("sign-up: %v", err)
	}
	if _, err := s.Follow(ctx, a.ID, b.ID); err != nil {
		t.Fatalf("follow: %v", err)
	}
	for name, want := range map[string][2]int{"ada": {0, 1}, "bob": {1, 0}} {
		u, err := s.UserByName(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := [2]int{int(u.FollowerCount), int(u.FollowingCount)}; got != want {
			t.Errorf("%s has %d followers, %d following; want %d, %d", name, got[0], got[1], want[0], want[1])
		}
	}
	requireExactCounts(t, s, "a follow")
}

// catalog lists a database's schema, one line an object, sorted: what
// the script made is compared with what the server's migrations make.
func catalog(t *testing.T, s *Store, query string) []string {
	t.Helper()
	rs, err := s.db.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var line string
		if err := rs.Scan(&line); err != nil {
			t.Fatal(err)
		}
		out = append(out, line)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// requireSameCatalog compares the catalog of the database the script made
// with the one the server's migrations made, goose's table included.
func requireSameCatalog(t *testing.T, scripted, migrated *Store, query string) {
	t.Helper()
	got, want := catalog(t, scripted, query), catalog(t, migrated, query)
	for _, line := range want {
		if !slices.Contains(got, line) {
			t.Errorf("the script's database lacks %s", line)
		}
	}
	for _, line := range got {
		if !slices.Contains(want, line) {
			t.Errorf("the script's database has %s, which the migrations do not make", line)
		}
	}
}

// The SQLite script, run into a new file as the sqlite3 shell would
// (modernc's driver runs a script of many statements in one Exec, without
// the server's settings: no foreign keys), makes the database the server's
// migrations make, goose's table and rows included, and the server then
// starts on it without adopting or migrating anything.
func TestSQLiteScriptThenServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	script, err := SchemaScript("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "follows.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, script); err != nil {
		t.Fatalf("run the script: %v", err)
	}
	raw.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("start on the script's database: %v", err)
	}
	defer s.Close()
	migrated := openTestStore(t)
	requireSameCatalog(t, s, migrated, `SELECT type || ' ' || name || ' ' || tbl_name || ': ' || COALESCE(sql, '') FROM sqlite_master
UNION ALL SELECT 'goose ' || version_id || ' ' || is_applied || ' ' || typeof(is_applied) FROM goose_db_version`)
	requireCurrent(t, s)
}

// The PostgreSQL script, sent as psql sends a file (pgx's simple protocol
// runs a script of many statements in one Exec), makes the database the
// server's migrations make, goose's table included, and the server then
// starts on it without adopting or migrating anything.
func TestPostgresScriptThenServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	script, err := SchemaScript("postgres")
	if err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.DSN(t, "running the printed PostgreSQL schema")
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, script, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("run the script: %v", err)
	}
	conn.Close(ctx)
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatalf("start on the script's database: %v", err)
	}
	defer s.Close()
	migrated := openPostgres(t)
	requireSameCatalog(t, s, migrated, `SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable
    || ' ' || COALESCE(column_default, '') || ' ' || is_identity || ' ' || COALESCE(identity_generation, '')
  FROM information_schema.columns WHERE table_schema = current_schema()
UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = current_schema()
UNION ALL SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
  FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
UNION ALL SELECT 'trigger ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
UNION ALL SELECT 'function ' || proname || ' ' || md5(prosrc) FROM pg_proc WHERE pronamespace = current_schema()::regnamespace
UNION ALL SELECT 'goose ' || version_id || ' ' || is_applied FROM goose_db_version`)
	requireCurrent(t, s)
}

// The SQL Server script, sent batch by batch on one session that starts
// as classic sqlcmd's does (QUOTED_IDENTIFIER OFF), makes a database the
// server then starts on without adopting or migrating anything, its
// triggers stored with QUOTED_IDENTIFIER and ANSI_NULLS ON. Live only: it
// needs MSSQL_DSN, a login that may create databases.
func TestSQLServerScriptThenServer(t *testing.T) {
	dsn := mssqltest.NewDatabase(t, "follows_schema_", "SKIPPED: running the printed SQL Server schema as sqlcmd does needs MSSQL_DSN (a login that may create databases); its SQLite and PostgreSQL twins ran")
	ctx := context.Background()
	script, err := SchemaScript("sqlserver")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlserver", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Without arguments go-mssqldb sends each batch as it is, as sqlcmd
	// does, and the session keeps what a batch SETs.
	if _, err := conn.ExecContext(ctx, "SET QUOTED_IDENTIFIER OFF"); err != nil {
		t.Fatal(err)
	}
	for i, batch := range strings.Split(script, "\nGO\n") {
		if withoutCommentLines(batch) == "" {
			continue
		}
		if _, err := conn.ExecContext(ctx, batch); err != nil {
			t.Fatalf("batch %d: %v\n%s", i+1, err, batch)
		}
	}
	conn.Close()
	rows, err := raw.QueryContext(ctx, `SELECT OBJECT_NAME(object_id) FROM sys.sql_modules
WHERE OBJECTPROPERTY(object_id, 'IsTrigger') = 1 AND (uses_ansi_nulls = 0 OR uses_quoted_identifier = 0)`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		t.Errorf("trigger %s is stored without ANSI_NULLS or QUOTED_IDENTIFIER ON", name)
	}
	rows.Close()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatalf("start on the script's database: %v", err)
	}
	defer s.Close()
	requireCurrent(t, s)
}
