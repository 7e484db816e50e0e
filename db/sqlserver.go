package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-sql/civil"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"follows/db/adopt"
)

// SQL Server, through go-mssqldb, for teams that run several server
// instances on one database. Only what differs from SQLite is here: the
// placeholders (@p1...), TOP and CROSS APPLY in place of LIMIT and UNION
// ALL, OPENJSON in place of json_each, datetime2 times, and error numbers.
//
// Batches travel as one JSON parameter, so a batch never meets SQL
// Server's 2,100-parameter limit and every batch size shares one statement
// text (and one cached plan). Its files: this one, sqlserver_lists.go (the
// list and suggestions statements), sqlserver_import.go (bulk import);
// adoption is db/adopt/sqlserver.go.
type sqlserverDialect struct{}

var (
	_ dialect        = (*sqlserverDialect)(nil)
	_ rowLocker      = (*sqlserverDialect)(nil)
	_ eventLocker    = (*sqlserverDialect)(nil)
	_ sessionLocking = (*sqlserverDialect)(nil)
	_ serverChecker  = (*sqlserverDialect)(nil)
	_ sqlSuggester   = (*sqlserverDialect)(nil)
	_ bulkLoader     = (*sqlserverDialect)(nil)
	_ bulkCopier     = (*sqlserverDialect)(nil)
	_ userIDInserter = (*sqlserverDialect)(nil)
	_ adopter        = (*sqlserverDialect)(nil)
	_ scriptBatches  = (*sqlserverDialect)(nil)
)

// batchSeparator ends each statement of a schema script for SQL Server's
// tools.
func (*sqlserverDialect) batchSeparator() string { return "GO" }

func (*sqlserverDialect) name() string                { return "sqlserver" }
func (*sqlserverDialect) driver() string              { return "sqlserver" }
func (*sqlserverDialect) gooseDialect() goose.Dialect { return goose.DialectMSSQL }
func (d *sqlserverDialect) location(dsn string) string {
	return serverLocation(d.name(), dsn)
}

func (*sqlserverDialect) configure(db *sql.DB) {
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	db.SetConnMaxIdleTime(5 * time.Minute)
}

func (*sqlserverDialect) rebind(q string) string            { return rebindAtP(q) }
func (*sqlserverDialect) arg(v any) any                     { return sqlserverArg(v) }
func (*sqlserverDialect) timeArg(t time.Time) any           { return civil.DateTimeOf(t.UTC()) }
func (*sqlserverDialect) scanTime(v any) (time.Time, error) { return scanSQLServerTime(v) }
func (*sqlserverDialect) classify(err error) error          { return classifySQLServer(err) }
func (*sqlserverDialect) adoption() adopt.Dialect           { return sqlserverAdoptionOnce() }

// checkServer reads the settings the store and its triggers depend on
// (sqlserver_settings.go).
func (*sqlserverDialect) checkServer(ctx context.Context, db *sql.DB) error {
	return checkServerSettings(ctx, db)
}

// exportTx is READ COMMITTED: go-mssqldb has no read-only transaction and
// SNAPSHOT needs the database's consent (see GraphReader).
func (*sqlserverDialect) exportTx() *sql.TxOptions { return nil }

// sqlserverAdoptionOnce is SQL Server's adoption, made once.
var sqlserverAdoptionOnce = sync.OnceValue(adopt.SQLServer)

func (*sqlserverDialect) sessionLocker() (lock.SessionLocker, error) {
	return appLock{resource: "follows-migrations", timeout: 5 * time.Minute}, nil
}

// rowLocks: UPDLOCK queues writers of the same users (two U locks
// conflict, a reader's S lock does not), HOLDLOCK keeps it to the commit.
func (*sqlserverDialect) rowLocks() (act, around lockClause) {
	l := lockClause{hint: " WITH (UPDLOCK, HOLDLOCK)"}
	return l, l
}

// lockEvents: an application lock held to the commit orders the event
// Ids; other processes poll.
func (*sqlserverDialect) lockEvents() string {
	return `EXEC sp_getapplock @Resource = N'FollowEvents', @LockMode = N'Exclusive', @LockOwner = N'Transaction'`
}

// insertFollow uses OUTPUT ... INTO, because SQL Server refuses a bare
// OUTPUT clause on a table with triggers (error 334), and Follows has the
// count triggers. UPDLOCK, HOLDLOCK makes the existence check and the
// insert one step for concurrent follows of the same pair; a duplicate
// key that slips through is classified as "already".
func (*sqlserverDialect) insertFollow() string {
	return `DECLARE @t TABLE (CreatedAt datetime2(7));
INSERT INTO Follows (FollowerId, FolloweeId) OUTPUT INSERTED.CreatedAt INTO @t
SELECT @p1, @p2 WHERE NOT EXISTS (SELECT 1 FROM Follows WITH (UPDLOCK, HOLDLOCK) WHERE FollowerId = @p1 AND FolloweeId = @p2);
SELECT CreatedAt FROM @t;`
}

func (*sqlserverDialect) insertUser() string {
	return `INSERT INTO Users (Name, SecurityStamp) OUTPUT INSERTED.Id VALUES (?, ?)`
}

func (*sqlserverDialect) insertEvent() string {
	return `INSERT INTO FollowEvents (Kind, FollowerId, FolloweeId, At) OUTPUT INSERTED.Id VALUES (?, ?, ?, ?)`
}

func (*sqlserverDialect) idSet() string { return `SELECT CAST(value AS int) FROM OPENJSON(?)` }

func (*sqlserverDialect) userByName() string {
	return `SELECT ` + userColumns + ` FROM Users AS u WHERE u.Name = ?`
}

func (*sqlserverDialect) followsExist() string {
	return `SELECT f.FollowerId, f.FolloweeId, f.Muted, f.NotificationsEnabled FROM OPENJSON(?) WITH (a int '$[0]', b int '$[1]') AS p
JOIN Follows AS f ON f.FollowerId = p.a AND f.FolloweeId = p.b`
}

func (*sqlserverDialect) blocksExist() string {
	return `SELECT b.BlockerId, b.BlockedId FROM OPENJSON(?) WITH (a int '$[0]', b int '$[1]') AS p
JOIN Blocks AS b ON b.BlockerId = p.a AND b.BlockedId = p.b`
}

func (*sqlserverDialect) mutualCounts() string {
	return `SELECT k.Id, ` + mutualCount("k.Id") + ` FROM OPENJSON(?) WITH (Id int '$') AS k`
}

// appLock is goose's SessionLocker on SQL Server: an exclusive
// application lock owned by the session, which SQL Server also releases
// when the connection ends, however it ends.
type appLock struct {
	resource string
	timeout  time.Duration
}

func (l appLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	var rc int
	err := conn.QueryRowContext(ctx, `DECLARE @rc int;
EXEC @rc = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = @p2;
SELECT @rc`, l.resource, int32(l.timeout.Milliseconds())).Scan(&rc)
	if err != nil {
		return fmt.Errorf("sp_getapplock %s: %w", l.resource, err)
	}
	if rc < 0 { // -1 timed out, -2 cancelled, -3 deadlock victim, -999 bad call
		return fmt.Errorf("sp_getapplock %s: returned %d", l.resource, rc)
	}
	return nil
}

func (l appLock) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	var rc int
	err := conn.QueryRowContext(ctx, `DECLARE @rc int;
EXEC @rc = sp_releaseapplock @Resource = @p1, @LockOwner = 'Session';
SELECT @rc`, l.resource).Scan(&rc)
	if err != nil {
		return fmt.Errorf("sp_releaseapplock %s: %w", l.resource, err)
	}
	if rc < 0 {
		return fmt.Errorf("sp_releaseapplock %s: returned %d", l.resource, rc)
	}
	return nil
}

// rebindAtP numbers the store's "?" placeholders as go-mssqldb's @p1,
// @p2... It skips quoted text, where a "?" is not a placeholder.
func rebindAtP(q string) string {
	var b strings.Builder
	n := 0
	quoted := false
	for _, r := range q {
		switch {
		case r == '\'':
			quoted = !quoted
			b.WriteRune(r)
		case r == '?' && !quoted:
			n++
			b.WriteString("@p" + strconv.Itoa(n))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// sqlserverArg sends integers as int32, the type of the int columns, so
// that comparisons use the indexes without a conversion, and times as
// datetime2.
func sqlserverArg(v any) any {
	switch v := v.(type) {
	case int64:
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return int32(v)
		}
	case int:
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return int32(v)
		}
	case time.Time:
		return civil.DateTimeOf(v.UTC())
	}
	return v
}

func scanSQLServerTime(v any) (time.Time, error) {
	if t, ok := v.(time.Time); ok {
		// datetime2 carries no zone; the column holds UTC.
		return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC), nil
	}
	return time.Time{}, fmt.Errorf("unexpected time value %T", v)
}

// SQL Server error numbers the store acts on.
const (
	mssqlDuplicateKey   = 2627 // PRIMARY KEY or UNIQUE constraint
	mssqlDuplicateIndex = 2601 // unique index
	mssqlConstraint     = 547  // CHECK or FOREIGN KEY constraint
	mssqlDeadlock       = 1205 // chosen as deadlock victim
	mssqlNoPage         = 1101 // no new page: the disk is full
	mssqlFilegroupFull  = 1105 // the filegroup has no space left
	mssqlLogFull        = 9002 // the transaction log is full
)

func classifySQLServer(err error) error {
	var me mssql.Error
	if !errors.As(err, &me) {
		var pme *mssql.Error
		if !errors.As(err, &pme) {
			return err
		}
		me = *pme
	}
	switch me.Number {
	case mssqlDuplicateKey, mssqlDuplicateIndex:
		switch {
		case strings.Contains(me.Message, "PK_Follows"), strings.Contains(me.Message, "PK_Blocks"):
			// A concurrent follow of the same pair won: run the
			// transaction again, and it finds the follow there.
			return fmt.Errorf("%w: %w: %w", errRetry, errDuplicate, err)
		case strings.Contains(me.Message, "IX_Users_Name"):
			return fmt.Errorf("%w: %w", ErrNameTaken, err)
		}
	case mssqlConstraint:
		switch {
		case strings.Contains(me.Message, "CK_Follows_NoSelfFollow"):
			return fmt.Errorf("%w: %w", ErrSelfFollow, err)
		case strings.Contains(me.Message, "CK_Blocks_NoSelfBlock"):
			return fmt.Errorf("%w: %w", ErrSelfBlock, err)
		case strings.Contains(me.Message, "REFERENCE constraint"):
			// "The DELETE statement conflicted with the REFERENCE
			// constraint": the delete side, whatever the statement.
			return stillReferenced(err)
		case strings.Contains(me.Message, "FOREIGN KEY"):
			return foreignKeyViolation(err)
		}
	case mssqlDeadlock:
		return fmt.Errorf("%w: %w", errRetry, err)
	case mssqlNoPage, mssqlFilegroupFull, mssqlLogFull:
		return fmt.Errorf("%w: %w", ErrStorageFull, err)
	}
	return err
}
