package db

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"follows/db/adopt"
)

// dialect is the seam between SQL databases, what every dialect must
// provide: how to connect, how values travel, how driver errors map to
// the store's errors, and the statements whose text differs. Everything
// else in the store is written once. What only some databases have is an
// optional capability below, found by a type assertion, the way
// database/sql/driver finds a driver's QueryerContext: the store does
// without it, or says the operation is not built for the dialect.
//
// A dialect lives in files named by it (sqlite*.go, postgres*.go,
// sqlserver*.go), each of which asserts, for the compiler, the interfaces
// it implements.
type dialect interface {
	// name names the dialect in messages; it is also the folder of its
	// migrations.
	name() string
	// driver is the database/sql driver's name; gooseDialect the
	// migrations' dialect.
	driver() string
	gooseDialect() goose.Dialect
	// location names the database dsn names in errors, never with its
	// credentials.
	location(dsn string) string
	// configure sets up the connection pool.
	configure(*sql.DB)

	// rebind turns the store's "?" placeholders into the driver's own.
	rebind(string) string
	// arg converts a parameter to the driver's preferred form.
	arg(any) any
	// timeArg and scanTime convert between time.Time and the column's
	// form.
	timeArg(time.Time) any
	scanTime(any) (time.Time, error)
	// classify maps driver errors to the store's sentinel errors, keeping
	// the driver error wrapped for logs.
	classify(error) error

	dialectStatements

	// pagesQuery makes one statement answering a batch of page queries
	// that all go one way. Each row's first column is the position of
	// its query in qs; then the entry's CreatedAt and the other user's
	// columns (userColumns). A page asks for one row more than its size
	// (the extra one tells that more follow) and may get more, which the
	// store drops.
	pagesQuery(kind listKind, way pageWay, qs []PageQuery) (string, []any)
	// lastUserID reads the highest user id ever given out, deleted
	// users' included (SQLite's sqlite_sequence, the identity's last
	// value).
	lastUserID(ctx context.Context, r runner) (int64, error)
	// exportTx is the transaction a graph is exported in (see
	// GraphReader): a snapshot where the dialect gives one.
	exportTx() *sql.TxOptions
}

// dialectStatements are the statements whose text differs between
// dialects; newStatements builds the rest from them.
type dialectStatements interface {
	// insertFollow inserts (FollowerId, FolloweeId) unless present and
	// returns the new row's CreatedAt; no row when the pair existed.
	insertFollow() string
	// insertUser inserts a user by Name and SecurityStamp and returns its
	// Id.
	insertUser() string
	// insertEvent adds a row to the event outbox and returns its Id.
	insertEvent() string
	// idSet selects, as one column, the ids of a JSON array parameter
	// (see idList).
	idSet() string
	// The reads whose text differs: pairs arrive as one JSON array
	// parameter of [follower, followee]; followsExist also reads each
	// follow's settings; mutualCounts, ids as a JSON array.
	userByName() string
	followsExist() string
	blocksExist() string
	mutualCounts() string
	// listUsers reads a page of Query.users each way (see fillUsers): its
	// parameters are the lowest and highest id it may hold, and how many
	// rows.
	listUsers() [2]string
}

// The optional capabilities. Each dialect file asserts the ones its type
// has; the store asserts for them where it needs them.
type (
	// rowLocker locks, until the transaction ends, the users a write
	// transaction reads first, in Id order where the dialect locks rows
	// in the order it returns them (PostgreSQL's FOR NO KEY UPDATE), so
	// that no two transactions wait for each other's users; SQL Server
	// locks in its plan's order, and its rare deadlocks are run again
	// (see sqlserverDialect.rowLocks): act the two it acts on
	// (see requireUsers), so that neither is deleted, deactivated or
	// blocked meanwhile and writers of the same users queue; around a
	// user being deleted or deactivated and the users around it, whose
	// counts that changes (see lockAround). Without it (SQLite, whose
	// write lock covers both) the reads take no lock. The rule: users
	// first, in Id order, then their rows, then the event outbox's lock;
	// every write path's locks are listed in docs/architecture.md, "Lock
	// order", and TestLockOrder holds them to it.
	rowLocker interface {
		rowLocks() (act, around lockClause)
	}

	// lockReleaser lets go, inside a transaction, of the row locks taken
	// since a savepoint: set makes the savepoint, rollback rolls back to
	// it. lockAround lets go of users it locked in Id order to lock a
	// larger set in Id order, rather than add one out of order. Without
	// it (SQL Server keeps the locks of a rolled back savepoint), the
	// transaction is run again instead.
	lockReleaser interface {
		savepoint() (set, rollback string)
	}

	// eventLocker's statement runs before an event is added, and takes
	// the transaction-scoped lock that makes event Ids commit in order
	// (see events.go). Without it, the database's write lock orders them.
	eventLocker interface {
		lockEvents() string
	}

	// eventListener wakes other processes' subscribers: notifyEvent runs
	// after an event is added, with its Id as parameter, to notify on
	// commit; listenEvents listens on a connection of its own (connStr)
	// until ctx ends or the connection fails, calling caughtUp once it
	// listens and saw with each Id notified. Without it, the feed polls
	// the outbox.
	eventListener interface {
		notifyEvent() string
		listenEvents(ctx context.Context, connStr string, caughtUp func(context.Context) error, saw func(id int64)) error
	}

	// sessionLocking makes the lock that one instance holds while it
	// migrates, the others waiting for it. Without it (SQLite, which has
	// none that outlasts a transaction) instances race and the losers
	// find the migrations applied (see migrate).
	sessionLocking interface {
		sessionLocker() (lock.SessionLocker, error)
	}

	// migrationLocking makes the lock that one instance holds while it
	// migrates where a session cannot hold one: through a
	// transaction-mode pooler (PgBouncer), a session's lock would stay
	// on a server connection that other clients go on using. A
	// dialect has this or sessionLocking, or neither.
	migrationLocking interface {
		migrationLocker() lock.Locker
	}

	// driverCaching is a dialect whose driver keeps what a statement
	// needs per connection itself (pgx: by its default_query_exec_mode),
	// so the store prepares none through database/sql, whose prepared
	// statements are named ones on the server. Through a
	// transaction-mode pooler a named statement prepared on one server
	// connection is missing on the next.
	driverCaching interface {
		cachesStatements()
	}

	// userRider reads users along with a batch statement (see Along):
	// withUsers is a statement whose rows are text's, each after
	// userColumns left null, and, after them, one row of userColumns (the
	// rest null) for each user of a JSON array of ids (see idList), the
	// last parameter. Without it, the store reads them in a statement of
	// their own.
	userRider interface {
		withUsers(text string) string
	}

	// sessionChecker checks, after the migrations, the settings the
	// store's sessions run with, and logs what to change if they are not
	// as it needs them.
	sessionChecker interface {
		checkSession(ctx context.Context, db *sql.DB, log *slog.Logger)
	}

	// serverChecker checks at start that the database can run the
	// store's statements at all, and says what to change if not.
	serverChecker interface {
		checkServer(ctx context.Context, db *sql.DB) error
	}

	// integrityChecker's statement checks a database file for damage,
	// answering "ok" or what it found (see checkIntegrity); busy says an
	// error of it is the file being busy for a moment, worth trying
	// again. Without it, the database's administrators see to that.
	integrityChecker interface {
		integrityCheck() string
		busy(err error) bool
	}

	// fileDatabase is a database kept in a file the server opens itself:
	// createFile makes a dsn's file (owner-only) before the first
	// connection; filePath is the file a dsn names, empty for an
	// in-memory one; readOnly is the connection string that reads the
	// file changing nothing, not even its header (see OpenGraph);
	// refuseUnfinished refuses a file whose import did not finish, before
	// anything else reads or changes it (every opener asks);
	// adoptionConn is the connection string adoption runs on, before the
	// server's settings touch the file (see adoptAndMigrate).
	fileDatabase interface {
		createFile(dsn string) error
		filePath(dsn string) string
		readOnly(dsn string) string
		refuseUnfinished(ctx context.Context, dsn string) error
		adoptionConn(dsn string) string
	}

	// sqlSuggester ranks suggestions in SQL: one statement answering a
	// batch within a budget (see SuggestionBudget), each row the position
	// of its query in qs, then Sampled, Via and the user.
	sqlSuggester interface {
		suggestionsQuery(qs []SuggestionQuery, budget int) (string, []any)
	}

	// listSuggester is for a dialect whose SQL would group and order
	// suggestions at a higher cost than Go does: suggestionData reads,
	// for a batch within a budget, rows (k, N, Heads): with k the
	// query's position, the people the user follows that the budget
	// takes, as a comma-separated list of id:FollowingVersion, and N 1
	// if it left any out; with k -1 minus the position, Heads is the
	// comma-separated ids suggestions leave out and N the UserRenames
	// count. followingLists reads
	// the lists of a JSON array of ids (see idList), rows (Id,
	// FollowingVersion, Ids), Ids the comma-separated ids it follows;
	// candidateUsers the users of a JSON array of ids, each row
	// userColumns and the UserRenames count. The store keeps the lists
	// (followLists) and the names (heldNames), counts and ranks
	// (rankedSuggestions). A dialect has this or sqlSuggester.
	listSuggester interface {
		suggestionData(qs []SuggestionQuery, budget int) (string, []any)
		followingLists() string
		candidateUsers() string
	}

	// bulkLoader is bulk import (see ImportGraph); without it, the
	// import is not built for the dialect.
	bulkLoader interface {
		// bulkSetup and bulkReset prepare the import's connection for
		// loading many rows and put it back. Rows are checked before
		// they go in, so the import need not pay for foreign key
		// lookups on each.
		bulkSetup() []string
		bulkReset() []string
		// bulkTxSetup are the settings made for the import's
		// transaction alone, the first statements in it: through a
		// transaction-mode pooler such as PgBouncer, a session's SET
		// would stay with a server connection other clients get next.
		bulkTxSetup() []string
		// setAsideFollowIndexes drops the follow table's secondary
		// indexes and its triggers (the counts' among them), in the
		// import's transaction, and returns what restores them.
		setAsideFollowIndexes(ctx context.Context, r runner) (restore func() error, err error)
		// keepUserIDsAbove makes the ids given to new users higher than
		// last.
		keepUserIDsAbove(ctx context.Context, r runner, last int64) error
		// afterImport are the statements that end a bulk import, in its
		// transaction: what the dialect needs done after loading rows
		// with their own ids, and fresh statistics.
		afterImport() []string
	}

	// followKeyLoader sets the follow table's primary key aside too
	// while an import loads follows into it, when the table is empty and
	// no other table's foreign key refers to it (otherwise restore is
	// nil and the key stays). The import then makes sure itself that no
	// follow comes twice (followGroups), and restore builds the key from
	// all rows, once: on PostgreSQL that is a fraction of what keeping it
	// through the load costs (docs/decisions/postgres-queries.md).
	followKeyLoader interface {
		setAsideFollowKey(ctx context.Context, r runner) (restore func() error, err error)
	}

	// bulkCopier writes a bulk import's rows into table's columns inside
	// its transaction, with the database's bulk copy (COPY, SQL Server's
	// bulk insert), for the tables copies says; a row the database
	// refuses comes back as a *failedRow where it says which. Without
	// it, rows go in with multi-row INSERTs.
	bulkCopier interface {
		copies(table string) bool
		copyRows(ctx context.Context, b bulkRun, table string, cols []string, rows [][]any) error
	}

	// userIDInserter's statements surround the INSERTs of users with
	// their own ids (SQL Server's IDENTITY_INSERT).
	userIDInserter interface {
		beforeUserIDs() []string
		afterUserIDs() []string
	}

	// countSetter's statement sets the counts of the users of a JSON
	// array of [id, followers, following], for a bulk import into a graph
	// without follows, which counted them as they went in (see
	// followLoad.setCounts); without it, the import recounts them.
	countSetter interface {
		setImportedCounts() string
		// usersWithCounts says the import holds the new users until
		// their follows are counted, and writes each row once, counts
		// and all (see graphImport.held): for a database whose UPDATE
		// writes a new version of every row it changes.
		usersWithCounts() bool
	}

	// newFileLoader loads a bulk import into a new, empty database its
	// own way: startNewFile sets up conn before the import's transaction
	// begins and returns what puts it back after the transaction ends,
	// and whether the import may write the follow table's pages itself
	// after its transaction; followTree then gives where the follows
	// are held for that (nil: SQL loads them). See newFile.
	newFileLoader interface {
		startNewFile(ctx context.Context, conn *sql.Conn) (end func() error, writeTree bool, err error)
		followTree(ctx context.Context, b bulkRun) (_ *followPages, whyNot string, err error)
	}

	// adopter reads and changes the catalogue for adopting an EF Core
	// database (adopt.go) and for exporting one.
	adopter interface {
		adoption() adopt.Dialect
	}
)

// dialectFor picks the dialect a dsn names, and the connection string its
// driver takes.
func dialectFor(dsn string) (dialect, string, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlserver://"):
		return &sqlserverDialect{}, dsn, nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return postgresFor(dsn)
	case dsn == "":
		return nil, "", errors.New("no database given")
	default:
		return &sqliteDialect{}, sqliteDSN(dsn), nil
	}
}

// statements are the texts the store runs that a dialect shapes: its own
// (dialectStatements), and those built here, once for every dialect, from
// its idSet and row locks.
type statements struct {
	insertFollow, insertUser, insertEvent, userByName, followsExist, blocksExist, mutualCounts string
	listUsers                                                                                  [2]string
	// usersByID reads the users of a JSON array of ids, userByID one.
	usersByID, userByID string
	// recountIDs applies the count rule to the users of a JSON array of
	// ids; recountImported does too, for a bulk import's many users.
	recountIDs, recountImported string
	// selectPairUsers, lockAroundUser and lockUsers (the users of a
	// JSON array of ids) are the reads that take the row locks (see
	// rowLocker).
	selectPairUsers, lockAroundUser, lockUsers string
}

// newStatements builds d's statements.
func newStatements(d dialect) *statements {
	var act, around lockClause
	if l, ok := d.(rowLocker); ok {
		act, around = l.rowLocks()
	}
	idSet := d.idSet()
	return &statements{
		insertFollow:    d.insertFollow(),
		insertUser:      d.insertUser(),
		insertEvent:     d.insertEvent(),
		userByName:      d.userByName(),
		followsExist:    d.followsExist(),
		blocksExist:     d.blocksExist(),
		mutualCounts:    d.mutualCounts(),
		listUsers:       d.listUsers(),
		usersByID:       `SELECT ` + userColumns + ` FROM Users AS u WHERE u.Id IN (` + idSet + `)`,
		userByID:        `SELECT ` + userColumns + ` FROM Users AS u WHERE u.Id = ?`,
		recountIDs:      recountUsers(idSet),
		recountImported: recountUsersGrouped(idSet),
		selectPairUsers: `SELECT ` + userColumns + ` FROM Users AS u` + act.hint + ` WHERE u.Id IN (?, ?) ORDER BY u.Id` + act.suffix,
		lockAroundUser:  `SELECT u.Id FROM Users AS u` + around.hint + ` WHERE u.Id IN (` + aroundUser + `) ORDER BY u.Id` + around.suffix,
		lockUsers:       `SELECT u.Id FROM Users AS u` + around.hint + ` WHERE u.Id IN (` + idSet + `) ORDER BY u.Id` + around.suffix,
	}
}

// lockClause is how a dialect's SELECT locks the rows it reads: hint
// follows the table's alias (SQL Server's table hints), suffix ends the
// statement (PostgreSQL's FOR ...).
type lockClause struct{ hint, suffix string }

// insertUserReturning is insertUser where INSERT ... RETURNING is the way
// to say it.
const insertUserReturning = `INSERT INTO Users (Name, SecurityStamp) VALUES (?, ?) RETURNING Id`

// adoptionOf is d's adoption (see adopter); nil where it adopts none.
func adoptionOf(d dialect) adopt.Dialect {
	if a, ok := d.(adopter); ok {
		return a.adoption()
	}
	return nil
}
