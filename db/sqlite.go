package db

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"follows/db/adopt"
)

// sqliteDSN adds the connection settings every pooled connection needs. They
// go in the DSN because a PRAGMA run with Exec reaches only one connection.
//
// Pool and page caches: four connections with a 2 MB page cache each.
// On two cores four connections keep both busy. Against eight
// connections with 1 MB each, the fan-out query ran faster with a lower
// p99, and the peak resident size was no higher: each pooled connection
// also keeps its own copy of every prepared statement. A cached page
// costs twice its size in memory (this build's allocator gives SQLite's
// 4.3 KB page entries 8 KiB slots), so 4 MB caches held 30 MiB, a
// quarter of the server's peak; halved, the fan-out, profile and
// many-viewers suggestions queries ran no slower
// (docs/decisions/sqlite-pool.md).
//
// Not mmap_size: reading through a mapping of the file skipped this
// build's one shared page-cache mutex and cut suggestions' CPU under
// concurrent callers, but every mapped page the process touched counted
// in its resident size (the start-up check alone touched the whole
// file), and a read error on a mapped page stops the process (SIGBUS)
// instead of failing one statement (docs/decisions/sqlite-pool.md).
const sqlitePoolSize = 4

// sqliteCacheSize is every pooled connection's page cache (negative: in
// KiB), set in the DSN and set back after a bulk import widened it.
const sqliteCacheSize = "-2000"

// sqliteBusyTimeout is how long a connection waits for the write lock
// before its statement fails with SQLITE_BUSY (ErrBusy), unless the DSN
// sets its own (busy_timeout, or the driver's _busy_timeout or _timeout).
const sqliteBusyTimeout = "_pragma=busy_timeout(10000)"

func sqliteDSN(dsn string) string {
	params := "_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=cache_size(" + sqliteCacheSize + ")&_txlock=immediate"
	if !setsBusyTimeout(dsn) {
		// The driver runs the busy_timeout pragmas first, in no set
		// order among themselves: two would leave the DSN's to chance.
		params += "&" + sqliteBusyTimeout
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

// setsBusyTimeout reports whether a SQLite DSN sets its own busy timeout.
func setsBusyTimeout(dsn string) bool {
	_, query, ok := strings.Cut(dsn, "?")
	if !ok {
		return false
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return false
	}
	if q.Has("_busy_timeout") || q.Has("_timeout") {
		return true
	}
	for _, p := range q["_pragma"] {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), "busy_timeout") {
			return true
		}
	}
	return false
}

// sqliteTime is EF Core's TEXT form of a DateTime, always with seven
// fractional digits so that comparing texts compares times.
const sqliteTime = time.DateTime + ".0000000"

// sqliteDialect is SQLite, through modernc.org/sqlite: a file the server
// opens itself, one writer at a time, readers beside it in WAL mode. Its
// files: this one (connecting, times, errors, the statements that
// differ), sqlite_lists.go (the list statements), sqlite_suggestions.go,
// sqlite_import.go (bulk import, a new file's load), sqlite_file.go (the
// file, its integrity check), sqlite_importmark.go (the mark of an
// unfinished import), sqlite_followtree.go (a new file's follow table
// written as b-tree pages by package sqlitebtree, and checked),
// sqlite_followversions.go (the list cache's triggers); adoption is
// db/adopt/sqlite.go.
type sqliteDialect struct{}

var (
	_ dialect          = (*sqliteDialect)(nil)
	_ integrityChecker = (*sqliteDialect)(nil)
	_ fileDatabase     = (*sqliteDialect)(nil)
	_ listSuggester    = (*sqliteDialect)(nil)
	_ bulkLoader       = (*sqliteDialect)(nil)
	_ countSetter      = (*sqliteDialect)(nil)
	_ newFileLoader    = (*sqliteDialect)(nil)
	_ adopter          = (*sqliteDialect)(nil)
)

func (*sqliteDialect) name() string                { return "sqlite" }
func (*sqliteDialect) driver() string              { return "sqlite" }
func (*sqliteDialect) gooseDialect() goose.Dialect { return goose.DialectSQLite3 }

func (*sqliteDialect) configure(db *sql.DB) {
	// WAL lets readers run beside the one writer; see sqlitePoolSize.
	db.SetMaxOpenConns(sqlitePoolSize)
	db.SetMaxIdleConns(sqlitePoolSize)
	db.SetConnMaxIdleTime(5 * time.Minute)
}

func (*sqliteDialect) rebind(q string) string   { return q }
func (*sqliteDialect) arg(v any) any            { return v }
func (*sqliteDialect) timeArg(t time.Time) any  { return formatSQLiteTime(t) }
func (*sqliteDialect) classify(err error) error { return classifySQLite(err) }
func (*sqliteDialect) exportTx() *sql.TxOptions { return &sql.TxOptions{ReadOnly: true} }
func (*sqliteDialect) adoption() adopt.Dialect  { return sqliteAdoptionOnce() }
func (*sqliteDialect) insertUser() string       { return insertUserReturning }
func (*sqliteDialect) insertEvent() string      { return insertEventReturning }

// sqliteIDSet selects the ids of a JSON array parameter.
const sqliteIDSet = `SELECT value FROM json_each(?)`

func (*sqliteDialect) idSet() string        { return sqliteIDSet }
func (*sqliteDialect) listUsers() [2]string { return listUsersLimit }
func (*sqliteDialect) insertFollow() string { return sqliteInsertFollow }
func (*sqliteDialect) followsExist() string { return sqliteFollowsExist }
func (*sqliteDialect) blocksExist() string  { return sqliteBlocksExist }
func (*sqliteDialect) userByName() string {
	return `SELECT ` + userColumns + ` FROM Users AS u WHERE u.Name = ? COLLATE NOCASE`
}
func (*sqliteDialect) mutualCounts() string {
	return `SELECT k.value, ` + mutualCount("k.value") + ` FROM json_each(?) AS k`
}

func (*sqliteDialect) scanTime(v any) (time.Time, error) {
	switch v := v.(type) {
	case time.Time:
		return v.UTC(), nil
	case string:
		return parseSQLiteTime(v)
	case []byte:
		return parseSQLiteTime(string(v))
	}
	return time.Time{}, fmt.Errorf("unexpected time value %T", v)
}

// sqliteInsertFollow's CreatedAt is the database's clock, as the column
// default would set it, but never earlier than, nor equal to, the newest
// follow already in either user's lists: SQLite's clock ticks in
// milliseconds, and two follows in one tick would otherwise tie and come
// back in id order rather than newest first. The bump uses the four
// digits below the millisecond. There is no lockEvents: the write lock,
// taken when the transaction begins, orders the event Ids; other
// processes poll.
const sqliteInsertFollow = `
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
RETURNING CreatedAt`

const (
	sqliteFollowsExist = `SELECT f.FollowerId, f.FolloweeId, f.Muted, f.NotificationsEnabled FROM json_each(?) AS p
JOIN Follows AS f ON f.FollowerId = p.value ->> 0 AND f.FolloweeId = p.value ->> 1`
	sqliteBlocksExist = `SELECT b.BlockerId, b.BlockedId FROM json_each(?) AS p
JOIN Blocks AS b ON b.BlockerId = p.value ->> 0 AND b.BlockedId = p.value ->> 1`
)

// sqliteAdoptionOnce is SQLite's adoption, made once.
var sqliteAdoptionOnce = sync.OnceValue(adopt.SQLite)

// formatSQLiteTime is t.UTC().Format(sqliteTime), written digit by digit:
// an import formats every follow's time, and Format was a visible share
// of the loading goroutine's CPU (docs/decisions/import-speed.md).
func formatSQLiteTime(t time.Time) string {
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.Format(sqliteTime)
	}
	h, mi, sec := t.Clock()
	var b [len(sqliteTime)]byte
	put := func(at, width, v int) {
		for i := at + width - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, 4, y)
	b[4] = '-'
	put(5, 2, int(mo))
	b[7] = '-'
	put(8, 2, d)
	b[10] = ' '
	put(11, 2, h)
	b[13] = ':'
	put(14, 2, mi)
	b[16] = ':'
	put(17, 2, sec)
	b[19] = '.'
	put(20, 7, t.Nanosecond()/100)
	return string(b[:])
}

func parseSQLiteTime(s string) (time.Time, error) {
	// Rows written by other programs may carry fewer fractional digits or
	// none: a layout without a fraction, as time.DateTime is, takes any
	// number of them.
	t, err := ParseDateTime(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse CreatedAt %q: %w", s, err)
	}
	return t, nil
}

// ParseDateTime reads a time written as time.DateTime, with a point and
// one to nine fractional digits or without, in UTC, as time.Parse(
// time.DateTime, s) reads it: SQLite's CreatedAt texts and the CSV form
// of a graph (graphcsv). That usual form is read digit by digit
// (readDateTime): time.Parse was a visible share of the CPU of a query
// listing follows, and much of the time reading follows.csv took
// (docs/decisions/executor.md). Anything else goes to time.Parse, which
// also says what is wrong with it.
func ParseDateTime(s string) (time.Time, error) {
	if t, ok := readDateTime(s); ok {
		return t, nil
	}
	return time.Parse(time.DateTime, s)
}

// readDateTime reads YYYY-MM-DD HH:MM:SS, with a point and one to nine
// fractional digits or without, to the time time.Parse would read;
// anything else, valid or not, it leaves to time.Parse.
func readDateTime(s string) (time.Time, bool) {
	if len(s) < 19 || len(s) == 20 || len(s) > 29 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':' || len(s) > 19 && s[19] != '.' {
		return time.Time{}, false
	}
	ok := true
	num := func(from, to int) int {
		n := 0
		for i := from; i < to; i++ {
			c := s[i] - '0'
			if c > 9 {
				ok = false
			}
			n = n*10 + int(c)
		}
		return n
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, minute, sec := num(11, 13), num(14, 16), num(17, 19)
	nsec := 0
	if len(s) > 19 {
		nsec = num(20, len(s))
		for range 29 - len(s) {
			nsec *= 10
		}
	}
	if !ok || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day { // past the month's end
		return time.Time{}, false
	}
	return t, true
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
		return foreignKeyViolation(err)
	case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return fmt.Errorf("%w: %w", errDuplicate, err)
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		if strings.Contains(se.Error(), "Users.Name") {
			return fmt.Errorf("%w: %w", ErrNameTaken, err)
		}
	}
	if se.Code() == sqlite3.SQLITE_BUSY_SNAPSHOT {
		// A read transaction that went on to write found its snapshot
		// stale: nothing waited, and a new transaction reads anew.
		return busy(err)
	}
	// The rest by primary code: their extended codes say only where.
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY:
		// The busy handler has already retried for the busy timeout
		// (see sqliteDSN); running the transaction again would wait as
		// long again, past what the operator set and most requests'
		// deadlines.
		return fmt.Errorf("%w: %w", ErrBusy, err)
	case sqlite3.SQLITE_LOCKED:
		// A table locked by another statement of the process: the
		// busy handler does not wait for it, a new transaction may find
		// it free.
		return busy(err)
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("%w: %w", ErrStorageFull, err)
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	case sqlite3.SQLITE_CANTOPEN:
		return fmt.Errorf("%w (the server must be able to write the file, and its folder for the -wal and -shm files)", err)
	}
	return err
}
