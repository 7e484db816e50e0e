package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// The printed schema records its migrations in goose's own table, as
// goose would, so that a server started on the database finds every
// migration applied: nothing to adopt (adopt.ShapeOf names a database
// with goose's table this server's own) and nothing to migrate. What goose
// writes, for a new database and then for each migration it applies
// (goose's provider_run.go, tryEnsureVersionTable and runSQL):
//
//   - its table, named goose.DefaultTablename (the store's provider names
//     no other), by Store.CreateVersionTable;
//   - a row for version 0 in the same transaction, by Store.Insert: goose
//     checks the table exists by looking that row up wherever its dialect
//     has no query for the table's existence (SQL Server's and SQLite's
//     have none), and without it would create the table again and fail;
//   - a row for each migration's version, by Store.Insert, in the
//     migration's transaction.
//
// Goose's query text is internal to goose (internal/dialects), but its
// database.Store is not: gooseStatements has the Store write into a
// recorder instead of a database, so the script holds goose's own text,
// whatever goose version is built in.

// gooseStatements are the statements goose runs to make its version table
// in a new database and to record versions in it, for dialect d, each
// ended with ";": its CREATE TABLE, then an INSERT for each version,
// version 0 first, its values written out as literals (see literalArgs).
func gooseStatements(d dialect, versions []int64) (create string, inserts []string, err error) {
	st, err := database.NewStore(d.gooseDialect(), goose.DefaultTablename)
	if err != nil {
		return "", nil, err
	}
	ctx := context.Background()
	var rec statementRecorder
	if err := st.CreateVersionTable(ctx, &rec); err != nil {
		return "", nil, err
	}
	for _, v := range append([]int64{0}, versions...) {
		if err := st.Insert(ctx, &rec, database.InsertRequest{Version: v}); err != nil {
			return "", nil, err
		}
	}
	for i, s := range rec.statements {
		q, err := literalArgs(d, s.query, s.args)
		if err != nil {
			return "", nil, fmt.Errorf("goose's statement %q: %w", s.query, err)
		}
		if i == 0 {
			create = q + ";"
		} else {
			inserts = append(inserts, q+";")
		}
	}
	return create, inserts, nil
}

// statementRecorder is a database/sql connection, as goose's Store takes
// one, that only records the statements executed on it.
type statementRecorder struct {
	statements []struct {
		query string
		args  []any
	}
}

var errRecorderReads = errors.New("the statement recorder reads nothing")

func (r *statementRecorder) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	r.statements = append(r.statements, struct {
		query string
		args  []any
	}{query, args})
	return nil, nil
}

func (r *statementRecorder) QueryContext(context.Context, string, ...any) (*sql.Rows, error) {
	return nil, errRecorderReads
}

// QueryRowContext cannot return its error in a *sql.Row: goose's
// CreateVersionTable and Insert, all gooseStatements calls, only execute.
func (r *statementRecorder) QueryRowContext(context.Context, string, ...any) *sql.Row {
	panic(errRecorderReads)
}

// gooseParameter is a parameter in goose's statements: SQL Server's @p1,
// PostgreSQL's $1, SQLite's ?.
var gooseParameter = regexp.MustCompile(`@p[0-9]+|\$[0-9]+|\?`)

// literalArgs writes a statement's arguments into its text, for a script,
// which has no parameters. Only goose's version rows come here: a version
// number (from a migration's file name) and is_applied's true, written as
// the dialect's boolean literal (bit 1 on SQL Server, 1 on SQLite, whose
// driver stores Go's true as that integer, true on PostgreSQL).
func literalArgs(d dialect, query string, args []any) (string, error) {
	var err error
	next := 0
	out := gooseParameter.ReplaceAllStringFunc(query, func(p string) string {
		i := next
		if p != "?" {
			n, _ := strconv.Atoi(strings.TrimLeft(p, "@p$"))
			i = n - 1
		}
		next++
		if i < 0 || i >= len(args) {
			err = fmt.Errorf("parameter %s of %d arguments", p, len(args))
			return p
		}
		switch v := args[i].(type) {
		case int64:
			return strconv.FormatInt(v, 10)
		case bool:
			if d.name() == "postgres" {
				return strconv.FormatBool(v)
			}
			if v {
				return "1"
			}
			return "0"
		}
		err = fmt.Errorf("an argument of type %T", args[i])
		return p
	})
	if err == nil && next != len(args) {
		err = fmt.Errorf("%d parameters for %d arguments", next, len(args))
	}
	return out, err
}
