package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
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
// Pool and page caches: four connections with a 4 MB page cache each.
// On two cores four connections keep both busy, and each connection's
// cache holds more of the pages that every request visits (the Users
// table is 6 MB on the harness's graph; a cache miss is a pread, 17% of
// the fan-out query's CPU with 1 MB caches). Against eight connections
// with 1 MB each, in local runs on the harness's graph
// (docs/decisions/sqlite-pool.md), the fan-out query ran 5-15% faster with a
// p99 a fifth lower, and the peak resident size was no higher (65-70 MB
// against 71): each pooled connection also keeps its own copy of every
// prepared statement. (With eight 1 MB caches, eight connections' caches
// had been most of the peak resident size at 32 concurrent requests.)
//
// Not mmap_size: reading through a mapping of the file skipped this
// build's one shared page-cache mutex and cut suggestions' CPU by about a
// quarter under eight callers, but every mapped page the process touched
// counted in its resident size (the start-up check alone touched the
// whole 500 MB file), and a read error on a mapped page stops the process
// (SIGBUS) instead of failing one statement.
const sqlitePoolSize = 4

// sqliteCacheSize is every pooled connection's page cache (negative: in
// KiB), set in the DSN and set back after a bulk import widened it.
const sqliteCacheSize = "-4000"

func sqliteDSN(dsn string) string {
	params := "_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=cache_size(" + sqliteCacheSize + ")&_txlock=immediate"
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

// sqliteTime is EF Core's TEXT form of a DateTime, always with seven
// fractional digits so that comparing texts compares times.
const sqliteTime = time.DateTime + ".0000000"

func sqliteDialect() *dialect {
	d := &dialect{
		name:   "sqlite",
		driver: "sqlite",
		goose:  goose.DialectSQLite3,
		configure: func(db *sql.DB) {
			// WAL lets readers run beside the one writer; see
			// sqlitePoolSize.
			db.SetMaxOpenConns(sqlitePoolSize)
			db.SetMaxIdleConns(sqlitePoolSize)
			db.SetConnMaxIdleTime(5 * time.Minute)
		},
		rebind:  func(q string) string { return q },
		timeArg: func(t time.Time) any { return formatSQLiteTime(t) },
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
		// A file an import did not finish loading (see sqliteFreshBulk)
		// is refused, whatever quick_check finds; that comes first, as
		// quick_check may run out of time.
		integrityCheck: `SELECT 'an import into this file did not finish (the process ended while loading): delete the file and import again'
FROM pragma_user_version WHERE user_version = ` + strconv.Itoa(sqliteImportMark) + `
UNION ALL SELECT * FROM pragma_quick_check`,
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
		insertUser: `INSERT INTO Users (Name, SecurityStamp) VALUES (?, ?) RETURNING Id`,
		// The write lock, taken when the transaction begins, orders the
		// event Ids: there is no lockEvents. Other processes poll.
		insertEvent: insertEventReturning,
		idSet:       `SELECT value FROM json_each(?)`,
		userByName:  `SELECT ` + userColumns + ` FROM Users AS u WHERE u.Name = ? COLLATE NOCASE`,
		listUsers:   listUsersLimit,
		followsExist: `SELECT f.FollowerId, f.FolloweeId, f.Muted, f.NotificationsEnabled FROM json_each(?) AS p
JOIN Follows AS f ON f.FollowerId = p.value ->> 0 AND f.FolloweeId = p.value ->> 1`,
		blocksExist: `SELECT b.BlockerId, b.BlockedId FROM json_each(?) AS p
JOIN Blocks AS b ON b.BlockerId = p.value ->> 0 AND b.BlockedId = p.value ->> 1`,
		mutualCounts:          `SELECT k.value, ` + mutualCount("k.value") + ` FROM json_each(?) AS k`,
		adoption:              adopt.SQLite(),
		arg:                   func(v any) any { return v },
		setAsideFollowIndexes: sqliteSetAsideFollowIndexes,
		freshBulk:             sqliteFreshBulk,
		setImportedCounts: `UPDATE Users SET FollowerCount = c.value ->> 1, FollowingCount = c.value ->> 2
FROM json_each(?) AS c WHERE Users.Id = c.value ->> 0`,
		lastUserID:       sqliteLastUserID,
		keepUserIDsAbove: sqliteKeepUserIDsAbove,
		// The rows go in at the end of the table and of its primary key,
		// which needs no large page cache. The page cache's size also
		// bounds the runs in which CREATE INDEX sorts, in temporary files
		// (kept in memory, temp_store=MEMORY, the sort is one run of all
		// the rows): 32 MB runs, merged, cost 6.0 s of CPU to build the
		// (FolloweeId, CreatedAt, FollowerId) index of 2.9 million
		// follows, against 8.2 s in 128 MB runs and 10.6 s in one.
		bulkSetup: []string{`PRAGMA foreign_keys = OFF`, `PRAGMA cache_size = -32768`},
		bulkReset: []string{`PRAGMA foreign_keys = ON`, `PRAGMA cache_size = ` + sqliteCacheSize},
	}
	d.pagesQuery = func(kind listKind, way pageWay, qs []PageQuery) (string, []any) { return sqlitePages(d, kind, way, qs) }
	d.suggestionFollowees = sqliteSuggestionFolloweesQuery
	d.suggestionLists = sqliteSuggestionLists
	d.bumpFollowVersions = `INSERT INTO FollowVersions (UserId, Version) SELECT value, 1 FROM json_each(?) WHERE true
ON CONFLICT (UserId) DO UPDATE SET Version = Version + 1`
	return d
}

// listUsersLimit is UsersPage's statement where LIMIT is the way to say it.
var listUsersLimit = fillUsers(`SELECT ` + userColumns + ` FROM Users AS u WHERE u.Id BETWEEN ? AND ? AND ` + active("u") + ` ORDER BY u.Id {order} LIMIT ?`)

// formatSQLiteTime is t.UTC().Format(sqliteTime), written digit by digit:
// an import formats every follow's time, and Format was 8% of the
// loading goroutine's CPU (0.04 of 0.52 s, the small graph's profile).
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
// (readDateTime): time.Parse was 3% of the CPU of a query listing 500
// follows, and a third of the time reading follows.csv took. Anything
// else goes to time.Parse, which also says what is wrong with it.
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
	// The rest by primary code: their extended codes say only where.
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("%w: %w", ErrStorageFull, err)
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	case sqlite3.SQLITE_CANTOPEN:
		return fmt.Errorf("%w (the server must be able to write the file, and its folder for the -wal and -shm files)", err)
	}
	return err
}

// The list statements answer one query for each of many users in a single
// statement: one UNION ALL branch per user, each of which seeks that user's
// index range and stops at its LIMIT. Unlike ROW_NUMBER() over partitions,
// the cost does not grow with the size of a popular user's list. Each
// branch's first column is the position of its query in the batch.
//
// A branch compares the cursors its page gives, and only those; see
// pageBranch for how its LIMIT is written. A backward page's branch reads
// the index up from its cursor (see listSeeks), as cheaply as a forward
// page's reads it down.
//
// Lists leave out deactivated users. They read only what the keyset index
// covers (a follow's settings are looked up apart, for the viewer's own
// follows): reading Muted here made the first page of fifty lists four
// times slower (5.2 ms against 1.2 ms), a table lookup per row.
var sqliteListBranches = fillLists(`SELECT * FROM (
  SELECT ? AS k, {e}.CreatedAt, ` + userColumns + `
  FROM {table} AS {e} JOIN ` + activeUser("u", "{e}.{other}") + `
  WHERE {e}.{owner} = ?/*from*/ AND ({e}.CreatedAt, {e}.{other}) {from} (?, ?)/*end*//*to*/ AND ({e}.CreatedAt, {e}.{other}) {to} (?, ?)/*end*/{also}
  ORDER BY {e}.CreatedAt {order}, {e}.{other} {order} LIMIT /*limit*/)`)

// limitBuckets are the LIMITs written into pages after the first: the
// smallest that holds first+1 rows, the extra rows dropped in Go.
var limitBuckets = []int{11, 21, 51, 101}

// pageBranch makes a list branch's text, comparing the cursor a page
// starts at (from), the one it stops at (to), both or neither. A branch
// that compares none binds its LIMIT. One that compares a cursor has its
// LIMIT written in as one of limitBuckets (our constant, never a client's
// value): SQLite re-prepares, on every run, a statement whose bound LIMIT
// meets a bound range on an index, which for fifty branches tripled its
// cost (measured: 2.9 ms against 0.9 ms).
func pageBranch(tmpl string, from, to bool, limit int) string {
	t := section(section(tmpl, "from", from), "to", to)
	if !from && !to {
		return strings.Replace(t, "/*limit*/", "?", 1)
	}
	return strings.Replace(t, "/*limit*/", strconv.Itoa(limit), 1)
}

// section keeps, or cuts out, the text of tmpl between /*name*/ and the
// /*end*/ after it.
func section(tmpl, name string, keep bool) string {
	head, rest, _ := strings.Cut(tmpl, "/*"+name+"*/")
	body, tail, _ := strings.Cut(rest, "/*end*/")
	if keep {
		return head + body + tail
	}
	return head + tail
}

// sqliteSetAsideFollowIndexes drops the follow table's secondary indexes
// and triggers, and returns what recreates them from their own saved SQL.
// Building an index once from all rows is far faster than keeping it
// through millions of inserts; without the count triggers, Import counts
// the follows itself. Even the (FollowerId, CreatedAt, FolloweeId) index,
// into which rows that come by follower would go near its end, is
// cheaper to build afterwards (from rows in follower order, its sort has
// little to do) than to keep: 0.31 s more loading 250,000 follows against
// 0.13 s building it, in CPU time.
func sqliteSetAsideFollowIndexes(ctx context.Context, r runner) (restore func() error, err error) {
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

func sqliteLastUserID(ctx context.Context, r runner) (int64, error) {
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

// sqliteKeepUserIDsAbove raises the Users sequence to last, never lowers
// it. SQLite lets sqlite_sequence be written like any table.
func sqliteKeepUserIDsAbove(ctx context.Context, r runner, last int64) error {
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

// sqlitePages answers a batch of page queries that go one way with one
// UNION ALL statement of per-user branches (see pageBranch), padded to a
// batch size.
func sqlitePages(d *dialect, kind listKind, way pageWay, qs []PageQuery) (string, []any) {
	// Every branch compares a cursor at an end of its range when any page
	// of the batch gives one there, a page that gives none comparing the
	// one past that end of its list; and then the LIMIT is written in.
	from, to, limit := false, false, 0
	for _, q := range qs {
		f, t := q.cursors()
		from = from || !f.IsZero()
		to = to || !t.IsZero()
		limit = max(limit, q.size()+1)
	}
	if from || to {
		for _, b := range limitBuckets {
			if b >= limit {
				limit = b
				break
			}
		}
	}
	args := func(k int, q PageQuery) []any {
		a := []any{k, q.User}
		f, t := q.ends()
		if from {
			a = append(a, d.timeArg(f.At), f.ID)
		}
		if to {
			a = append(a, d.timeArg(t.At), t.ID)
		}
		if !from && !to {
			a = append(a, q.size()+1)
		}
		return a
	}
	return unionBatch(pageBranch(sqliteListBranches[way][kind], from, to, limit), len(qs),
		func(i int) []any { return args(i, qs[i]) }, args(-1, PageQuery{}))
}

// batchSizes are the branch counts a batch statement is padded to, so that
// a handful of statement texts, each prepared once, serve every batch.
var batchSizes = []int{1, 2, 4, 8, 16, 32, 64, 128}

// unionBatch makes one statement of n branches, padded with branches that
// match nothing up to a batch size, and its parameters: args gives a
// query's, pad a padding branch's.
func unionBatch(branch string, n int, args func(i int) []any, pad []any) (string, []any) {
	size := batchSizes[len(batchSizes)-1]
	for _, b := range batchSizes {
		if b >= n {
			size = b
			break
		}
	}
	var params []any
	for i := range size {
		if i < n {
			params = append(params, args(i)...)
		} else {
			params = append(params, pad...)
		}
	}
	return unionText(branch, size), params
}

type unionKey struct {
	branch string
	size   int
}

var unionTexts sync.Map // unionKey -> string

// unionText is size copies of branch joined by UNION ALL, built once.
func unionText(branch string, size int) string {
	k := unionKey{branch, size}
	if t, ok := unionTexts.Load(k); ok {
		return t.(string)
	}
	t := strings.TrimSuffix(strings.Repeat(branch+"\nUNION ALL\n", size), "\nUNION ALL\n")
	unionTexts.Store(k, t)
	return t
}

// sqliteImportMark is the user_version of a file being loaded by
// sqliteFreshBulk. SQLite leaves user_version to applications; neither
// this server nor EF Core uses it otherwise.
const sqliteImportMark = 0x466c4c64 // "FlLd"

// sqliteBusy says whether err is SQLite's SQLITE_BUSY (or one of its
// extended codes).
func sqliteBusy(err error) bool {
	se := (*sqlite.Error)(nil)
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// sqliteFreshBulk loads a new database without a write-ahead log: with
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
func sqliteFreshBulk(ctx context.Context, conn *sql.Conn) (end func() error, pages bool, err error) {
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
