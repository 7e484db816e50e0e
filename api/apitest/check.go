package apitest

import (
	"database/sql"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// countDrift counts the users whose kept counts differ from a recount of
// the follows whose other end is an active account. The names are quoted
// as PostgreSQL needs them, which SQLite reads the same.
const countDrift = `SELECT COUNT(*) FROM "Users" AS u
  WHERE u."FollowerCount" <> (SELECT COUNT(*) FROM "Follows" AS f JOIN "Users" AS o ON o."Id" = f."FollowerId"
                              WHERE f."FolloweeId" = u."Id" AND o."DeactivatedAt" IS NULL)
     OR u."FollowingCount" <> (SELECT COUNT(*) FROM "Follows" AS f JOIN "Users" AS o ON o."Id" = f."FolloweeId"
                              WHERE f."FollowerId" = u."Id" AND o."DeactivatedAt" IS NULL)`

// CheckGraph asserts what must hold of the server's database after any
// mix of writes: see CheckDSN.
func (s *Server) CheckGraph() {
	s.t.Helper()
	CheckDSN(s.t, s.DSN)
}

// isPostgres tells a PostgreSQL DSN from a SQLite one, as db.Open does.
func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// OpenDSN opens the database a DSN names directly, beside a server that
// has it open, until the test ends: a SQLite file (as OpenRaw does) or a
// PostgreSQL database. Statements on it quote the model's names, as
// PostgreSQL needs them and SQLite reads them the same.
func OpenDSN(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	if !isPostgres(dsn) {
		return OpenRaw(t, dsn)
	}
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

// CheckDSN asserts what must hold of a database after any mix of writes:
// on SQLite what the function CheckGraph checks, and on PostgreSQL, which
// enforces its foreign keys itself, that kept counts equal recounts.
func CheckDSN(t testing.TB, dsn string) {
	t.Helper()
	if !isPostgres(dsn) {
		CheckGraph(t, dsn)
		return
	}
	raw := OpenDSN(t, dsn)
	var drift int
	if err := raw.QueryRow(countDrift).Scan(&drift); err != nil {
		t.Fatal(err)
	}
	if drift != 0 {
		t.Errorf("%d users' counts differ from a recount", drift)
	}
}
