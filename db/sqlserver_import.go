package db

import (
	"context"
	"fmt"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
)

// SQL Server's bulk import, apart from sqlserver.go so that the rest of
// the dialect reads as the server's own statements. It is not run on the
// machines this project is built on (no SQL Server there); the db tests
// run it when MSSQL_DSN names a database. The shared parts (which rows
// are checked, the column lists, the recount) are Import's, as on every
// dialect; only these hooks differ:
//
//   - Follows and Blocks rows go in through go-mssqldb's bulk copy
//     (mssql.CopyIn, TDS's INSERT BULK), with CHECK_CONSTRAINTS so that the
//     foreign keys and CHECKs stay trusted, and without FIRE_TRIGGERS, so
//     the count trigger does not run per batch: Import recounts once.
//   - Users go in with multi-row INSERTs under IDENTITY_INSERT (copies,
//     userIDInserter), because the bulk copy gives identity columns
//     values of its own (go-mssqldb has no KEEP_IDENTITY) and users keep
//     their ids. They are few beside the follows.
//   - The identity is moved past the exported graph's highest id with
//     DBCC CHECKIDENT, never back.

func (*sqlserverDialect) bulkSetup() []string      { return nil }
func (*sqlserverDialect) bulkReset() []string      { return nil }
func (*sqlserverDialect) bulkTxSetup() []string    { return nil }
func (*sqlserverDialect) copies(table string) bool { return table != "Users" }

// beforeUserIDs takes Users whole, to the import's commit, before its
// rows go in: migration 11 turns lock escalation off on Users (so that a
// deactivation's thousands of row locks never become a table lock), and
// an import of a million users would otherwise hold a row lock each, 96
// bytes apiece ("Server configuration: locks"). The table's exclusive
// lock covers its rows, as an escalated lock does once it has released
// the row locks ("Lock Escalation (Database Engine)"); how many row locks
// the engine still records under it has not been measured here (no SQL
// Server). Holding Users whole also keeps sign-ups out until the import
// commits, which a move into a database wants anyway. TOP (1), not TOP
// (0), which the optimizer answers without touching the table.
func (*sqlserverDialect) beforeUserIDs() []string {
	return []string{`SELECT TOP (1) 1 FROM Users WITH (TABLOCKX, HOLDLOCK)`, `SET IDENTITY_INSERT Users ON`}
}

func (*sqlserverDialect) afterUserIDs() []string { return []string{`SET IDENTITY_INSERT Users OFF`} }

func (*sqlserverDialect) afterImport() []string {
	return []string{`UPDATE STATISTICS Users`, `UPDATE STATISTICS Follows`}
}

// setAsideFollowIndexes sets nothing aside: the bulk copy fires no trigger
// and keeps the indexes as it goes.
func (*sqlserverDialect) setAsideFollowIndexes(context.Context, runner) (func() error, error) {
	return func() error { return nil }, nil
}

// lastUserID reads the identity's last value, the highest id it
// gave (null before the first insert).
func (*sqlserverDialect) lastUserID(ctx context.Context, r runner) (int64, error) {
	var last int64
	err := r.queryRow(ctx, `SELECT COALESCE(CAST(c.last_value AS bigint), 0) FROM sys.identity_columns AS c
WHERE c.object_id = OBJECT_ID('Users') AND c.name = 'Id'`, nil, &last)
	return last, err
}

// copyRows writes rows with one bulk copy inside the import's
// transaction. SQL Server names no row when one is refused.
func (*sqlserverDialect) copyRows(ctx context.Context, b bulkRun, table string, cols []string, rows [][]any) error {
	st, err := b.tx.PrepareContext(ctx, mssql.CopyIn(table, mssql.BulkOptions{CheckConstraints: true}, cols...))
	if err != nil {
		return fmt.Errorf("bulk copy into %s: %w", table, err)
	}
	defer st.Close()
	for _, row := range rows {
		for i, v := range row {
			// The bulk copy takes datetime2 values as time.Time; the
			// dialect's time parameters are civil times.
			if c, ok := v.(civilTime); ok {
				row[i] = c.In(time.UTC)
			}
		}
		if _, err := st.ExecContext(ctx, row...); err != nil {
			return fmt.Errorf("bulk copy into %s: %w", table, err)
		}
	}
	if _, err := st.ExecContext(ctx); err != nil {
		return fmt.Errorf("bulk copy into %s: %w", table, err)
	}
	return nil
}

// civilTime is a civil date and time, of whichever civil package.
type civilTime interface {
	In(*time.Location) time.Time
}

// keepUserIDsAbove reseeds the Users identity to last when it
// has given less, so that the next user gets last+1. An identity that has
// never given a value gives the reseed value itself next, hence the one
// more.
func (*sqlserverDialect) keepUserIDsAbove(ctx context.Context, r runner, last int64) error {
	if last == 0 {
		return nil
	}
	_, err := r.exec(ctx, `DECLARE @last bigint = ?;
DECLARE @given bigint = (SELECT CAST(c.last_value AS bigint) FROM sys.identity_columns AS c
                         WHERE c.object_id = OBJECT_ID('Users') AND c.name = 'Id');
IF @given IS NULL SET @last = @last + 1;
IF @given IS NULL OR @given < @last DBCC CHECKIDENT ('Users', RESEED, @last) WITH NO_INFOMSGS;`, last)
	return err
}
