package db

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3/lock"
)

// PostgreSQL through a transaction-mode pooler (PgBouncer): a server
// connection is the client's only for a transaction, so nothing the
// store relies on may outlive one. Here: the migration lock, how the
// store learns that it goes through a pooler, and the check that its
// sessions run without JIT. See docs/pgbouncer.md.

var (
	_ migrationLocking = (*postgresDialect)(nil)
	_ driverCaching    = (*postgresDialect)(nil)
	_ sessionChecker   = (*postgresDialect)(nil)
)

// cachesStatements: pgx keeps each connection's statements as the DSN's
// default_query_exec_mode says: named prepared statements by default
// (cache_statement), none with cache_describe, exec or simple_protocol,
// the modes that work through a transaction-mode pooler.
func (*postgresDialect) cachesStatements() {}

// postgresFor is the dialect of a postgres:// DSN and the connection
// string the driver takes: the DSN itself, or, through a pooler (see
// pooledDSN), its configuration registered with pgx's database/sql driver,
// so that a statement whose context ends is left to finish rather than
// cancelled. PgBouncer 1.18 stops on cancellations: pgx's default closes
// the connection at once, PgBouncer then cancels the statement itself,
// and a reply arriving in that state ends it ("server_proto: server in
// bad state: 11", pgbouncer/pgbouncer#822, fixed later by #927); a cancel
// request sent through it instead ended it too ("disconnect_client(): bad
// client state: 0"), both in the tests through it. The store's statements
// take milliseconds; one still running 30 s after its context ended has
// its connection closed.
func postgresFor(dsn string) (dialect, string, error) {
	mode, pooled := pooledDSN(dsn)
	if !pooled {
		return &postgresDialect{}, dsn, nil
	}
	if name, ok := pooledConfigs.Load(dsn); ok {
		return &postgresDialect{pooled: mode}, name.(string), nil
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, "", err
	}
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn(), DeadlineDelay: 30 * time.Second}
	}
	name, _ := pooledConfigs.LoadOrStore(dsn, stdlib.RegisterConnConfig(cfg))
	return &postgresDialect{pooled: mode}, name.(string), nil
}

// pooledConfigs are the names pooled DSNs' configurations are registered
// under, one per DSN for the process's life.
var pooledConfigs sync.Map

// pooledDSN reports whether a connection string asks pgx for a mode
// without named prepared statements, which is what a transaction-mode
// pooler needs: the store then takes it to go through one (and does not
// LISTEN on it, see Store.listenConn).
func pooledDSN(connStr string) (mode string, pooled bool) {
	cfg, err := pgx.ParseConfig(connStr)
	if err != nil {
		return "", false // the pool's connecting says what is wrong
	}
	switch m := cfg.DefaultQueryExecMode; m {
	case pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol:
		return m.String(), true
	default:
		return m.String(), false
	}
}

// migrationLocker: a transaction-scoped advisory lock, held by a
// transaction left open while the migrations run on other connections
// and rolled back after. A pooler keeps a transaction on one server
// connection, where a session's lock (goose's session locker) would
// stay behind on a connection other clients then use, or be taken on one
// and released on another. The key is goose's, which the session
// locker used: instances of an older version, which take it for the
// session, still wait for these and these for them. No migration may
// wait for every open transaction (CREATE INDEX CONCURRENTLY would
// wait for this one).
func (*postgresDialect) migrationLocker() lock.Locker { return &postgresMigrationLock{} }

type postgresMigrationLock struct {
	mu sync.Mutex
	tx *sql.Tx
}

func (l *postgresMigrationLock) Lock(ctx context.Context, db *sql.DB) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin the migration lock's transaction: %w", err)
	}
	// Another instance migrating holds it: wait for it as long as the
	// session lock's polling did, five minutes, then fail.
	if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '300s'`); err != nil {
		tx.Rollback()
		return fmt.Errorf("migration lock: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, lock.DefaultLockID); err != nil {
		tx.Rollback()
		return fmt.Errorf("wait for the migration lock: %w", err)
	}
	l.tx = tx
	return nil
}

func (l *postgresMigrationLock) Unlock(context.Context, *sql.DB) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tx == nil {
		return nil
	}
	err := l.tx.Rollback() // it wrote nothing; ending it releases the lock
	l.tx = nil
	return err
}

// checkSession: the server's sessions run without JIT (why: see
// migrations/postgres/00009_sessions_without_jit.sql), which a migration
// sets for the migrating role in the database. The settings apply to
// sessions that start after it, so the connections goose migrated on
// are closed (a pooler's server connections stay until it renews them:
// docs/pgbouncer.md). When neither the session nor a role's or the
// database's setting says off (a DBA migrated as another role, or the
// role may not change its settings), the log says what to run.
func (d *postgresDialect) checkSession(ctx context.Context, db *sql.DB, log *slog.Logger) {
	db.SetMaxIdleConns(0)
	d.configure(db)
	var session string
	var defaultOff bool
	err := db.QueryRowContext(ctx, `SELECT current_setting('jit'), EXISTS (
  SELECT FROM pg_db_role_setting AS s, pg_options_to_table(s.setconfig) AS o
  WHERE s.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))
    AND s.setrole IN (0, (SELECT oid FROM pg_roles WHERE rolname = current_user))
    AND o.option_name = 'jit' AND o.option_value = 'off')`).Scan(&session, &defaultOff)
	if err != nil {
		log.Warn("could not check the sessions' jit setting", "err", err)
		return
	}
	if session != "off" && !defaultOff {
		log.Warn("PostgreSQL's JIT is on in the server's sessions: batched statements (suggestions) compile on every run; run as the server's role: ALTER ROLE CURRENT_USER IN DATABASE <database> SET jit = off (see docs/pgbouncer.md)",
			"jit", session)
	}
}

// WithListen has the store LISTEN for other processes' events on a
// connection made with dsn (a postgres:// URL) rather than with Open's:
// LISTEN needs a session, which a transaction-mode pooler does not keep,
// so dsn should reach PostgreSQL directly. Other databases ignore it.
func WithListen(dsn string) Option {
	return func(s *Store) { s.listenDSN = dsn }
}

// chooseListener picks the connection the event feed listens on (see
// Store.listen): WithListen's, else Open's unless that goes through a
// pooler (pooledDSN), where LISTEN would sit on a server connection that
// other clients go on using and hear nothing: then the feed polls the
// outbox, and the log says so.
func (s *Store) chooseListener() {
	if _, ok := s.d.(eventListener); !ok {
		if s.listenDSN != "" {
			s.logger().Warn("-db-listen is for PostgreSQL; ignored", "db", s.d.name())
		}
		return
	}
	pooled := ""
	if d, ok := s.d.(*postgresDialect); ok {
		pooled = d.pooled
	}
	switch {
	case s.listenDSN != "":
		s.listenConn = s.listenDSN
	case pooled != "":
		s.logger().Warn("the database DSN asks for default_query_exec_mode "+pooled+", as through a connection pooler, where LISTEN hears nothing: "+
			"other instances' follow events reach this one's subscriptions by polling the outbox; give -db-listen a DSN that reaches PostgreSQL directly to have them at once (see docs/pgbouncer.md)",
			"poll", s.feed.cfg.Poll)
	default:
		s.listenConn = s.connStr
	}
}
