package move_test

import (
	"strconv"
	"testing"

	"follows/db/adopt/eftest"
)

// The EF Core databases export must read as they are (docs/efcore): the
// fixtures adoption's tests use, written once in eftest.
const (
	efConvention     = eftest.SQLiteConvention
	npgsqlConvention = eftest.NpgsqlConvention
	npgsqlJoinEntity = eftest.NpgsqlJoinEntity
)

var (
	efFollows      = eftest.Follows
	userUserRows   = eftest.UserUserRows
	makePostgresDB = eftest.Postgres
	pgTables       = eftest.PGTables
)

// makeDB writes a SQLite file as an EF Core app would have left it.
func makeDB(t *testing.T, ddl, rows string) string {
	t.Helper()
	return eftest.SQLite(t, ddl+"\n"+rows)
}

func itoa(n int) string { return strconv.Itoa(n) }
