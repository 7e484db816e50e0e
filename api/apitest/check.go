package apitest

import (
	"database/sql"

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
// mix of writes: on SQLite what the function CheckGraph checks, and on
// PostgreSQL, which enforces its foreign keys itself, that kept counts
// equal recounts.
func (s *Server) CheckGraph() {
	s.t.Helper()
	if s.Database == SQLite {
		CheckGraph(s.t, s.DBPath)
		return
	}
	raw, err := sql.Open("pgx", s.DSN)
	if err != nil {
		s.t.Fatal(err)
	}
	defer raw.Close()
	var drift int
	if err := raw.QueryRow(countDrift).Scan(&drift); err != nil {
		s.t.Fatal(err)
	}
	if drift != 0 {
		s.t.Errorf("%d users' counts differ from a recount", drift)
	}
}
