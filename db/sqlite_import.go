package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite's bulk import (bulkLoader, countSetter) and its load of a new
// file (newFileLoader), which may write the follow table's pages itself
// (see followPages).

// The rows go in at the end of the table and of its primary key, which
// needs no large page cache. The page cache's size also bounds the runs
// in which CREATE INDEX sorts, in temporary files (kept in memory,
// temp_store=MEMORY, the sort is one run of all the rows): smaller runs,
// merged, cost less CPU than one.
func (*sqliteDialect) bulkSetup() []string {
	return []string{`PRAGMA foreign_keys = OFF`, `PRAGMA cache_size = -32768`}
}

func (*sqliteDialect) bulkTxSetup() []string { return nil }

func (*sqliteDialect) bulkReset() []string {
	return []string{`PRAGMA foreign_keys = ON`, `PRAGMA cache_size = ` + sqliteCacheSize}
}

func (*sqliteDialect) afterImport() []string { return nil }

func (*sqliteDialect) setImportedCounts() string {
	return `UPDATE Users SET FollowerCount = c.value ->> 1, FollowingCount = c.value ->> 2,
  ` + bumpFollowingVersion + `
FROM json_each(?) AS c WHERE Users.Id = c.value ->> 0`
}

// usersWithCounts: no. SQLite updates a row where it lies, so the counts
// set after the follows cost one pass over the users and leave nothing
// behind.
func (*sqliteDialect) usersWithCounts() bool { return false }

func (*sqliteDialect) startNewFile(ctx context.Context, conn *sql.Conn) (end func() error, writeTree bool, err error) {
	return sqliteStartNewFile(ctx, conn)
}

func (*sqliteDialect) followTree(ctx context.Context, b bulkRun) (_ *followPages, whyNot string, err error) {
	return newFollowPages(ctx, b)
}

// setAsideFollowIndexes drops the follow table's secondary indexes
// and triggers, and returns what recreates them from their own saved SQL.
// Building an index once from all rows is far faster than keeping it
// through millions of inserts; without the count triggers, Import counts
// the follows itself. Even the (FollowerId, CreatedAt, FolloweeId) index,
// into which rows that come by follower would go near its end, is
// cheaper to build afterwards (from rows in follower order, its sort has
// little to do) than to keep: keeping it cost more CPU in the load than
// building it took (docs/decisions/import-speed.md).
func (*sqliteDialect) setAsideFollowIndexes(ctx context.Context, r runner) (restore func() error, err error) {
	return setAside(ctx, r, `SELECT type, name, sql FROM sqlite_schema
WHERE tbl_name = 'Follows' AND type IN ('index', 'trigger') AND sql IS NOT NULL`,
		func(kind, name string) string {
			return fmt.Sprintf(`DROP %s "%s"`, strings.ToUpper(kind), strings.ReplaceAll(name, `"`, `""`))
		})
}

// Users.Id is AUTOINCREMENT, so SQLite gives no id twice: sqlite_sequence
// holds the highest it gave. It holds no row for Users before the first
// insert, and (for a table an EF Core app made without AUTOINCREMENT)
// may not exist at all; the highest id there is then the mark.
const sqliteSequenceExists = `SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_sequence'`

func (*sqliteDialect) lastUserID(ctx context.Context, r runner) (int64, error) {
	q := `SELECT coalesce(max(Id), 0) FROM Users`
	var seq int
	if err := r.queryRow(ctx, sqliteSequenceExists, nil, &seq); err != nil {
		return 0, err
	}
	if seq > 0 {
		q = `SELECT max(coalesce((SELECT max(Id) FROM Users), 0), coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'Users'), 0))`
	}
	var last int64
	err := r.queryRow(ctx, q, nil, &last)
	return last, err
}

// keepUserIDsAbove raises the Users sequence to last, never lowers
// it. SQLite lets sqlite_sequence be written like any table.
func (*sqliteDialect) keepUserIDsAbove(ctx context.Context, r runner, last int64) error {
	if last == 0 {
		return nil
	}
	var seq int
	if err := r.queryRow(ctx, sqliteSequenceExists, nil, &seq); err != nil {
		return err
	}
	if seq == 0 {
		return errors.New("the Users table has no AUTOINCREMENT sequence (sqlite_sequence is missing)")
	}
	if _, err := r.exec(ctx, `INSERT INTO sqlite_sequence (name, seq) SELECT 'Users', ?
WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'Users')`, last); err != nil {
		return err
	}
	_, err := r.exec(ctx, `UPDATE sqlite_sequence SET seq = ? WHERE name = 'Users' AND seq < ?`, last, last)
	return err
}

// sqliteImportMark is the user_version of a file being loaded by
// sqliteStartNewFile. SQLite leaves user_version to applications; neither
// this server nor EF Core uses it otherwise.
const sqliteImportMark = 0x466c4c64 // "FlLd"

// sqliteBusy says whether err is SQLite's SQLITE_BUSY (or one of its
// extended codes).
func sqliteBusy(err error) bool {
	se := (*sqlite.Error)(nil)
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// sqliteStartNewFile loads a new database without a write-ahead log: with
// journal_mode=MEMORY, the loaded pages are written once, into the file,
// rather than into the log and then copied into the file by a checkpoint
// (for 3 million follows, 450 MB twice). A failed import still rolls
// back, from the journal in memory, which holds only the few pages there
// were; but a process that dies while loading, or while committing,
// leaves a file that is neither the empty database nor the loaded one.
// So the file is marked first (user_version, committed in WAL mode), the
// server refuses a marked file (see integrityCheck), and the mark is
// cleared only after the loaded pages have been written and synced (the
// commit syncs the file, synchronous being FULL), in a commit of its
// own. Then the file goes back to WAL mode.
//
// Leaving WAL mode needs the file to itself; when another connection is
// reading it (SQLite says at once that it is busy), the import runs in
// WAL mode as any other. Out of WAL mode, the import may write the follow
// table's pages itself (see followPages), between its commit and the
// clearing of the mark.
func sqliteStartNewFile(ctx context.Context, conn *sql.Conn) (end func() error, writeTree bool, err error) {
	if _, err := conn.ExecContext(ctx, `PRAGMA user_version = `+strconv.Itoa(sqliteImportMark)); err != nil {
		return nil, false, err
	}
	var mode string
	err = conn.QueryRowContext(ctx, `PRAGMA journal_mode = MEMORY`).Scan(&mode)
	if sqliteBusy(err) {
		mode, err = "wal", nil
	}
	if err != nil {
		return nil, false, err
	}
	return func() error {
		// The transaction has ended; this runs even when ctx is done.
		ctx := context.Background()
		if _, err := conn.ExecContext(ctx, `PRAGMA user_version = 0`); err != nil {
			return err
		}
		if mode == "wal" {
			return nil
		}
		if err := conn.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode); err != nil {
			return err
		}
		if mode != "wal" {
			return fmt.Errorf("journal_mode is %s, not wal", mode)
		}
		return nil
	}, mode == "memory", nil
}
