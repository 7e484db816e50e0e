package resolvers_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"follows/api/apitest"
)

// A write that waited its limit for a lock another writer holds (SQLite's
// busy timeout, PostgreSQL's lock_timeout) answers SERVER_BUSY, saying
// nothing was written and to try again, not INTERNAL_SERVER_ERROR; once
// the lock is free the same write succeeds.
func TestBusyDatabaseAnswersServerBusy(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, on apitest.Database) {
		t.Parallel()
		var s *apitest.Server
		if on == apitest.SQLite {
			s = apitest.StartDSN(t, "_pragma=busy_timeout(50)")
		} else {
			s = apitest.StartOn(t, withParam(on.NewDSN(t), "lock_timeout=100"))
		}
		alice, bob := s.CreateUser("alice"), s.CreateUser("bob")
		follow := func() apitest.Response {
			return s.Do(alice.Token, `mutation($id: ID!) { follow(input: {userId: $id}) { followee { followerCount } } }`,
				map[string]any{"id": bob.ID})
		}

		release := holdLock(t, s, "bob")
		r := follow()
		if r.Code() != "SERVER_BUSY" || !strings.Contains(r.Errors[0].Message, "try again") {
			t.Errorf("follow while another writer holds the lock: %+v, want SERVER_BUSY saying to try again", r.Errors)
		}
		release()
		if r := follow(); len(r.Errors) > 0 {
			t.Errorf("follow once the lock is free: %+v", r.Errors)
		}
	})
}

// holdLock has another connection hold what a follow of the user named
// name must wait for: SQLite's write lock, or the user's row on
// PostgreSQL. It returns
// what lets it go.
func holdLock(t *testing.T, s *apitest.Server, name string) (release func()) {
	t.Helper()
	ctx := context.Background()
	var raw *sql.DB
	if s.Database == apitest.SQLite {
		raw = apitest.OpenRaw(t, s.DBPath) // not s.DSN, which carries the server's busy timeout
	} else {
		raw = apitest.OpenDSN(t, s.DSN)
	}
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var tx *sql.Tx
	if s.Database == apitest.SQLite {
		_, err = conn.ExecContext(ctx, `BEGIN IMMEDIATE`)
	} else {
		if tx, err = conn.BeginTx(ctx, nil); err == nil {
			_, err = tx.ExecContext(ctx, `SELECT 1 FROM "Users" WHERE "Name" = $1 FOR UPDATE`, name)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		if tx != nil {
			tx.Rollback()
		} else {
			conn.ExecContext(ctx, `ROLLBACK`)
		}
		conn.Close()
	}
}

// withParam adds a query parameter to a URL.
func withParam(dsn, param string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + param
	}
	return dsn + "?" + param
}
