package db

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// dialect is the seam between SQL databases: how to connect, which
// migrations to run, how times travel, how driver errors map to the store's
// errors, and the few statements whose text differs. Everything else in the
// store is written once.
type dialect struct {
	name   string // also the folder of its migrations
	driver string
	goose  goose.Dialect

	configure func(*sql.DB)
	// rebind turns the store's "?" placeholders into the driver's own.
	rebind func(string) string
	// timeArg and scanTime convert between time.Time and the column's form.
	timeArg  func(time.Time) any
	scanTime func(any) (time.Time, error)
	// classify maps driver errors to the store's sentinel errors, keeping
	// the driver error wrapped for logs.
	classify func(error) error

	// insertFollow inserts (FollowerId, FolloweeId) unless present and
	// returns the new row's CreatedAt; no row when the pair existed.
	insertFollow string
	insertUser   string

	// bulkSetup and bulkReset prepare a connection for a bulk import and
	// put it back. Rows are checked before they go in, so the import need
	// not pay for foreign key lookups on each.
	bulkSetup, bulkReset []string
}

func dialectFor(dsn string) (*dialect, string, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlserver://"):
		return nil, "", errors.New("SQL Server is not supported yet: use a SQLite path")
	case dsn == "":
		return nil, "", errors.New("no database given")
	default:
		return sqliteDialect(), sqliteDSN(dsn), nil
	}
}

// sqliteDSN adds the connection settings every pooled connection needs. They
// go in the DSN because a PRAGMA run with Exec reaches only one connection.
func sqliteDSN(dsn string) string {
	params := "_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

// sqliteTime is EF Core's TEXT form of a DateTime, always with seven
// fractional digits so that comparing texts compares times.
const sqliteTime = "2006-01-02 15:04:05.0000000"

func sqliteDialect() *dialect {
	return &dialect{
		name:   "sqlite",
		driver: "sqlite",
		goose:  goose.DialectSQLite3,
		configure: func(db *sql.DB) {
			// WAL lets readers run beside the one writer; a small pool
			// keeps the number of open files and page caches modest.
			db.SetMaxOpenConns(8)
			db.SetMaxIdleConns(8)
			db.SetConnMaxIdleTime(5 * time.Minute)
		},
		rebind:  func(q string) string { return q },
		timeArg: func(t time.Time) any { return t.UTC().Format(sqliteTime) },
		scanTime: func(v any) (time.Time, error) {
			switch v := v.(type) {
			case time.Time:
				return v.UTC(), nil
			case string:
				return parseSQLiteTime(v)
			case []byte:
				return parseSQLiteTime(string(v))
			}
			return time.Time{}, fmt.Errorf("unexpected time value %T", v)
		},
		classify: classifySQLite,
		// CreatedAt is the database's clock, as the column default would
		// set it, but never earlier than, nor equal to, the newest follow
		// already in either user's lists: SQLite's clock ticks in
		// milliseconds, and two follows in one tick would otherwise tie
		// and come back in id order rather than newest first. The bump
		// uses the four digits below the millisecond.
		insertFollow: `
INSERT INTO Follows (FollowerId, FolloweeId, CreatedAt)
SELECT ?1, ?2, CASE
    WHEN now > last THEN now
    ELSE substr(last, 1, 23) || printf('%04d', min(CAST(substr(last, 24) AS INTEGER) + 1, 9999))
  END
FROM (SELECT strftime('%Y-%m-%d %H:%M:%f', 'now') || '0000' AS now,
             max(coalesce((SELECT CreatedAt FROM Follows WHERE FolloweeId = ?2 ORDER BY CreatedAt DESC LIMIT 1), ''),
                 coalesce((SELECT CreatedAt FROM Follows WHERE FollowerId = ?1 ORDER BY CreatedAt DESC LIMIT 1), '')) AS last)
WHERE true
ON CONFLICT (FollowerId, FolloweeId) DO NOTHING
RETURNING CreatedAt`,
		insertUser: `INSERT INTO Users (Name) VALUES (?) RETURNING Id`,
		// A large page cache keeps the B-trees being filled in memory
		// rather than spilling and rereading them.
		bulkSetup: []string{`PRAGMA foreign_keys = OFF`, `PRAGMA cache_size = -65536`, `PRAGMA temp_store = MEMORY`},
		bulkReset: []string{`PRAGMA foreign_keys = ON`, `PRAGMA cache_size = -2000`, `PRAGMA temp_store = DEFAULT`},
	}
}

func parseSQLiteTime(s string) (time.Time, error) {
	// Rows written by other programs may carry fewer fractional digits or
	// none; the layout's 9s accept any number of them.
	t, err := time.Parse("2006-01-02 15:04:05.9999999", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse CreatedAt %q: %w", s, err)
	}
	return t, nil
}

func classifySQLite(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_CHECK:
		if strings.Contains(se.Error(), "CK_Follows_NoSelfFollow") {
			return fmt.Errorf("%w: %w", ErrSelfFollow, err)
		}
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		if strings.Contains(se.Error(), "Users.Name") {
			return fmt.Errorf("%w: %w", ErrNameTaken, err)
		}
	}
	return err
}
