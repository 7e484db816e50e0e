package db

import (
	"cmp"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/pressly/goose/v3"

	"follows/db/adopt"
)

// Dialects are the database kinds the store speaks, by name.
var Dialects = []string{"sqlite", "sqlserver", "postgres"}

// allDialects are the dialects Dialects names.
var allDialects = []dialect{&sqliteDialect{}, &sqlserverDialect{}, &postgresDialect{}}

// scriptBatches is a dialect whose tools run a script in batches, each
// ended by a line of its own (SQL Server's GO): SchemaScript ends each
// statement with one. On SQL Server a statement must be a batch of its
// own ("Batches", Rules for Using Batches: CREATE TRIGGER and others
// "cannot be combined with other statements in a batch", and "A table
// cannot be changed and then the new columns referenced in the same
// batch", which migration 2 does: it adds FollowerCount, then fills it).
type scriptBatches interface {
	batchSeparator() string
}

// scriptFrame is what a dialect's script holds around its migrations so
// that the dialect's own tool runs it whole or not at all: how to run it
// (comment lines), the session settings it needs, and the statements
// that begin and commit its transaction.
type scriptFrame struct {
	run           string
	settings      []string
	begin, commit string
}

// scriptFrames are the dialects' script frames, by dialect name.
var scriptFrames = map[string]scriptFrame{
	// sqlite3 goes on after a failed statement, and SQLite undoes only
	// that statement, so COMMIT would keep the rest: -bail ("stop after
	// hitting an error") ends the shell instead, and closing a connection
	// rolls its open transaction back. The umask makes the file its
	// owner's only, as the server makes a new one (createSQLiteFile).
	"sqlite": {
		run: `-- Run it once, on a new database file, with the sqlite3 shell:
--   (umask 077; sqlite3 -bail follows.db < schema.sql)
-- (-bail: the first error ends the shell, and the transaction is rolled
-- back; umask 077: the file is its owner's only, as the server makes it.)`,
		begin: "BEGIN;", commit: "COMMIT;",
	},
	// After a failed statement PostgreSQL refuses every other one in the
	// transaction, and COMMIT rolls it back, so the script applies whole
	// or not at all even if psql goes on; ON_ERROR_STOP makes psql stop
	// and exit non-zero. Not psql -1: the script has its own transaction.
	"postgres": {
		run: `-- Run it once, on an empty database, with psql:
--   psql -v ON_ERROR_STOP=1 -d follows -f schema.sql
-- (one transaction: a failed statement leaves the database as it was;
-- do not add -1, the script begins and commits its own.)`,
		begin: "BEGIN;", commit: "COMMIT;",
	},
	"sqlserver": sqlserverFrame,
}

// sqlserverFrame is SQL Server's script frame, for sqlcmd: classic
// sqlcmd, on ODBC, and go-sqlcmd.
//
// The settings are the ones "CREATE INDEX (Transact-SQL)" requires, under
// "Required SET Options for Filtered Indexes", to create a filtered index
// (migration 7's IX_Users_ExternalId) and for every INSERT, UPDATE, DELETE
// or MERGE that modifies its data: ANSI_NULLS, ANSI_PADDING,
// ANSI_WARNINGS, ARITHABORT, CONCAT_NULL_YIELDS_NULL and QUOTED_IDENTIFIER
// ON, NUMERIC_ROUNDABORT OFF. Classic sqlcmd connects with
// QUOTED_IDENTIFIER OFF ("sqlcmd Utility", -I: "Sets the SET
// QUOTED_IDENTIFIER connection option to ON. By default, it is set to
// OFF"; go-sqlcmd's -I is "Provided for backward compatibility. Quoted
// identifiers are always enabled"), and the filtered index then fails
// with error 1934, "%ls failed because the following SET options have
// incorrect settings: '%.*ls'. ...".
//
// They matter to the triggers too. "SET Statements (Transact-SQL)":
// "Stored procedures execute with the SET settings specified at execute
// time except for SET ANSI_NULLS and SET QUOTED_IDENTIFIER", which are
// "the setting specified at stored procedure creation time"; every SQL
// module, trigger included, keeps both ("sys.sql_modules":
// uses_ansi_nulls, "Module was created with SET ANSI_NULLS ON";
// uses_quoted_identifier, "Module was created with SET QUOTED_IDENTIFIER
// ON"). A trigger made under QUOTED_IDENTIFIER OFF (TR_Users_Delete
// deletes from Users, which has the filtered index) would fail later
// writes whatever the writer's own settings.
//
// Each SET is a batch of its own, before any other statement: "SET
// QUOTED_IDENTIFIER (Transact-SQL)" takes effect when a batch is parsed,
// and the session keeps it for the batches after; so do the others.
//
// Then one transaction, from BEGIN TRANSACTION to COMMIT TRANSACTION
// across the GO batches, which sqlcmd sends on one connection, one
// session. XACT_ABORT ON ("SET XACT_ABORT (Transact-SQL)": "if a
// Transact-SQL statement raises a run-time error, the entire transaction
// is terminated and rolled back"; but "Compile errors, such as syntax
// errors, are not affected by SET XACT_ABORT"). sqlcmd -b ("Specifies
// that sqlcmd exits and returns a DOS ERRORLEVEL value when an error
// occurs") covers both: it disconnects at the first error, and "If the
// client's network connection to an instance of the Database Engine is
// broken, any outstanding transactions for the connection are rolled
// back" ("Transaction locking and row versioning guide", Errors During
// Transaction Processing).
// Without -b, sqlcmd would go on with the batches after a failed one,
// outside any transaction: the header asks for -b.
var sqlserverFrame = scriptFrame{
	run: `-- Run it once, on an empty database, with sqlcmd:
--   sqlcmd -b -I -S <server> -d <database> -i schema.sql
-- (-b: the first error ends sqlcmd, and SQL Server rolls the transaction
-- back; without it the batches after a failed one would run outside any
-- transaction. -I: QUOTED_IDENTIFIER ON, which classic sqlcmd leaves OFF
-- and go-sqlcmd always has; the SET batches below say so again.)`,
	settings: []string{
		"SET ANSI_NULLS ON;",
		"SET ANSI_PADDING ON;",
		"SET ANSI_WARNINGS ON;",
		"SET ARITHABORT ON;",
		"SET CONCAT_NULL_YIELDS_NULL ON;",
		"SET NUMERIC_ROUNDABORT OFF;",
		"SET QUOTED_IDENTIFIER ON;",
		"SET XACT_ABORT ON;",
	},
	begin: "BEGIN TRANSACTION;", commit: "COMMIT TRANSACTION;",
}

// SchemaScript returns the script that makes a dialect's (by name) schema
// in an empty database as the server's migrations make it, for a DBA to
// review and run by hand with the dialect's own tool, without touching any
// database. It records each migration in goose's table as goose would, so
// that a server started on the database afterwards finds it current
// (see gooseStatements), and runs in one transaction.
func SchemaScript(name string) (string, error) {
	i := slices.IndexFunc(allDialects, func(d dialect) bool { return d.name() == name })
	if i < 0 {
		return "", fmt.Errorf("unknown dialect %q: one of %s", name, strings.Join(Dialects, ", "))
	}
	fsys, err := fs.Sub(migrations, "migrations/"+name)
	if err != nil {
		return "", err
	}
	return schemaScript(allDialects[i], fsys)
}

// scriptMigration is one migration file, as the script runs it.
type scriptMigration struct {
	name    string
	version int64
	src     string
	// noTx is a migration goose runs outside a transaction.
	noTx bool
}

// schemaScript is SchemaScript for dialect d, from the migration files
// in fsys.
func schemaScript(d dialect, fsys fs.FS) (string, error) {
	frame, ok := scriptFrames[d.name()]
	if !ok {
		return "", fmt.Errorf("no schema script for %s", d.name())
	}
	files, err := scriptMigrations(fsys)
	if err != nil {
		return "", err
	}
	versions := make([]int64, len(files))
	for i, m := range files {
		versions[i] = m.version
	}
	create, inserts, err := gooseStatements(d, versions)
	if err != nil {
		return "", fmt.Errorf("goose's version table: %w", err)
	}
	w := scriptWriter{}
	if sep, ok := d.(scriptBatches); ok {
		w.separator = sep.batchSeparator()
	}
	fmt.Fprintf(&w.b, "-- The follows schema for %s, as its migrations create it, and goose's\n", d.name())
	w.b.WriteString("-- record of each migration, so that a server started on the database\n")
	w.b.WriteString("-- finds it current: nothing to adopt, nothing to migrate.\n")
	w.b.WriteString(frame.run + "\n")
	for _, s := range frame.settings {
		w.statement(s)
	}
	w.statement(frame.begin)
	w.b.WriteString("\n-- goose's table of applied migrations, and its version 0.\n")
	w.statement(create)
	w.statement(inserts[0])
	for i, m := range files {
		fmt.Fprintf(&w.b, "\n-- Migration %s\n", m.name)
		// goose runs such a migration outside a transaction, and so
		// does the script.
		if m.noTx {
			w.statement(frame.commit)
		}
		for _, stmt := range adopt.Statements(m.src) {
			// (A StatementBegin/End block in a Down section reads as
			// an empty statement.)
			if strings.TrimSpace(stmt) != "" {
				w.statement(stmt)
			}
		}
		w.statement(inserts[i+1])
		if m.noTx {
			w.statement(frame.begin)
		}
	}
	w.b.WriteString("\n-- Every migration applied and recorded.\n")
	w.statement(frame.commit)
	return w.b.String(), nil
}

// scriptMigrations reads the migration files in fsys, in version order,
// each version as goose reads it from the file's name.
func scriptMigrations(fsys fs.FS) ([]scriptMigration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []scriptMigration
	for _, e := range entries {
		v, err := goose.NumericComponent(e.Name())
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		src, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		noTx := strings.Contains(string(src), "-- +goose NO TRANSACTION")
		out = append(out, scriptMigration{e.Name(), v, string(src), noTx})
	}
	slices.SortFunc(out, func(a, b scriptMigration) int { return cmp.Compare(a.version, b.version) })
	return out, nil
}

// scriptWriter writes a script's statements, each followed by the
// dialect's batch separator if it has one.
type scriptWriter struct {
	b         strings.Builder
	separator string
}

func (w *scriptWriter) statement(stmt string) {
	w.b.WriteString("\n" + stmt + "\n")
	if w.separator != "" {
		w.b.WriteString(w.separator + "\n")
	}
}
