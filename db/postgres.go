package db

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"

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
// database. Its files: this one, postgres_lists.go (the list and
// suggestions statements), postgres_import.go (bulk import with COPY),
// postgres_events.go (LISTEN/NOTIFY); adoption is db/adopt/postgres.go.
type postgresDialect struct {
	// pooled is the DSN's default_query_exec_mode where it is one for a
	// transaction-mode pooler (see postgresFor), else empty.
	pooled string
}

var (
	_ dialect       = (*postgresDialect)(nil)
	_ rowLocker     = (*postgresDialect)(nil)
	_ lockReleaser  = (*postgresDialect)(nil)
	_ eventLocker   = (*postgresDialect)(nil)
	_ eventListener = (*postgresDialect)(nil)
	_ listSuggester = (*postgresDialect)(nil)
	_ userRider     = (*postgresDialect)(nil)
	_ bulkLoader    = (*postgresDialect)(nil)
	_ bulkCopier    = (*postgresDialect)(nil)
	_ countSetter   = (*postgresDialect)(nil)
	_ adopter       = (*postgresDialect)(nil)
)

func (*postgresDialect) name() string                { return "postgres" }
func (*postgresDialect) driver() string              { return "pgx" }
func (*postgresDialect) gooseDialect() goose.Dialect { return goose.DialectPostgres }
func (d *postgresDialect) location(dsn string) string {
	return serverLocation(d.name(), dsn)
}

func (*postgresDialect) configure(db *sql.DB) {
	// Every instance holds up to this many of the server's
	// max_connections (100 by default): see the README.
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	db.SetConnMaxIdleTime(5 * time.Minute)
	db.SetConnMaxLifetime(time.Hour)
}

func (*postgresDialect) rebind(q string) string            { return rebindPostgres(q) }
func (*postgresDialect) arg(v any) any                     { return postgresArg(v) }
func (*postgresDialect) timeArg(t time.Time) any           { return t.UTC() }
func (*postgresDialect) scanTime(v any) (time.Time, error) { return scanPostgresTime(v) }
func (*postgresDialect) classify(err error) error          { return classifyPostgres(err) }
func (*postgresDialect) adoption() adopt.Dialect           { return postgresAdoptionOnce() }

// exportTx reads a graph in a snapshot.
func (*postgresDialect) exportTx() *sql.TxOptions {
	return &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead}
}

// postgresAdoptionOnce is PostgreSQL's adoption, made once.
var postgresAdoptionOnce = sync.OnceValue(adopt.Postgres)

// rowLocks are row locks that queue for each other: FOR NO KEY UPDATE is
// what the count trigger's UPDATE takes anyway, so taking it first costs
// no concurrency. FOR SHARE would deadlock two follows of one user, each
// waiting for the other's share to turn into the trigger's update. FOR
// UPDATE, for a delete, also waits for the foreign-key checks of follows
// being inserted by other writers.
func (*postgresDialect) rowLocks() (act, around lockClause) {
	return lockClause{suffix: " FOR NO KEY UPDATE"}, lockClause{suffix: " FOR UPDATE"}
}

// savepoint: rolling back to a savepoint ends its subtransaction, and
// with it the row locks taken since, which waiters then get.
func (*postgresDialect) savepoint() (set, rollback string) {
	return `SAVEPOINT lock_around`, `ROLLBACK TO SAVEPOINT lock_around`
}

// insertFollow: the column default sets CreatedAt (clock_timestamp(), in
// microseconds); a conflict with an existing or concurrent follow of the
// pair returns no row, and the follow is "already".
func (*postgresDialect) insertFollow() string {
	return `INSERT INTO Follows (FollowerId, FolloweeId) VALUES (?, ?)
ON CONFLICT (FollowerId, FolloweeId) DO NOTHING RETURNING CreatedAt`
}

func (*postgresDialect) insertUser() string  { return insertUserReturning }
func (*postgresDialect) insertEvent() string { return insertEventReturning }
func (*postgresDialect) idSet() string       { return postgresIDSet }

// userByName: lower(Name) is what IX_Users_Name indexes.
func (*postgresDialect) userByName() string {
	return `SELECT ` + userColumns + ` FROM Users AS u WHERE lower(u.Name) = lower(?)`
}

func (*postgresDialect) followsExist() string {
	return `SELECT f.FollowerId, f.FolloweeId, f.Muted, f.NotificationsEnabled FROM jsonb_array_elements(?::jsonb) AS p
JOIN Follows AS f ON f.FollowerId = (p.value ->> 0)::integer AND f.FolloweeId = (p.value ->> 1)::integer`
}

func (*postgresDialect) blocksExist() string {
	return `SELECT b.BlockerId, b.BlockedId FROM jsonb_array_elements(?::jsonb) AS p
JOIN Blocks AS b ON b.BlockerId = (p.value ->> 0)::integer AND b.BlockedId = (p.value ->> 1)::integer`
}

func (*postgresDialect) mutualCounts() string {
	return `SELECT k.id, ` + mutualCount("k.id") + ` FROM (` + postgresIDSet + `) AS k(id)`
}

func (*postgresDialect) listUsers() [2]string { return listUsersLimit }

// postgresIDSet selects the ids of a JSON array parameter (see idList).
const postgresIDSet = `SELECT j.value::integer FROM jsonb_array_elements_text(?::jsonb) AS j`

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
	pgLockNotAvailable     = "55P03" // a lock_timeout (or NOWAIT) the DSN set ran out
	pgDiskFull             = "53100" // disk_full: nothing was written
	// sequence_generator_limit_exceeded: "nextval: reached maximum value
	// of sequence", the Users identity at its int's end.
	pgSequenceLimit = "2200H"
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
		return busy(err)
	case pgLockNotAvailable:
		// Waited as long as the operator allows: not run again.
		return fmt.Errorf("%w: %w", ErrBusy, err)
	case pgDiskFull:
		return fmt.Errorf("%w: %w", ErrStorageFull, err)
	case pgSequenceLimit:
		return fmt.Errorf("%w: %w", ErrIDsExhausted, err)
	}
	return err
}
