package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"follows/db/adopt"
)

// PostgreSQL, through pgx's database/sql driver, for teams that run several
// server instances on one database. Only what differs from the other
// dialects is here: the placeholders ($1...) and the quoting of the
// model's PascalCase names (see rebindPostgres), LATERAL with a per-user
// LIMIT over one JSON batch parameter, timestamptz times, and SQLSTATEs.
//
// The tables carry the names EF Core's Npgsql provider gives the model
// ("Users", "FollowerId", PK_Follows...), so an EF Core app can share the
// database.
func postgresDialect() *dialect {
	return &dialect{
		name:   "postgres",
		driver: "pgx",
		goose:  goose.DialectPostgres,
		configure: func(db *sql.DB) {
			// Every instance holds up to this many of the server's
			// max_connections (100 by default): see the README.
			db.SetMaxOpenConns(16)
			db.SetMaxIdleConns(16)
			db.SetConnMaxIdleTime(5 * time.Minute)
			db.SetConnMaxLifetime(time.Hour)
		},
		rebind:   rebindPostgres,
		timeArg:  func(t time.Time) any { return t.UTC() },
		scanTime: scanPostgresTime,
		classify: classifyPostgres,
		arg:      postgresArg,
		sessionLocker: func() (lock.SessionLocker, error) {
			// An advisory lock held by the migrating session: the other
			// instances poll for it each second, for up to five minutes.
			return lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
		},
		// Row locks that queue for each other: FOR NO KEY UPDATE is what
		// the count trigger's UPDATE takes anyway, so taking it first
		// costs no concurrency. FOR SHARE would deadlock two follows of
		// one user, each waiting for the other's share to turn into the
		// trigger's update. FOR UPDATE, for a delete, also waits for the
		// foreign-key checks of follows being inserted by other writers.
		actLock:    lockClause{suffix: " FOR NO KEY UPDATE"},
		aroundLock: lockClause{suffix: " FOR UPDATE"},
		// The column default sets CreatedAt (clock_timestamp(), in
		// microseconds); a conflict with an existing or concurrent follow of
		// the pair returns no row, and the follow is "already".
		insertFollow: `INSERT INTO Follows (FollowerId, FolloweeId) VALUES (?, ?)
ON CONFLICT (FollowerId, FolloweeId) DO NOTHING RETURNING CreatedAt`,
		insertUser: `INSERT INTO Users (Name, SecurityStamp) VALUES (?, ?) RETURNING Id`,
		// One advisory lock (its key is "FollowEv" in ASCII) held to the commit orders the event Ids; the
		// notification, sent on commit, wakes every listening process.
		lockEvents:   `SELECT pg_advisory_xact_lock(5075394518052193654)`,
		insertEvent:  insertEventReturning,
		notifyEvents: `SELECT pg_notify('` + eventChannel + `', ?)`,
		lastUserID:   postgresLastUserID,
		idSet:        postgresIDSet,
		// lower(Name) is what IX_Users_Name indexes.
		userByName: `SELECT ` + userColumns + ` FROM Users AS u WHERE lower(u.Name) = lower(?)`,
		listUsers:  listUsersLimit,
		followsExist: `SELECT f.FollowerId, f.FolloweeId, f.Muted, f.NotificationsEnabled FROM jsonb_array_elements(?::jsonb) AS p
JOIN Follows AS f ON f.FollowerId = (p.value ->> 0)::integer AND f.FolloweeId = (p.value ->> 1)::integer`,
		blocksExist: `SELECT b.BlockerId, b.BlockedId FROM jsonb_array_elements(?::jsonb) AS p
JOIN Blocks AS b ON b.BlockerId = (p.value ->> 0)::integer AND b.BlockedId = (p.value ->> 1)::integer`,
		mutualCounts: `SELECT k.id, ` + mutualCount("k.id") + ` FROM (` + postgresIDSet + `) AS k(id)`,
		pagesQuery: func(kind listKind, way pageWay, qs []PageQuery) (string, []any) {
			return postgresListTexts[way][kind], []any{jsonPages(qs, postgresTime)}
		},
		suggestionsQuery: func(qs []SuggestionQuery) (string, []any) {
			return postgresSuggestionsText, []any{jsonSuggestions(qs)}
		},
		adoption:              adopt.Postgres(),
		setAsideFollowIndexes: postgresSetAsideFollowIndexes,
		copyRows:              copyPostgres,
		// Memory for rebuilding the set-aside indexes in one sort rather
		// than in runs merged from disk; the bulk connection's alone.
		bulkSetup:        []string{`SET maintenance_work_mem = '256MB'`},
		bulkReset:        []string{`RESET maintenance_work_mem`},
		keepUserIDsAbove: postgresKeepUserIDsAbove,
		afterImport: []string{
			// Imported users keep their ids, which the identity
			// sequence did not give: it moves past the highest, never
			// back (a deleted user's id is not given again).
			`SELECT setval(s.seq, GREATEST(m.top, COALESCE(pg_sequence_last_value(s.seq), 0)))
FROM (SELECT pg_get_serial_sequence('"Users"', 'Id')::regclass AS seq) AS s,
     (SELECT max("Id") AS top FROM "Users") AS m
WHERE m.top IS NOT NULL`,
			// The planner's statistics describe the tables as they are
			// now, before the first query rather than when autovacuum
			// gets round to it.
			`ANALYZE "Users", "Follows"`,
		},
	}
}

// postgresFollowsAside are the objects on Follows that a bulk import sets
// aside, with the statements that make them again: the secondary indexes
// (not the primary key's, which finds duplicate rows as they come), the
// triggers the server made (the counts'), and the foreign keys, whose
// checks, a lookup in Users for each end of each row, made loading 3.3
// million follows take 102 s rather than 20 s. The import checks both
// ends of every row itself, and adding the keys back checks all rows
// again in one pass.
const postgresFollowsAside = `SELECT 'INDEX', i.indexname, i.indexdef FROM pg_indexes AS i
WHERE i.schemaname = current_schema() AND i.tablename = 'Follows'
  AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conrelid = '"Follows"'::regclass AND c.conname = i.indexname)
UNION ALL
SELECT 'TRIGGER', t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger AS t
WHERE t.tgrelid = '"Follows"'::regclass AND NOT t.tgisinternal
UNION ALL
SELECT 'CONSTRAINT', c.conname, 'ALTER TABLE "Follows" ADD CONSTRAINT ' || quote_ident(c.conname) || ' ' || pg_get_constraintdef(c.oid)
FROM pg_constraint AS c WHERE c.conrelid = '"Follows"'::regclass AND c.contype = 'f'`

// postgresSetAsideFollowIndexes drops the follow table's secondary
// indexes, count trigger and foreign keys (postgresFollowsAside), and
// returns what recreates them from their definitions in the catalogue:
// building an index once from all rows is far faster than keeping it
// through millions of inserts, and the import recounts what the trigger
// would have counted. DDL is transactional on PostgreSQL, so a refused
// import leaves them as they were.
func postgresSetAsideFollowIndexes(ctx context.Context, r runner) (restore func() error, err error) {
	return setAside(ctx, r, postgresFollowsAside, func(kind, name string) string {
		// Names from the catalogue, quoted; no value of a row.
		switch kind {
		case "TRIGGER":
			return "DROP TRIGGER " + pgx.Identifier{name}.Sanitize() + ` ON "Follows"`
		case "CONSTRAINT":
			return `ALTER TABLE "Follows" DROP CONSTRAINT ` + pgx.Identifier{name}.Sanitize()
		}
		return "DROP INDEX " + pgx.Identifier{name}.Sanitize()
	})
}

// copyPostgres writes rows with COPY through pgx's own connection, which
// database/sql's conn wraps, inside the transaction open on it: several
// times faster than INSERTs. A row PostgreSQL refuses is found by the line
// its error's context names ("COPY Follows, line 12").
func copyPostgres(ctx context.Context, r runner, table string, cols []string, rows [][]any) error {
	return r.conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("COPY needs pgx's connection, not %T", dc)
		}
		_, err := c.Conn().CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			if m := copyLine.FindStringSubmatch(pe.Where); m != nil {
				line, _ := strconv.Atoi(m[1])
				return &failedRow{row: line - 1, err: err}
			}
		}
		return err
	})
}

var copyLine = regexp.MustCompile(`(?m)^COPY [^,]*, line (\d+)`)

// postgresDSN adds to a DSN the settings the server's sessions need,
// unless it gives them itself; pgx sends a URL's unknown parameters as
// settings. jit=off: PostgreSQL compiles a statement whose estimated cost
// passes jit_above_cost, and it estimates a JSON batch at 100 rows, so the
// suggestions statement was compiled on every run, 79 ms of its 154 ms.
func postgresDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn // pgx says what is wrong with it
	}
	q := u.Query()
	if !q.Has("jit") {
		q.Set("jit", "off")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// postgresIDSet selects the ids of a JSON array parameter (see idList).
const postgresIDSet = `SELECT j.value::integer FROM jsonb_array_elements_text(?::jsonb) AS j`

// The list statements: for each query in the JSON batch, LATERAL seeks
// that user's index range from the cursor the page starts at (backwards
// for a forward page, forwards for a backward one), by the row-value
// comparison the index serves as one range, up to the cursor it stops at,
// and stops at the query's own LIMIT. The users are joined inside, so
// that each query's rows come out in the order it read them. A page
// without a cursor for an end of its range carries one past that end of
// every list.
var postgresListTexts = fillLists(`SELECT q.k, p.*
FROM (SELECT (j.value ->> 0)::integer AS k, (j.value ->> 1)::integer AS UserId, (j.value ->> 2)::integer AS Lim,
             (j.value ->> 3)::timestamptz AS FromAt, (j.value ->> 4)::integer AS FromId,
             (j.value ->> 5)::timestamptz AS ToAt, (j.value ->> 6)::integer AS ToId
      FROM jsonb_array_elements(?::jsonb) AS j) AS q
CROSS JOIN LATERAL (
  SELECT {e}.CreatedAt, ` + userColumns + `
  FROM {table} AS {e} JOIN ` + activeUser("u", "{e}.{other}") + `
  WHERE {e}.{owner} = q.UserId AND ({e}.CreatedAt, {e}.{other}) {from} (q.FromAt, q.FromId)
    AND ({e}.CreatedAt, {e}.{other}) {to} (q.ToAt, q.ToId){also}
  ORDER BY {e}.CreatedAt {order}, {e}.{other} {order}
  LIMIT q.Lim) AS p`)

// The suggestions statement looks candidates up in Users by key, most
// shared first, and only as many as the page needs: the candidates come
// sorted by Via, so that an incremental sort on (Via, Name, Id) stops at
// the LIMIT once a Via's group is complete, and OFFSET 0 keeps the
// planner from turning the lookups into a join, which it did with a scan
// of all of Users. For a typical user of the large graph: 23 lookups
// rather than 645, 2.6 ms rather than 35.
var postgresSuggestionsText = `SELECT q.k, s.*
FROM (SELECT (j.value ->> 0)::integer AS k, (j.value ->> 1)::integer AS UserId, (j.value ->> 2)::integer AS Lim
      FROM jsonb_array_elements(?::jsonb) AS j) AS q
CROSS JOIN LATERAL (
  SELECT c.Via, ` + userColumns + `
  FROM (` + suggestionCandidates("SELECT q.UserId AS Id", postgresNewestFollows) + ` ORDER BY Via DESC) AS c
  CROSS JOIN LATERAL (SELECT * FROM Users AS u WHERE u.Id = c.Id AND ` + active("u") + ` OFFSET 0) AS u
  ORDER BY c.Via DESC, u.Name ASC, c.Id ASC
  LIMIT q.Lim) AS s`

// postgresNewestFollows joins, as alias, the newest n follows by owner: an
// index seek of n entries, whatever the length of owner's list.
func postgresNewestFollows(alias, owner string, n int) string {
	return fmt.Sprintf(`CROSS JOIN LATERAL (SELECT nf.FolloweeId FROM Follows AS nf WHERE nf.FollowerId = %[2]s
          ORDER BY nf.CreatedAt DESC, nf.FolloweeId DESC LIMIT %[3]d) AS %[1]s`, alias, owner, n)
}

// postgresKeepUserIDsAbove moves the Users identity past last, never back.
func postgresKeepUserIDsAbove(ctx context.Context, r runner, last int64) error {
	if last == 0 {
		return nil
	}
	_, err := r.exec(ctx, `SELECT setval(s.seq, GREATEST(?, COALESCE(pg_sequence_last_value(s.seq), 0)))
FROM (SELECT pg_get_serial_sequence('"Users"', 'Id')::regclass AS seq) AS s`, last)
	return err
}

// postgresLastUserID reads the highest id the Users identity has given
// out, deleted users' included; 0 before the first.
func postgresLastUserID(ctx context.Context, r runner) (int64, error) {
	var last int64
	err := r.queryRow(ctx, `SELECT COALESCE(pg_sequence_last_value(pg_get_serial_sequence('"Users"', 'Id')), 0)`, nil, &last)
	return last, err
}

// postgresTime is how a cursor's time travels in a JSON batch: timestamptz
// keeps microseconds, and the digits below them, which no stored time
// has, are cut rather than rounded up past a stored time.
const postgresTime = "2006-01-02T15:04:05.000000Z07:00"

// postgresNames are the mixed-case names the PostgreSQL migrations create
// (tables, columns), which PostgreSQL keeps only when they are quoted.
var postgresNames = quotedNames("migrations/postgres")

var quotedName = regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_]*)"`)

func quotedNames(dir string) map[string]bool {
	names := map[string]bool{}
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		panic(err) // embedded at build time
	}
	for _, e := range entries {
		src, err := fs.ReadFile(migrations, dir+"/"+e.Name())
		if err != nil {
			panic(err)
		}
		for _, m := range quotedName.FindAllStringSubmatch(string(src), -1) {
			if m[1] != strings.ToLower(m[1]) {
				names[m[1]] = true
			}
		}
	}
	return names
}

var postgresTexts sync.Map // store's statement text -> PostgreSQL's

// rebindPostgres turns a statement written once for every dialect into
// PostgreSQL's: the model's names (postgresNames), which PostgreSQL would
// fold to lower case unquoted, are quoted wherever they stand outside
// literals and quoted names, and the "?" placeholders become $1, $2...
// Other words, aliases among them, are left to fold consistently. The
// statements' texts are few and fixed, so each is rewritten once.
func rebindPostgres(q string) string {
	if t, ok := postgresTexts.Load(q); ok {
		return t.(string)
	}
	t := quotePostgres(q)
	postgresTexts.Store(q, t)
	return t
}

func quotePostgres(q string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			// A literal or a quoted name, copied whole; '' inside a
			// literal reads as its end and the start of another.
			end := i + 1 + strings.IndexByte(q[i+1:], c) + 1
			if end <= i+1 {
				end = len(q) // unterminated: the rest is quoted
			}
			b.WriteString(q[i:end])
			i = end
		case strings.HasPrefix(q[i:], "--"):
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				end = len(q) - i
			}
			b.WriteString(q[i : i+end])
			i += end
		case c == '?':
			n++
			b.WriteString("$" + strconv.Itoa(n))
			i++
		case c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			j := i + 1
			for j < len(q) && (q[j] == '_' || q[j] == '$' || q[j] >= 'A' && q[j] <= 'Z' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= '0' && q[j] <= '9') {
				j++
			}
			if w := q[i:j]; postgresNames[w] {
				b.WriteString(`"` + w + `"`)
			} else {
				b.WriteString(w)
			}
			i = j
		case c >= '0' && c <= '9' || c == '$':
			// A number or a $n placeholder: digits that follow are not
			// the start of a name.
			j := i + 1
			for j < len(q) && (q[j] >= '0' && q[j] <= '9' || q[j] == '.') {
				j++
			}
			b.WriteString(q[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// postgresArg sends times as UTC; pgx sends the rest as they are.
func postgresArg(v any) any {
	if t, ok := v.(time.Time); ok {
		return t.UTC()
	}
	return v
}

func scanPostgresTime(v any) (time.Time, error) {
	if t, ok := v.(time.Time); ok {
		return t.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("unexpected time value %T", v)
}

// SQLSTATEs the store acts on.
const (
	pgUniqueViolation      = "23505"
	pgForeignKeyViolation  = "23503"
	pgCheckViolation       = "23514"
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
	pgDiskFull             = "53100" // disk_full: nothing was written
)

func classifyPostgres(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case pgUniqueViolation:
		switch pe.ConstraintName {
		case "PK_Follows", "PK_Blocks":
			// A concurrent write of the same pair won: run the
			// transaction again, and it finds the row there.
			return fmt.Errorf("%w: %w: %w", errRetry, errDuplicate, err)
		case "PK_Users":
			return fmt.Errorf("%w: %w", errDuplicate, err)
		case "IX_Users_Name":
			return fmt.Errorf("%w: %w", ErrNameTaken, err)
		}
	case pgForeignKeyViolation:
		return foreignKeyViolation(err)
	case pgCheckViolation:
		switch pe.ConstraintName {
		case "CK_Follows_NoSelfFollow":
			return fmt.Errorf("%w: %w", ErrSelfFollow, err)
		case "CK_Blocks_NoSelfBlock":
			return fmt.Errorf("%w: %w", ErrSelfBlock, err)
		}
	case pgSerializationFailure, pgDeadlockDetected:
		return fmt.Errorf("%w: %w", errRetry, err)
	case pgDiskFull:
		return fmt.Errorf("%w: %w", ErrStorageFull, err)
	}
	return err
}
