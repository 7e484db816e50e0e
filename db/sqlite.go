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
)

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
const sqliteTime = time.DateTime + ".0000000"

func sqliteDialect() *dialect {
	d := &dialect{
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
		idSet:      `SELECT value FROM json_each(?)`,
		userByName: `SELECT ` + userColumns + ` FROM Users AS u WHERE u.Name = ? COLLATE NOCASE`,
		listUsers:  listUsersLimit,
		followsExist: `SELECT f.FollowerId, f.FolloweeId, f.Muted, f.NotificationsEnabled FROM json_each(?) AS p
JOIN Follows AS f ON f.FollowerId = p.value ->> 0 AND f.FolloweeId = p.value ->> 1`,
		blocksExist: `SELECT b.BlockerId, b.BlockedId FROM json_each(?) AS p
JOIN Blocks AS b ON b.BlockerId = p.value ->> 0 AND b.BlockedId = p.value ->> 1`,
		mutualCounts: `SELECT k.value, ` + mutualCount("k.value") + ` FROM json_each(?) AS k`,
		adoption: &adoption{
			tables:     `SELECT name FROM sqlite_schema WHERE type = 'table'`,
			exists:     `SELECT COUNT(*) FROM sqlite_schema WHERE name = ?`,
			laterSteps: ", and write every CreatedAt in one fixed form (seven fractional digits)",
		},
		arg:                   func(v any) any { return v },
		setAsideFollowIndexes: sqliteSetAsideFollowIndexes,
		// A large page cache keeps the B-trees being filled in memory
		// rather than spilling and rereading them.
		bulkSetup: []string{`PRAGMA foreign_keys = OFF`, `PRAGMA cache_size = -65536`, `PRAGMA temp_store = MEMORY`},
		bulkReset: []string{`PRAGMA foreign_keys = ON`, `PRAGMA cache_size = -2000`, `PRAGMA temp_store = DEFAULT`},
	}
	d.pagesQuery = func(kind listKind, qs []PageQuery) (string, []any) { return sqlitePages(d, kind, qs) }
	d.suggestionsQuery = sqliteSuggestions
	return d
}

// listUsersLimit is ListUsers' statement where LIMIT is the way to say it.
var listUsersLimit = `SELECT ` + userColumns + ` FROM Users AS u WHERE u.Id > ? AND ` + active("u") + ` ORDER BY u.Id LIMIT ?`

func parseSQLiteTime(s string) (time.Time, error) {
	// Rows written by other programs may carry fewer fractional digits or
	// none: a layout without a fraction, as time.DateTime is, takes any
	// number of them.
	t, err := time.Parse(time.DateTime, s)
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
	case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return fmt.Errorf("%w: %w", errDuplicate, err)
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		if strings.Contains(se.Error(), "Users.Name") {
			return fmt.Errorf("%w: %w", ErrNameTaken, err)
		}
	}
	return err
}

// The list statements answer one query for each of many users in a single
// statement: one UNION ALL branch per user, each of which seeks that user's
// index range and stops at its LIMIT. Unlike ROW_NUMBER() over partitions,
// the cost does not grow with the size of a popular user's list. Each
// branch's first column is the position of its query in the batch.
//
// A branch compares a cursor only for pages after the first; see
// pageBranch for how its LIMIT is written.
//
// Lists leave out deactivated users. They read only what the keyset index
// covers (a follow's settings are looked up apart, for the viewer's own
// follows): reading Muted here made the first page of fifty lists four
// times slower (5.2 ms against 1.2 ms), a table lookup per row.
var sqliteListBranches = fillLists(`SELECT * FROM (
  SELECT ? AS k, {e}.CreatedAt, ` + userColumns + `
  FROM {table} AS {e} JOIN ` + activeUser("u", "{e}.{other}") + `
  WHERE {e}.{owner} = ? /*after*/AND ({e}.CreatedAt, {e}.{other}) < (?, ?)/*end*/{also}
  ORDER BY {e}.CreatedAt DESC, {e}.{other} DESC LIMIT /*limit*/)`)

// suggestionsBranch is one user's suggestions: the candidates (see
// suggestionCandidates) that are active, most followed first.
var suggestionsBranch = `SELECT * FROM (
  SELECT ? AS k, s.Via, ` + userColumns + `
  FROM (` + suggestionCandidates("?", "f1.FollowerId") + `) AS s
  JOIN ` + activeUser("u", "s.Id") + `
  ORDER BY s.Via DESC, u.Name ASC, s.Id ASC LIMIT ?)`

// limitBuckets are the LIMITs written into pages after the first: the
// smallest that holds first+1 rows, the extra rows dropped in Go.
var limitBuckets = []int{11, 21, 51, 101}

// pageBranch makes a list branch's text. A first page compares no cursor
// and binds its LIMIT. A later page compares the cursor and has its LIMIT
// written in as one of limitBuckets (our constant, never a client's value):
// SQLite re-prepares, on every run, a statement whose bound LIMIT meets a
// bound range on an index, which for fifty branches tripled its cost
// (measured: 2.9 ms against 0.9 ms).
func pageBranch(tmpl string, after bool, limit int) string {
	head, rest, _ := strings.Cut(tmpl, "/*after*/")
	cond, tail, _ := strings.Cut(rest, "/*end*/")
	if !after {
		return head + strings.Replace(tail, "/*limit*/", "?", 1)
	}
	return head + cond + strings.Replace(tail, "/*limit*/", strconv.Itoa(limit), 1)
}

// sqliteSetAsideFollowIndexes drops the follow table's secondary indexes
// and triggers, and returns what recreates them from their own saved SQL.
// Building an index once from all rows is far faster than keeping it
// through millions of inserts; without the count triggers, Import
// recounts the users it touched once the indexes are back.
func sqliteSetAsideFollowIndexes(ctx context.Context, r runner) (restore func() error, err error) {
	return setAside(ctx, r, `SELECT type, name, sql FROM sqlite_schema
WHERE tbl_name = 'Follows' AND type IN ('index', 'trigger') AND sql IS NOT NULL`,
		func(kind, name string) string {
			return fmt.Sprintf(`DROP %s "%s"`, strings.ToUpper(kind), strings.ReplaceAll(name, `"`, `""`))
		})
}

// sqlitePages answers a batch of page queries with one UNION ALL statement
// of per-user branches (see pageBranch), padded to a batch size.
func sqlitePages(d *dialect, kind listKind, qs []PageQuery) (string, []any) {
	tmpl := sqliteListBranches[kind]
	// A batch is all first pages, or else every branch compares a cursor,
	// a first page's being one past the end of its list.
	after, limit := false, 0
	for _, q := range qs {
		after = after || !q.After.IsZero()
		limit = max(limit, q.First+1)
	}
	args := func(i int) []any {
		q := qs[i]
		return []any{i, q.User, q.First + 1}
	}
	pad := []any{-1, 0, 0}
	if after {
		for _, b := range limitBuckets {
			if b >= limit {
				limit = b
				break
			}
		}
		end := d.timeArg(endOfList.At)
		args = func(i int) []any {
			q := qs[i]
			if q.After.IsZero() {
				return []any{i, q.User, end, endOfList.ID}
			}
			return []any{i, q.User, d.timeArg(q.After.At), q.After.ID}
		}
		pad = []any{-1, 0, end, 0}
	}
	return unionBatch(pageBranch(tmpl, after, limit), len(qs), args, pad)
}

func sqliteSuggestions(qs []SuggestionQuery) (string, []any) {
	return unionBatch(suggestionsBranch, len(qs),
		func(i int) []any { return []any{i, qs[i].User, qs[i].First} }, []any{-1, 0, 0})
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
