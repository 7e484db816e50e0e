package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"regexp"
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
// HOLDLOCK is SERIALIZABLE for the table ("Table Hints (Transact-SQL)"):
// a scan of Users under it would lock ranges between the keys it passes
// and hold every sign-up until the commit, so FORCESEEK makes the read
// seek the primary key for each id, as the IN list and the follows of
// aroundUser allow (a plan that cannot seek fails with 8622 rather than
// scanning). The order the engine takes these locks in is the plan's,
// not the ORDER BY's; the deadlocks that can come of it (1205) are run
// again (see classify).
func (*sqlserverDialect) rowLocks() (act, around lockClause) {
	l := lockClause{hint: " WITH (UPDLOCK, HOLDLOCK, FORCESEEK)"}
	return l, l
}

// lockEvents: an application lock held to the commit orders the event
// Ids (see events.go); other processes poll. sp_getapplock reports a lock
// it did not grant only by its return code ("sp_getapplock
// (Transact-SQL)": >= 0 success, -1 timed out, -2 canceled, -3 chosen as
// deadlock victim, -999 parameter validation or other call error), and
// "a deadlock with an application lock does not roll back the
// transaction": a statement that ignored the code would go on to draw an
// event Id without the lock, and a reader could pass it before it
// commits. So the code is checked and a failure thrown as error
// mssqlLockFailed minus the code, which classify reads. @LockTimeout
// bounds the wait (its default is @@LOCK_TIMEOUT, -1, for ever) as
// SQLite's busy_timeout bounds its wait for the write lock: the lock is
// held only from a writer's event to its commit, so ten seconds is a
// writer stuck, and the transaction is run again (errRetry). THROW needs
// the statement before it ended with a semicolon, and takes its number
// and message only as constants or variables ("THROW (Transact-SQL)").
func (*sqlserverDialect) lockEvents() string {
	return `DECLARE @rc int;
EXEC @rc = sp_getapplock @Resource = N'FollowEvents', @LockMode = N'Exclusive', @LockOwner = N'Transaction', @LockTimeout = ` + strconv.Itoa(eventLockTimeoutMS) + `;
IF @rc < 0
BEGIN
    DECLARE @n int = ` + strconv.Itoa(mssqlLockFailed) + ` - @rc, @msg nvarchar(2048) = CONCAT(N'sp_getapplock on FollowEvents returned ', @rc);
    THROW @n, @msg, 1;
END;`
}

// eventLockTimeoutMS is how long, in milliseconds, a writer waits for the
// event outbox's lock: SQLite's busy_timeout.
const eventLockTimeoutMS = 10000

// insertFollow uses OUTPUT ... INTO, because SQL Server refuses a bare
// OUTPUT clause on a table with an enabled trigger for the statement's
// action (error 334; "OUTPUT clause (Transact-SQL)"), and Follows's count
// trigger is AFTER INSERT. UPDLOCK, HOLDLOCK makes the existence check and the
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

// SQL Server error numbers the store acts on, with their texts as
// "Database engine events and errors" gives them for SQL Server 2016.
const (
	// Violation of %ls constraint '%.*ls'. Cannot insert duplicate key in
	// object '%.*ls'. The duplicate key value is %ls.
	mssqlDuplicateKey = 2627
	// Cannot insert duplicate key row in object '%.*ls' with unique index
	// '%.*ls'. The duplicate key value is %ls.
	mssqlDuplicateIndex = 2601
	// The %ls statement conflicted with the %ls constraint "%.*ls". The
	// conflict occurred in database "%.*ls", table "%.*ls"%ls%.*ls%ls.
	mssqlConstraint = 547
	// Transaction (Process ID %d) was deadlocked on %.*ls resources with
	// another process and has been chosen as the deadlock victim. Rerun
	// the transaction.
	mssqlDeadlock = 1205
	// Snapshot isolation transaction aborted due to update conflict. ...
	// Retry the transaction or change the isolation level for the
	// update/delete statement. Only SNAPSHOT isolation raises it, which
	// the store's transactions do not use (READ_COMMITTED_SNAPSHOT does
	// not); run again as PostgreSQL's serialization failure is.
	mssqlSnapshotConflict = 3960
	mssqlNoPage           = 1101 // no new page: the disk is full
	mssqlFilegroupFull    = 1105 // the filegroup has no space left
	mssqlLogFull          = 9002 // the transaction log is full
	// Arithmetic overflow error converting %ls to data type %ls: with
	// IDENTITY, an insert whose identity is past its int's end.
	mssqlOverflow = 8115
	// mssqlLockFailed minus sp_getapplock's return code is what
	// lockEvents throws (THROW's numbers start at 50000).
	mssqlLockFailed = 51000
)

// Not classified, on purpose: 1222 "Lock request time out period
// exceeded." comes only from a session's SET LOCK_TIMEOUT, which the
// store never sets; PostgreSQL's lock_not_available is not run again
// either. 3609 "The transaction ended in the trigger. The batch has been
// aborted." and 3616 "An error was raised during trigger execution. The
// batch has been aborted and the user transaction, if any, has been
// rolled back." only follow the error that says why: classify reads
// every error of the batch (go-mssqldb's Error.All, first to last).

func classifySQLServer(err error) error {
	var me mssql.Error
	if !errors.As(err, &me) {
		var pme *mssql.Error
		if !errors.As(err, &pme) {
			return err
		}
		me = *pme
	}
	all := me.All
	if len(all) == 0 {
		all = []mssql.Error{me}
	}
	for _, e := range all {
		if c := classifyMSSQLError(e, err); c != nil {
			return c
		}
	}
	return err
}

// classifyMSSQLError is what one of the errors a batch raised, e, says
// of err; nil when it says nothing the store acts on. Constraint errors
// are told apart by the constraint's or index's name, parsed from the
// message's documented form, never by searching the whole message: a
// duplicate key's message ends with the duplicate value, a user's name or
// an identity provider's subject, which may spell any constraint's name.
func classifyMSSQLError(e mssql.Error, err error) error {
	switch e.Number {
	case mssqlDuplicateKey, mssqlDuplicateIndex:
		switch duplicateKeyName(e) {
		case "PK_Follows", "PK_Blocks":
			// A concurrent follow of the same pair won: run the
			// transaction again, and it finds the follow there.
			return fmt.Errorf("%w: %w: %w", errRetry, errDuplicate, err)
		case "IX_Users_Name":
			return fmt.Errorf("%w: %w", ErrNameTaken, err)
		}
		// IX_Users_ExternalId (a subject provisioned concurrently) is
		// left as it is, as on the other dialects: ProvisionUser looks
		// the subject up again. PK_Users is too: findDuplicate's
		// savepoint statements are not T-SQL.
	case mssqlConstraint:
		kind, name := constraintConflict(e)
		switch {
		case kind == "CHECK" && name == "CK_Follows_NoSelfFollow":
			return fmt.Errorf("%w: %w", ErrSelfFollow, err)
		case kind == "CHECK" && name == "CK_Blocks_NoSelfBlock":
			return fmt.Errorf("%w: %w", ErrSelfBlock, err)
		case kind == "REFERENCE":
			// "The DELETE statement conflicted with the REFERENCE
			// constraint": the delete side, whatever the statement,
			// also when TR_Users_Delete's DELETE raised it (and, the
			// trigger running with XACT_ABORT on, the server rolled
			// the whole transaction back).
			return stillReferenced(err)
		case strings.HasPrefix(kind, "FOREIGN KEY"): // also FOREIGN KEY SAME TABLE
			return foreignKeyViolation(err)
		}
	case mssqlDeadlock, mssqlSnapshotConflict:
		return busy(err)
	case mssqlLockFailed + 1, mssqlLockFailed + 2, mssqlLockFailed + 3:
		// The outbox's lock timed out, was canceled or lost a
		// deadlock: nothing was written without it.
		return busy(err)
	case mssqlNoPage, mssqlFilegroupFull, mssqlLogFull:
		return fmt.Errorf("%w: %w", ErrStorageFull, err)
	case mssqlOverflow:
		// The message's fixed opening names what overflowed; no value
		// of ours comes before it.
		if strings.HasPrefix(e.Message, "Arithmetic overflow error converting IDENTITY ") {
			return fmt.Errorf("%w: %w", ErrIDsExhausted, err)
		}
	}
	return nil
}

// duplicateKeyName is the constraint (2627) or unique index (2601) a
// duplicate key error names: the first quoted name after the message's
// fixed opening. The object's name (ours) comes before it and the
// duplicate value after it, so a value that spells a quote and a name
// cannot move it. Empty when the message is not of the documented form.
func duplicateKeyName(e mssql.Error) string {
	var rest string
	var ok bool
	switch e.Number {
	case mssqlDuplicateKey:
		// Violation of PRIMARY KEY constraint 'PK_Follows'. Cannot ...
		if _, rest, ok = strings.Cut(e.Message, "Violation of "); ok {
			_, rest, ok = strings.Cut(rest, " constraint '")
		}
	case mssqlDuplicateIndex:
		// Cannot insert duplicate key row in object 'dbo.Users' with
		// unique index 'IX_Users_Name'. The duplicate key value is ...
		if _, rest, ok = strings.Cut(e.Message, "Cannot insert duplicate key row in object '"); ok {
			_, rest, ok = strings.Cut(rest, "' with unique index '")
		}
	}
	if ok {
		if name, _, ok := strings.Cut(rest, "'"); ok {
			return name
		}
	}
	// Not the English text: the login's default language (the server's
	// default language for new logins) translates the message, and
	// go-mssqldb asks for no language. The name is then taken to be the
	// store's key name found first, whole: that assumes a translation,
	// like the English text, names the key before it gives the value,
	// which is not verified (the translations are in sys.messages, not
	// in the documentation). Setting the login's default language to
	// us_english makes the message the documented one.
	return firstName(e.Message, duplicateKeyNames)
}

// duplicateKeyNames are the keys whose duplicates the store tells apart,
// IX_Users_ExternalId among them so that a subject spelling another name
// after it is not taken for that name.
var duplicateKeyNames = []string{"PK_Follows", "PK_Blocks", "IX_Users_Name", "IX_Users_ExternalId"}

// firstName is the one of names that occurs first in msg as a whole word
// (not inside a longer name such as IX_Users_Name2); empty when none does.
func firstName(msg string, names []string) string {
	best, at := "", len(msg)
	for _, name := range names {
		for from := 0; from < at; {
			i := strings.Index(msg[from:], name)
			if i < 0 {
				break
			}
			i += from
			end := i + len(name)
			if i < at && (i == 0 || !isNameByte(msg[i-1])) && (end == len(msg) || !isNameByte(msg[end])) {
				best, at = name, i
				break
			}
			from = i + 1
		}
	}
	return best
}

func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// constraintMessage finds, in 547's documented text, the kind of
// constraint (CHECK, FOREIGN KEY, FOREIGN KEY SAME TABLE, REFERENCE) and
// its name. Only the statement's keyword comes before them, so the first
// match is theirs; the database, table and column follow.
var constraintMessage = regexp.MustCompile(`conflicted with the ([A-Z]+(?: [A-Z]+)*) constraint "([^"]*)"`)

// constraintConflict is the kind and the name of the constraint a 547
// names; empty when the message is not of the documented form.
func constraintConflict(e mssql.Error) (kind, name string) {
	if m := constraintMessage.FindStringSubmatch(e.Message); m != nil {
		return m[1], m[2]
	}
	// A translated message (see duplicateKeyName): the statement and the
	// kind are the engine's keywords, left untranslated, and a 547 holds
	// no value, only the constraint's, database's, table's and column's
	// names.
	for _, k := range []string{"FOREIGN KEY SAME TABLE", "FOREIGN KEY", "REFERENCE", "CHECK"} {
		if strings.Contains(e.Message, k) {
			return k, firstName(e.Message, checkNames)
		}
	}
	return "", ""
}

// checkNames are the CHECK constraints the store tells apart.
var checkNames = []string{"CK_Follows_NoSelfFollow", "CK_Blocks_NoSelfBlock"}
