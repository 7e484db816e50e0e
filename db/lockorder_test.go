package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"

	"follows/db/pgtest"
)

// Every write path runs against every other on one small graph, where
// they meet on the same users' rows: accounts deleting themselves while
// others follow and unfollow them, deactivation and reactivation, blocks
// and unblocks, follows and unfollows among everyone (and so the count
// triggers under each). Each path either does its work or gets the domain
// answer the race it lost calls for (the user is gone, deactivated,
// blocked); never a deadlock, a busy database or any other error, which a
// client would see as a failure of the server. The counts are exact at
// the end. The lock order these paths keep is docs/architecture.md's
// "Lock order".
func TestLockOrder(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		runLockOrderStorm(t, s, lockOrderStorm{
			stable: 10, deleters: 4, victims: 4,
			followers: 8, followOps: 40,
			deactivations: 12, blocks: 12,
		})
	})
}

// lockOrderStorm sizes a run of runLockOrderStorm: how many users stay
// throughout; how many goroutines each create and delete victims, and
// how many victims each; how many goroutines follow and unfollow, and how
// many times each; how many deactivations (each with its reactivation) and
// blocks (each with its unblock) one goroutine each makes.
type lockOrderStorm struct {
	stable, deleters, victims, followers, followOps, deactivations, blocks int
}

func runLockOrderStorm(t *testing.T, s *Store, st lockOrderStorm) {
	ctx := context.Background()
	var pool userPool
	for i := range st.stable {
		u, err := s.CreateUser(ctx, fmt.Sprintf("stable%d", i))
		if err != nil {
			t.Fatal(err)
		}
		pool.add(u.ID)
	}
	var deleted sync.Map // id -> true
	var unexpected atomic.Int32
	check := func(what string, err error, allowed ...error) {
		t.Helper()
		if err == nil {
			return
		}
		for _, a := range allowed {
			if errors.Is(err, a) {
				return
			}
		}
		// A few are enough to say what went wrong.
		if unexpected.Add(1) <= 5 {
			t.Errorf("%s: %v", what, err)
		}
	}
	// Whom an act of actor on target may find gone or deactivated: either.
	gone := []error{ErrNotFound, ErrFollowerNotFound, ErrDeactivated}

	var wg sync.WaitGroup
	for d := range st.deleters {
		wg.Go(func() {
			for v := range st.victims {
				u, err := s.CreateUser(ctx, fmt.Sprintf("victim%d_%d", d, v))
				if err != nil {
					t.Errorf("create a victim: %v", err)
					return
				}
				pool.add(u.ID)
				// The victim follows a few and is followed by a few, so
				// that its delete has users around it to lock and count.
				for range 3 {
					other := pool.pick()
					_, err := s.Follow(ctx, u.ID, other)
					check("victim follows", err, append(gone, ErrBlocked, ErrSelfFollow)...)
					_, err = s.Follow(ctx, other, u.ID)
					check("follow a victim", err, append(gone, ErrBlocked, ErrSelfFollow)...)
				}
				// A self-delete: the API's deleteUser by the user itself.
				_, err = s.DeleteUser(ctx, u.ID)
				check("delete a victim", err)
				deleted.Store(u.ID, true)
				pool.remove(u.ID)
			}
		})
	}
	for range st.followers {
		wg.Go(func() {
			for n := range st.followOps {
				a, b := pool.pair()
				var err error
				if n%3 == 2 {
					_, err = s.Unfollow(ctx, a, b)
				} else {
					_, err = s.Follow(ctx, a, b)
				}
				check(fmt.Sprintf("follow/unfollow %d -> %d", a, b), err, append(gone, ErrBlocked)...)
			}
		})
	}
	wg.Go(func() {
		for range st.deactivations {
			id := pool.pick()
			_, _, err := s.SetDeactivated(ctx, id, true)
			check("deactivate", err, ErrNotFound)
			_, _, err = s.SetDeactivated(ctx, id, false)
			check("reactivate", err, ErrNotFound)
		}
	})
	wg.Go(func() {
		for range st.blocks {
			a, b := pool.pair()
			_, err := s.Block(ctx, a, b)
			check("block", err, gone...)
			_, err = s.Unblock(ctx, a, b)
			check("unblock", err, gone...)
		}
	})
	wg.Wait()
	if n := unexpected.Load(); n > 5 {
		t.Errorf("... %d unexpected errors in all", n)
	}

	if s.d.name() == "postgres" {
		// A deadlock the store ran again leaves no error; the database
		// counts it. The pool's sessions report their counts when they
		// end.
		if n := postgresDeadlocks(t, s); n > 0 {
			t.Errorf("PostgreSQL broke %d deadlocks between the write paths; they must take their locks in one order", n)
		}
	}
	requireExactCounts(t, s, "the storm")
	deleted.Range(func(id, _ any) bool {
		var left int
		if err := s.rawQueryRow(`SELECT (SELECT COUNT(*) FROM Follows WHERE FollowerId = ? OR FolloweeId = ?) + (SELECT COUNT(*) FROM Blocks WHERE BlockerId = ? OR BlockedId = ?)`, id, id, id, id).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Errorf("%d follow or block rows of deleted user %d left", left, id)
		}
		return true
	})
}

// userPool is the ids of the users a storm's goroutines act on.
type userPool struct {
	mu  sync.Mutex
	ids []int64
}

func (p *userPool) add(id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids = append(p.ids, id)
}

func (p *userPool) remove(id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.ids {
		if x == id {
			p.ids = append(p.ids[:i], p.ids[i+1:]...)
			return
		}
	}
}

func (p *userPool) pick() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids[rand.IntN(len(p.ids))]
}

// pair picks two different users.
func (p *userPool) pair() (int64, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := rand.IntN(len(p.ids))
	j := rand.IntN(len(p.ids) - 1)
	if j >= i {
		j++
	}
	return p.ids[i], p.ids[j]
}

// postgresDeadlocks is how many deadlocks PostgreSQL detected in the
// store's database, once the store's sessions have ended (a session
// reports its statistics when it ends, or at most each second).
func postgresDeadlocks(t *testing.T, s *Store) int64 {
	t.Helper()
	s.db.SetMaxIdleConns(0) // ends the pool's sessions, which are all idle now
	ctx := context.Background()
	var n int64
	for range 50 {
		var others int
		err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others)
		if err != nil {
			t.Fatal(err)
		}
		if others == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT pg_stat_clear_snapshot(), deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(new(any), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A race lost to other writers, still lost after the transaction has run
// maxTxAttempts times, is ErrBusy (SERVER_BUSY to a client), never an
// unclassified error; a lock the database already waited its limit for is
// ErrBusy at once, not waited for again.
func TestLostRacesEndBusy(t *testing.T) {
	t.Parallel()
	s := openTestStore(t)
	for _, tc := range []struct {
		name     string
		err      error
		wantRuns int
	}{
		{"deadlock", classifyPostgres(&pgconn.PgError{Code: "40P01"}), maxTxAttempts},
		{"serialization failure", classifyPostgres(&pgconn.PgError{Code: "40001"}), maxTxAttempts},
		{"users around changed", busy(errors.New("the users around user 1 changed")), maxTxAttempts},
		{"SQL Server deadlock victim", classifySQLServer(mssql.Error{Number: 1205, Message: "deadlock victim"}), maxTxAttempts},
		{"lock_timeout", classifyPostgres(&pgconn.PgError{Code: "55P03"}), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			err := s.inTx(context.Background(), func(r runner) error {
				runs++
				return tc.err
			})
			if !errors.Is(err, ErrBusy) || runs != tc.wantRuns {
				t.Errorf("%d runs, then %v; want %d runs, then ErrBusy", runs, err, tc.wantRuns)
			}
		})
	}
}

// SQLite's busy timeout running out (another connection, here another
// process's, holds the write lock) is ErrBusy, on the first attempt: the
// busy handler has retried for the whole timeout. The DSN's own busy
// timeout is kept, so that an operator (and this test) can set it.
func TestSQLiteBusyTimeoutIsErrBusy(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "follows.db")
	s, err := Open(context.Background(), path+"?_pragma=busy_timeout(50)")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var timeout int
	if err := s.rawQueryRow(`PRAGMA busy_timeout`).Scan(&timeout); err != nil || timeout != 50 {
		t.Fatalf("the store's busy timeout = %d ms (%v), want the DSN's 50", timeout, err)
	}
	ctx := context.Background()
	id := users(t, s, "alice", "bob")

	holder := holdSQLiteWriteLock(t, path)
	_, err = s.Follow(ctx, id["alice"], id["bob"])
	if !errors.Is(err, ErrBusy) {
		t.Errorf("follow while another connection writes: %v, want ErrBusy", err)
	}
	if _, err := s.CreateUser(ctx, "carol"); !errors.Is(err, ErrBusy) {
		t.Errorf("sign-up while another connection writes: %v, want ErrBusy", err)
	}
	holder()
	if _, err := s.Follow(ctx, id["alice"], id["bob"]); err != nil {
		t.Errorf("follow once the lock is free: %v", err)
	}
}

// holdSQLiteWriteLock takes the write lock of the SQLite file at path on
// a connection of its own, and returns what lets it go.
func holdSQLiteWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := raw.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	return func() {
		conn.ExecContext(context.Background(), `ROLLBACK`)
		conn.Close()
		raw.Close()
	}
}

// On PostgreSQL, a lock_timeout the DSN sets running out is ErrBusy.
func TestPostgresLockTimeoutIsErrBusy(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t, "the PostgreSQL lock timeout test")
	s, err := Open(context.Background(), withParam(dsn, "lock_timeout=100"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	id := users(t, s, "alice", "bob")
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM "Users" WHERE "Id" = $1 FOR UPDATE`, id["bob"]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Follow(ctx, id["alice"], id["bob"]); !errors.Is(err, ErrBusy) {
		t.Errorf("follow of a user another transaction holds: %v, want ErrBusy", err)
	}
}

// withParam adds a query parameter to a URL.
func withParam(dsn, param string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + param
	}
	return dsn + "?" + param
}
