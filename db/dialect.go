package db

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"follows/db/adopt"
)

// dialect is the seam between SQL databases: how to connect, which
// migrations to run, how times travel, how driver errors map to the store's
// errors, and the few statements whose text differs. Everything else in the
// store is written once.
type dialect struct {
	name   string // also the folder of its migrations
	driver string
	goose  goose.Dialect
	// sessionLocker, if not nil, makes the lock that one instance holds
	// while it migrates, the others waiting for it. SQLite has none that
	// outlasts a transaction (see migrate).
	sessionLocker func() (lock.SessionLocker, error)

	configure func(*sql.DB)
	// rebind turns the store's "?" placeholders into the driver's own.
	rebind func(string) string
	// timeArg and scanTime convert between time.Time and the column's form.
	timeArg  func(time.Time) any
	scanTime func(any) (time.Time, error)
	// classify maps driver errors to the store's sentinel errors, keeping
	// the driver error wrapped for logs.
	classify func(error) error
	// integrityCheck is the statement that checks a database file for
	// damage, answering "ok" or what it found; empty where the server
	// leaves that to the database's administrators.
	integrityCheck string
	// checkServer, if not nil, checks at start that the database can run
	// the store's statements at all, and says what to change if not.
	checkServer func(ctx context.Context, db *sql.DB) error

	// actLock and aroundLock lock, until the transaction ends, the users
	// a write transaction reads first, always in Id order, so that no two
	// transactions wait for each other's users: actLock the two it acts
	// on (see requireUsers), so that neither is deleted, deactivated or
	// blocked meanwhile and writers of the same users queue; aroundLock
	// a user being deleted or deactivated and the users around it, whose
	// counts that changes (see lockAround). SQLite's write lock covers
	// both: it has neither.
	actLock, aroundLock lockClause
	// selectPairUsers and lockAroundUser are the reads that take them.
	selectPairUsers, lockAroundUser string

	// insertFollow inserts (FollowerId, FolloweeId) unless present and
	// returns the new row's CreatedAt; no row when the pair existed.
	insertFollow string
	// insertEvent adds a row to the event outbox and returns its Id;
	// lockEvents, if not empty, is run first, and takes the
	// transaction-scoped lock that makes event Ids commit in order (see
	// events.go); notifyEvents, if not empty, is run after with the Id as
	// its parameter, to wake other processes' subscribers on commit.
	insertEvent, lockEvents, notifyEvents string
	// insertUser inserts a user by Name and SecurityStamp and returns its
	// Id.
	insertUser string
	// idSet selects, as one column, the ids of a JSON array parameter (see
	// idList); finish builds usersByID and recountIDs from it.
	idSet string
	// The reads whose text differs: ids arrive as one JSON array
	// parameter, pairs as an array of [follower, followee];
	// followsExist also reads each follow's settings.
	usersByID, userByID, userByName, followsExist, blocksExist, mutualCounts string
	// listUsers reads a page of Query.users each way (see fillUsers): its
	// parameters are the lowest and highest id it may hold, and how many
	// rows.
	listUsers [2]string
	// recountIDs applies the count rule to the users of a JSON array of
	// ids; recountImported does too, for a bulk import's many users.
	recountIDs, recountImported string

	// pagesQuery and suggestionsQuery make one statement answering a batch
	// of per-user queries, pagesQuery of pages that all go one way. Each
	// row's first column is the position of its query in qs; then, for
	// pages, the entry's CreatedAt and the other user's columns
	// (userColumns); for suggestions Via and the user. A page asks for one
	// row more than its size (the extra one tells that more follow) and
	// may get more, which the store drops.
	pagesQuery       func(kind listKind, way pageWay, qs []PageQuery) (string, []any)
	suggestionsQuery func(qs []SuggestionQuery) (string, []any)
	// suggestionFollowees, where set, replaces suggestionsQuery, for a
	// dialect whose SQL would group and order suggestions by sorting: a
	// statement that reads, for a batch, each user's newest followees with
	// the versions of their follows, and the ids suggestions leave out;
	// suggestionLists reads the newest follows of the users of an id list
	// with their versions. The store counts and ranks (rankedSuggestions),
	// keeping the lists it read (followLists). bumpFollowVersions bumps
	// the versions of the users of an id list, for a bulk import that set
	// the triggers which do it aside.
	suggestionFollowees                 func(qs []SuggestionQuery) (string, []any)
	suggestionLists, bumpFollowVersions string

	// arg converts a parameter to the driver's preferred form.
	arg func(any) any

	// bulkSetup and bulkReset prepare a connection for a bulk import and
	// put it back. Rows are checked before they go in, so the import need
	// not pay for foreign key lookups on each.
	bulkSetup, bulkReset []string
	// freshBulk, if not nil, sets up conn for a bulk import into a
	// database with no users and no follows, before its transaction
	// begins, and returns what puts it back after the transaction ends,
	// and whether the import may write the follow table's pages itself
	// after its transaction (see followPages).
	freshBulk func(ctx context.Context, conn *sql.Conn) (end func() error, pages bool, err error)
	// lastUserID reads the highest user id ever given out, deleted users'
	// included (SQLite's sqlite_sequence, SQL Server's identity).
	lastUserID func(ctx context.Context, r runner) (int64, error)
	// keepUserIDsAbove, for a bulk import, makes the ids given to new users
	// higher than last; nil where bulk import is not supported.
	keepUserIDsAbove func(ctx context.Context, r runner, last int64) error
	// setImportedCounts, if not empty, sets the counts of the users of a
	// JSON array of [id, followers, following], for a bulk import into a
	// graph without follows, that counted them as they went in (see
	// followLoad.setCounts); without it, the import recounts them.
	setImportedCounts string
	// setAsideFollowIndexes, for a bulk import, drops the follow table's
	// secondary indexes and its triggers (the counts' among them) and
	// returns what restores them; nil where bulk import is not supported.
	setAsideFollowIndexes func(ctx context.Context, r runner) (restore func() error, err error)
	// copyRows, if not nil, writes a bulk import's rows into table's
	// columns inside its transaction (r), with the database's bulk copy
	// (COPY, SQL Server's bulk insert); a row the database refuses comes
	// back as a *failedRow where it says which. Without it, rows go in
	// with multi-row INSERTs.
	copyRows func(ctx context.Context, r runner, table string, cols []string, rows [][]any) error
	// usersByInsert has Users rows go in with INSERTs even where copyRows
	// is: SQL Server's bulk copy would give them identity values of its
	// own. beforeUserIDs and afterUserIDs surround those INSERTs (SQL
	// Server's IDENTITY_INSERT).
	usersByInsert               bool
	beforeUserIDs, afterUserIDs []string
	// adoption reads the catalogue for adopting an EF Core database
	// (package adopt); nil where the server does not adopt one.
	adoption adopt.Dialect

	// afterImport are the statements that end a bulk import, in its
	// transaction: what the dialect needs done after loading rows with
	// their own ids, and fresh statistics.
	afterImport []string
}

func dialectFor(dsn string) (*dialect, string, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlserver://"):
		return sqlserverDialect().withBulkImport().finish(), dsn, nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return postgresDialect().finish(), postgresDSN(dsn), nil
	case dsn == "":
		return nil, "", errors.New("no database given")
	default:
		return sqliteDialect().finish(), sqliteDSN(dsn), nil
	}
}

// finish builds the statements that differ between dialects only in the
// parts a dialect gives.
func (d *dialect) finish() *dialect {
	d.usersByID = `SELECT ` + userColumns + ` FROM Users AS u WHERE u.Id IN (` + d.idSet + `)`
	d.userByID = `SELECT ` + userColumns + ` FROM Users AS u WHERE u.Id = ?`
	d.recountIDs = recountUsers(d.idSet)
	d.recountImported = recountUsersGrouped(d.idSet)
	d.selectPairUsers = `SELECT ` + userColumns + ` FROM Users AS u` + d.actLock.hint + ` WHERE u.Id IN (?, ?) ORDER BY u.Id` + d.actLock.suffix
	d.lockAroundUser = `SELECT u.Id FROM Users AS u` + d.aroundLock.hint + ` WHERE u.Id IN (` + aroundUser + `) ORDER BY u.Id` + d.aroundLock.suffix
	return d
}

// lockClause is how a dialect's SELECT locks the rows it reads: hint
// follows the table's alias (SQL Server's table hints), suffix ends the
// statement (PostgreSQL's FOR ...).
type lockClause struct{ hint, suffix string }
