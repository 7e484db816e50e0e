package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// The settings of a SQL Server and its database that the store's
// statements, or the counts the triggers keep, depend on. Each is read at
// start; a database that would fail later, or drift silently, is refused
// with the statement that puts it right. They are data, one place: what
// is read, what it must be, why, and the fix.
//
// Settings looked at and left alone:
//   - The database's RECURSIVE_TRIGGERS (sys.databases.is_recursive_triggers_on):
//     TR_Users_Delete's own DELETE on Users does not fire it again ("If
//     an INSTEAD OF trigger defined on a table executes a statement
//     against the table that would ordinarily fire the INSTEAD OF trigger
//     again, the trigger is not called recursively", CREATE TRIGGER), and
//     TR_Follows_Counts writes Users, not Follows.
//   - The server's "disallow results from triggers": the triggers return
//     no rows.
//   - Azure SQL Database (SERVERPROPERTY('EngineEdition') = 5) has no
//     sp_configure and no sys.configurations ("Applies to: SQL Server");
//     its nested triggers are not the database's to change, and are not
//     read there. Azure SQL Managed Instance has both and is read.

// serverSetting is one setting checked at start. query answers one row:
// the subject the fix names (the database, the option, the triggers) and
// the value in force; problem says what is wrong with it, need why the
// server needs it otherwise, fix the statement to run.
type serverSetting struct {
	name    string
	query   string
	ok      func(value int) bool
	problem func(subject string, value int) string
	need    string
	fix     func(subject string) string
}

// refusal is nil when value is fine, and otherwise says what is wrong,
// why the server needs it otherwise, and the statement that fixes it.
func (s serverSetting) refusal(subject string, value int) error {
	if s.ok(value) {
		return nil
	}
	return fmt.Errorf("%s: %s; run %s", s.problem(subject, value), s.need, s.fix(subject))
}

// read reads the setting and judges it.
func (s serverSetting) read(ctx context.Context, db *sql.DB) error {
	var subject string
	var value int
	if err := db.QueryRowContext(ctx, s.query).Scan(&subject, &value); err != nil {
		return fmt.Errorf("read the %s: %w", s.name, err)
	}
	return s.refusal(subject, value)
}

// minCompatibilityLevel is the lowest database compatibility level at
// which OPENJSON, which every batch statement reads its parameter with,
// exists (SQL Server 2016's level). A database restored from an older
// server keeps its old level, and its first batch would fail with
// "Invalid object name 'OPENJSON'" long after start.
const minCompatibilityLevel = 130

var compatibilityLevel = serverSetting{
	name:  "database's compatibility level",
	query: `SELECT d.name, CAST(d.compatibility_level AS int) FROM sys.databases AS d WHERE d.name = DB_NAME()`,
	ok:    func(level int) bool { return level >= minCompatibilityLevel },
	problem: func(db string, level int) string {
		return fmt.Sprintf("database %q has compatibility level %d", db, level)
	},
	need: fmt.Sprintf("the server needs %d or higher (SQL Server 2016) for OPENJSON", minCompatibilityLevel),
	fix: func(db string) string {
		return fmt.Sprintf("ALTER DATABASE [%s] SET COMPATIBILITY_LEVEL = %d", strings.ReplaceAll(db, "]", "]]"), minCompatibilityLevel)
	},
}

// nestedTriggers: TR_Follows_Counts must fire for the follows that
// TR_Users_Delete deletes, an AFTER trigger nested inside an INSTEAD OF
// trigger. With the server option off, "AFTER triggers cannot cascade"
// and "the first AFTER trigger nested inside an INSTEAD OF trigger fires
// even if the nested triggers server configuration option is set to 0.
// However, under this setting, later AFTER triggers do not fire" ("nested
// triggers" option, CREATE TRIGGER): whether the count trigger is that
// first one then depends on what other triggers the tables carry (an EF
// Core app may add its own), and a count trigger that does not fire
// leaves the counts wrong without an error. The default is 1.
var nestedTriggers = serverSetting{
	name: "server option nested triggers",
	query: `IF CAST(SERVERPROPERTY('EngineEdition') AS int) = 5
    SELECT N'nested triggers', 1;
ELSE
    SELECT c.name, CAST(c.value_in_use AS int) FROM sys.configurations AS c WHERE c.name = N'nested triggers';`,
	ok: func(v int) bool { return v == 1 },
	problem: func(option string, v int) string {
		return fmt.Sprintf("the server option %q is %d", option, v)
	},
	need: "the follower counts rely on TR_Follows_Counts firing inside TR_Users_Delete, and with nested triggers off SQL Server fires only the first AFTER trigger nested in an INSTEAD OF trigger",
	fix:  func(string) string { return "EXEC sp_configure 'nested triggers', 1; RECONFIGURE;" },
}

// enabledTriggers: a trigger left disabled (DISABLE TRIGGER, say for a
// load) keeps nothing: counts drift with every follow, or deleting a user
// fails on its blocks. The subject is the statements that enable each;
// none is there to be disabled before the migrations make them.
var enabledTriggers = serverSetting{
	name: "follows triggers' state",
	query: `SELECT COALESCE((SELECT N'ENABLE TRIGGER ' + QUOTENAME(t.name) + N' ON ' + QUOTENAME(OBJECT_NAME(t.parent_id)) + N'; '
        FROM sys.triggers AS t
        WHERE t.parent_id IN (OBJECT_ID(N'Follows'), OBJECT_ID(N'Users')) AND t.name IN (N'TR_Follows_Counts', N'TR_Users_Delete') AND t.is_disabled = 1
        FOR XML PATH(''), TYPE).value('.', 'nvarchar(max)'), N''),
    (SELECT COUNT(*) FROM sys.triggers AS t
        WHERE t.parent_id IN (OBJECT_ID(N'Follows'), OBJECT_ID(N'Users')) AND t.name IN (N'TR_Follows_Counts', N'TR_Users_Delete') AND t.is_disabled = 1);`,
	ok: func(n int) bool { return n == 0 },
	problem: func(_ string, n int) string {
		return fmt.Sprintf("%d of the triggers TR_Follows_Counts and TR_Users_Delete are disabled", n)
	},
	need: "the counts and the deletion of users rely on them",
	fix:  func(enable string) string { return strings.TrimSpace(enable) },
}

// sqlserverSettings are the settings checked at start, in order.
var sqlserverSettings = []serverSetting{compatibilityLevel, nestedTriggers, enabledTriggers}

// checkServerSettings refuses, at start, a server or database whose
// settings the store cannot run on, naming every one at once.
func checkServerSettings(ctx context.Context, db *sql.DB) error {
	var errs []error
	for _, s := range sqlserverSettings {
		errs = append(errs, s.read(ctx, db))
	}
	return errors.Join(errs...)
}

// checkCompatibilityLevel refuses a database whose compatibility level
// is below minCompatibilityLevel.
func checkCompatibilityLevel(ctx context.Context, db *sql.DB) error {
	return compatibilityLevel.read(ctx, db)
}

func compatibilityError(name string, level int) error {
	return compatibilityLevel.refusal(name, level)
}
