package adopt

import (
	"context"
	"database/sql"
	"time"

	"github.com/pressly/goose/v3/database"
)

// Tx is the transaction an adoption runs in, as the store gives it.
// ExecContext, QueryContext and QueryRowContext run a statement as it is
// (goose's own and the migrations', written in the dialect's form); a
// *sql.Tx has them. Rebind and TimeArg are what adoption needs of the
// store's dialect: the statements adoption writes once for every dialect
// are written as the store writes its own ("?" placeholders, the model's
// names bare), and its one time parameter takes the form of the dialect's
// CreatedAt column.
type Tx interface {
	database.DBTxConn
	// Rebind turns a statement written once for every dialect into the
	// dialect's form.
	Rebind(query string) string
	// TimeArg is t as the dialect's CreatedAt column takes it.
	TimeArg(t time.Time) any
}

// Catalogue is what adoption asks of a database's system catalogue.
type Catalogue interface {
	// Tables names the tables of the database (its current schema).
	Tables(ctx context.Context, tx Tx) (map[string]bool, error)
	// Exists reports whether a table, index or constraint is named name.
	Exists(ctx context.Context, tx Tx, name string) (bool, error)
	// Columns describes a table's columns in order; none when there is no
	// such table.
	Columns(ctx context.Context, tx Tx, table string) ([]Column, error)
	// Follows describes the Follows table: its columns, primary key,
	// CHECKs and foreign keys.
	Follows(ctx context.Context, tx Tx) (table, error)
}

// Dialect is a database kind's adoption: its catalogue, and how it
// changes what the catalogue describes. The dialects are this package's
// (SQLite, Postgres, SQLServer); what only some can do is an optional
// interface below, found by type assertion.
type Dialect interface {
	Catalogue
	// Goose is the dialect goose records its migrations in.
	Goose() database.Dialect
	// Quote quotes a name that Rebind does not know (EF's UserUser and
	// its columns), which PostgreSQL would otherwise fold to lower case.
	Quote(name string) string
	// NameKey is the expression over a Name column (col: Name, or an
	// alias's u.Name) by which migration 1's IX_Users_Name tells names
	// apart: two names with one key are one name to the server.
	NameKey(col string) string
	// NameChecks are, beyond the checks every dialect shares, queries
	// listing the users whose Name the dialect's IX_Users_Name cannot
	// hold, one problem a row (SQL Server: a name too long for its key);
	// none where a dialect has no such limit.
	NameChecks() map[string]string
	// FitName makes Users.Name, once its rows have passed the checks, a
	// column migration 1's IX_Users_Name can index and that compares
	// names as the server does, before migration 1's statements are
	// replayed; it returns what the plan says of what it did (nothing
	// where Name is right already).
	FitName(ctx context.Context, tx Tx) ([]string, error)
	// CreatedAtProblem says why an adopted Follows.CreatedAt column (as
	// the catalogue describes it) cannot serve the server's keyset
	// cursors, or "" when it can.
	CreatedAtProblem(c Column) string
	// FixFollows makes right what verifyFollows found missing or wrong
	// in Follows' definition.
	FixFollows(ctx context.Context, tx Tx, def table, fx fixes) error
	// JoinEntitySteps are the steps, beyond migration 1's missing
	// objects, that an adopted Follows table needs for the server's
	// writes; LaterSteps says, for the plan, what the later migrations do
	// to it beyond adding counts, blocks and settings (may be empty).
	JoinEntitySteps() []Step
	LaterSteps() string
}

// Locker is a dialect whose adopting transaction waits first for other
// instances adopting, so that instances started together adopt one after
// another (the later ones then find the database adopted). SQLite's write
// transaction does that already.
type Locker interface {
	Lock(ctx context.Context, tx Tx) error
}

// Defaulter is a dialect that can give an existing column a default in
// place (not SQLite, which rebuilds Follows for that and cannot for
// Users): SetDefault is the statement.
type Defaulter interface {
	SetDefault(table, column string, c laterColumn) string
}

// DamageChecker is a dialect whose database adoption checks for damage
// first: Damaged lists what a check finds, one row a problem; any refuses
// adoption.
type DamageChecker interface {
	Damaged() string
}

// KeyChecker is a dialect that does not enforce foreign keys while
// adopting (SQLite, whose table rebuild needs them off): BrokenKeys lists
// the rows that break one, one problem a row; any refuses the commit.
type KeyChecker interface {
	BrokenKeys() string
}

// Step is a statement an adoption runs and what its plan says of it.
type Step struct{ Says, Stmt string }

// exec, query and queryRow run a statement written once for every dialect
// (see Tx).
func exec(ctx context.Context, tx Tx, query string, args ...any) error {
	_, err := tx.ExecContext(ctx, tx.Rebind(query), args...)
	return err
}

func query(ctx context.Context, tx Tx, q string, args ...any) (*sql.Rows, error) {
	return tx.QueryContext(ctx, tx.Rebind(q), args...)
}

func queryRow(ctx context.Context, tx Tx, q string, args []any, dest ...any) error {
	return tx.QueryRowContext(ctx, tx.Rebind(q), args...).Scan(dest...)
}

// scanRows runs a query and hands each row to scan.
func scanRows(ctx context.Context, tx Tx, q string, scan func(*sql.Rows) error, args ...any) error {
	rs, err := query(ctx, tx, q, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		if err := scan(rs); err != nil {
			return err
		}
	}
	return rs.Err()
}
