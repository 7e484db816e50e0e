// Package db is the follower graph's storage: the Store and its SQL, the
// migrations that create the tables, and the seam between SQL dialects.
package db

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pressly/goose/v3"
)

//go:embed migrations
var migrations embed.FS

// Errors the store returns for outcomes a caller is expected to handle.
var (
	ErrNotFound         = errors.New("not found")
	ErrSelfFollow       = errors.New("cannot follow yourself")
	ErrNameTaken        = errors.New("name is already taken")
	ErrFollowerNotFound = errors.New("follower does not exist")
	ErrSelfBlock        = errors.New("cannot block yourself")
	ErrBlocked          = errors.New("blocked")
	ErrDeactivated      = errors.New("the account is deactivated")
	// ErrStillReferenced is a user that cannot be deleted because rows
	// the store does not manage (another app's table) still refer to it.
	ErrStillReferenced = errors.New("rows of another table still refer to the user")
	// ErrBusy is a write that met other writers and was not made: a
	// deadlock or serialization failure that was still there after the
	// transaction had been run maxTxAttempts times, or a lock the
	// database waited its limit for (SQLite's busy timeout, PostgreSQL's
	// lock_timeout). Nothing of it was kept; it may succeed if tried
	// again.
	ErrBusy = errors.New("the database is busy with other writes")

	// errRetry marks a transaction that lost a race (a deadlock, a
	// duplicate key) and may succeed if run again.
	errRetry = errors.New("transaction lost a race")
	// errDuplicate marks an insert refused because a row with its primary
	// key exists already (a follow or block of the same pair, a user id).
	errDuplicate = errors.New("a row with that key exists already")
)

// deleteError marks the error of a DELETE statement, for the dialects'
// classify (see foreignKeyViolation): the drivers do not all say which
// side of a foreign key a violation comes from.
type deleteError struct{ err error }

func (e deleteError) Error() string { return e.err.Error() }
func (e deleteError) Unwrap() error { return e.err }

// foreignKeyViolation says what a foreign key violation means, for every
// dialect's classify. On a DELETE, rows still refer to the user being
// deleted (see stillReferenced). Anywhere else, a user went between the
// check and the write: the same answer as finding it missing.
func foreignKeyViolation(err error) error {
	if errors.As(err, new(deleteError)) {
		return stillReferenced(err)
	}
	return fmt.Errorf("%w: %w", ErrNotFound, err)
}

// stillReferenced is a delete refused because rows still refer to the
// user: a follow or block that landed between DeleteUser's statements,
// which running the transaction again removes too, or else a row of a
// table the store does not manage, which the caller is told of.
func stillReferenced(err error) error {
	return fmt.Errorf("%w: %w: %w", errRetry, ErrStillReferenced, err)
}

// maxTxAttempts bounds how often a transaction that lost a race is run.
// A race lost to other writers (a deadlock, a serialization failure) is
// ErrBusy as well as errRetry, so that the last attempt's error says so.
const maxTxAttempts = 3

// busy marks err as a race lost to other writers that running the
// transaction again may win (see maxTxAttempts).
func busy(err error) error { return fmt.Errorf("%w: %w: %w", errRetry, ErrBusy, err) }

// Store is the follower graph kept in a SQL database. It is safe for
// concurrent use; open it once per process with Open.
type Store struct {
	db *sql.DB
	d  dialect
	// q are the statements d shapes, built once (see newStatements).
	q     *statements
	stmts sync.Map // statement text -> *sql.Stmt
	// onStatement, if not nil, is told how long each statement took.
	onStatement func(time.Duration)
	// Adopted says what Open found and did to an existing EF Core
	// database before migrating it (see adopt.go).
	Adopted Plan
	// Integrity says how far Open's integrity check of a SQLite file got:
	// "ok", or that it ran out of time (see WithIntegrityLimit); empty
	// where the dialect has none.
	Integrity      string
	integrityLimit time.Duration
	health         health
	// connStr is what the driver connected with.
	connStr string
	// listenDSN is WithListen's; listenConn is what the listener
	// connects with, none where it polls (see chooseListener).
	listenDSN, listenConn string
	feed                  feed
	log                   *slog.Logger // WithLogger
	// replicas answer the reads a request allows (see replicas.go); nil
	// without any.
	replicas      *replicaSet
	replicaDSNs   []string      // WithReplicas
	replicaMaxLag time.Duration // WithReplicas
	// suggestionBudget, if positive, replaces SuggestionBudget (tests).
	suggestionBudget int
	// lists and names are what suggestions keep in memory, for the
	// dialects that count in Go: followees' lists (followLists) and
	// candidates' names (heldNames).
	lists *followLists
	names *heldNames
}

// logger is where the store says what an operator should know.
func (s *Store) logger() *slog.Logger {
	if s.log == nil {
		return slog.Default()
	}
	return s.log
}

// Option sets up a Store as Open makes it.
type Option func(*Store)

// WithLogger has the store log what it decides at Open that an operator
// should know (which replicas it reads from, and why not) to log rather
// than slog.Default.
func WithLogger(log *slog.Logger) Option {
	return func(s *Store) { s.log = log }
}

// WithStatementHook has the store tell fn how long each statement took
// (for metrics).
func WithStatementHook(fn func(time.Duration)) Option {
	return func(s *Store) { s.onStatement = fn }
}

// Open connects to the database named by dsn, applies any migrations not yet
// applied, and returns the store. A dsn is a sqlserver:// URL for SQL
// Server, and otherwise a SQLite path or file: URI (see dialectFor). A new
// SQLite file is made readable by its owner only, and an existing one is
// checked for damage first (see checkIntegrity). Its errors name the
// database.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	d, connStr, err := dialectFor(dsn)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, d, dsn, connStr, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", location(d, dsn), d.classify(err))
	}
	return s, nil
}

func open(ctx context.Context, d dialect, dsn, connStr string, opts []Option) (_ *Store, err error) {
	if err := replicasFor(d, opts); err != nil {
		return nil, err // before anything touches the database
	}
	if f, ok := d.(fileDatabase); ok {
		if err := f.createFile(dsn); err != nil {
			return nil, err
		}
	}
	if err := refuseUnfinished(ctx, d, dsn); err != nil {
		return nil, err
	}
	// An EF Core database is adopted, and migrated, in one transaction
	// before the server's own connection settings touch it; one that
	// cannot be is left as it was.
	adopted, err := adoptAndMigrate(ctx, d, dsn, connStr, true)
	if err != nil {
		return nil, err
	}
	sqlDB, err := sql.Open(d.driver(), connStr)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			sqlDB.Close()
		}
	}()
	d.configure(sqlDB)
	s := &Store{db: sqlDB, d: d, q: newStatements(d), Adopted: adopted, connStr: connStr}
	for _, opt := range opts {
		opt(s)
	}
	s.lists = newFollowLists(FollowListBytes)
	s.names = newHeldNames(NameBytes)
	if err := s.checkIntegrity(ctx); err != nil {
		return nil, err
	}
	if c, ok := s.d.(serverChecker); ok {
		if err := c.checkServer(ctx, sqlDB); err != nil {
			return nil, err
		}
	}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	if c, ok := s.d.(sessionChecker); ok {
		c.checkSession(ctx, sqlDB, s.logger())
	}
	s.chooseListener()
	if err := s.openReplicas(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.replicas.close()
		}
	}()
	// Prepared now, while no transaction holds a connection: a
	// transaction uses only statements prepared before it began.
	for _, text := range s.writeStatements() {
		if _, err := s.stmt(ctx, text); err != nil {
			return nil, fmt.Errorf("prepare %.40q: %w", text, err)
		}
	}
	return s, nil
}

// writeStatements are the statements that write transactions run.
func (s *Store) writeStatements() []string {
	texts := []string{s.q.insertFollow, s.q.insertUser, deleteFollow,
		s.q.selectPairUsers, s.q.lockAroundUser, aroundUser, s.q.lockUsers, deleteUserFollows, deleteUserBlocks, deleteUser, countPairBlocks,
		updateFollow, selectFollow, insertBlock, deletePairFollows, deleteBlock,
		deactivateUser, reactivateUser, recountAround, selectUserByID}
	if l, ok := s.d.(eventLocker); ok {
		texts = append(texts, l.lockEvents())
	}
	texts = append(texts, s.q.insertEvent)
	if l, ok := s.d.(eventListener); ok {
		texts = append(texts, l.notifyEvent())
	}
	if len(s.replicaDSNs) > 0 {
		texts = append(texts, markWriting)
	}
	return texts
}

// Close stops the event feed and releases the prepared statements and
// the connection pool.
func (s *Store) Close() error {
	s.stopFeed()
	s.replicas.close()
	s.stmts.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
	return s.db.Close()
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.db.PingContext(ctx)
}

func (s *Store) migrate(ctx context.Context) error {
	fsys, err := fs.Sub(migrations, "migrations/"+s.d.name())
	if err != nil {
		return fmt.Errorf("migrations for %s: %w", s.d.name(), err)
	}
	var opts []goose.ProviderOption
	locking, locks := s.d.(sessionLocking)
	if locks {
		l, err := locking.sessionLocker()
		if err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(l))
	}
	if l, ok := s.d.(migrationLocking); ok {
		locks = true
		opts = append(opts, goose.WithLocker(l.migrationLocker()))
	}
	p, err := goose.NewProvider(s.d.gooseDialect(), s.db, fsys, opts...)
	if err != nil {
		return fmt.Errorf("prepare migrations: %w", err)
	}
	// Without a session lock (SQLite), instances started together race:
	// each lists what is pending, then applies each migration in a
	// transaction that waits for the write lock. The loser's migration
	// fails on what the winner's made (every migration creates or alters
	// something, so a second run is refused), rolls back whole, and Up
	// runs again, to find it applied. Each lost race follows another
	// instance's progress, so the reruns are bounded.
	for attempt := 0; ; attempt++ {
		_, err := p.Up(ctx)
		if err == nil {
			return nil
		}
		if locks || attempt >= len(p.ListSources()) || !appliedMeanwhile(ctx, p, err) {
			return fmt.Errorf("apply migrations: %w", err)
		}
	}
}

// appliedMeanwhile reports whether the migration that failed with err is
// applied now, by another instance.
func appliedMeanwhile(ctx context.Context, p *goose.Provider, err error) bool {
	var pe *goose.PartialError
	if !errors.As(err, &pe) || pe.Failed == nil {
		return false
	}
	v, verr := p.GetDBVersion(ctx)
	return verr == nil && v >= pe.Failed.Source.Version
}

// Stats counts the SQL statements run on behalf of one request, so that
// N+1 query shapes are visible and can be asserted in tests.
type Stats struct {
	queries atomic.Int64
	nanos   atomic.Int64
}

// Queries is the number of SQL statements run so far.
func (st *Stats) Queries() int64 { return st.queries.Load() }

// Duration is the time spent in those statements, summed.
func (st *Stats) Duration() time.Duration { return time.Duration(st.nanos.Load()) }

type statsKey struct{}

// WithStats returns a context whose SQL statements are counted in the
// returned Stats.
func WithStats(ctx context.Context) (context.Context, *Stats) {
	st := &Stats{}
	return context.WithValue(ctx, statsKey{}, st), st
}

// StatsFrom returns the Stats that WithStats put in ctx, or nil.
func StatsFrom(ctx context.Context) *Stats {
	st, _ := ctx.Value(statsKey{}).(*Stats)
	return st
}

func (s *Store) record(ctx context.Context, start time.Time) {
	d := time.Since(start)
	if st := StatsFrom(ctx); st != nil {
		st.queries.Add(1)
		st.nanos.Add(int64(d))
	}
	if s.onStatement != nil {
		s.onStatement(d)
	}
}

// stmt returns the prepared form of a statement text, preparing it once per
// process: the SQLite driver otherwise re-prepares every statement, which
// for a many-branch UNION ALL costs more than running it.
//
// It returns nil where the driver caches statements itself (see
// driverCaching): on PostgreSQL, pgx does, as the DSN's
// default_query_exec_mode says.
func (s *Store) stmt(ctx context.Context, text string) (*sql.Stmt, error) {
	if _, ok := s.d.(driverCaching); ok {
		return nil, nil
	}
	if st, ok := s.stmts.Load(text); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.db.PrepareContext(ctx, s.d.rebind(text))
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.stmts.LoadOrStore(text, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// runner runs statements either on the pool or inside one transaction,
// counting each and reusing prepared statements in both cases.
type runner struct {
	s  *Store
	tx *sql.Tx
	// primary keeps a read on the primary whatever its request allows.
	primary bool
	// writes, in a transaction, are the users it writes for (see
	// replicas.go); nil without replicas.
	writes *writes
}

// prepared returns the statement's prepared form, or nil where the
// driver caches statements (see Store.stmt), and inside a transaction when
// it has none yet. A transaction must not prepare through the pool: while
// it holds SQLite's write lock, every other connection may be waiting for
// that lock, and the pool would have none to give.
func (r runner) prepared(ctx context.Context, text string) (*sql.Stmt, error) {
	if r.tx != nil {
		if st, ok := r.s.stmts.Load(text); ok {
			return r.tx.StmtContext(ctx, st.(*sql.Stmt)), nil
		}
		return nil, nil
	}
	return r.s.stmt(ctx, text)
}

// conn is what runs a statement that has no prepared form: the
// transaction, or else the pool.
func (r runner) conn() interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	ExecContext(context.Context, string, ...any) (sql.Result, error)
} {
	if r.tx != nil {
		return r.tx
	}
	return r.s.db
}

// args converts parameters to the driver's preferred forms.
func (r runner) args(args []any) []any {
	for i, a := range args {
		args[i] = r.s.d.arg(a)
	}
	return args
}

// rows are a statement's result rows; closing them records the statement,
// so that its time includes reading the rows, where most of it goes.
type rows struct {
	*sql.Rows
	done func()
	// hidden is how many leading columns, users read along with the
	// statement's own rows (see scanAlong), Scan and Columns leave out.
	hidden int
}

func (r *rows) Scan(dest ...any) error {
	if r.hidden == 0 {
		return r.Rows.Scan(dest...)
	}
	return r.Rows.Scan(append(discards[:r.hidden:r.hidden], dest...)...)
}

func (r *rows) Columns() ([]string, error) {
	cols, err := r.Rows.Columns()
	if err != nil {
		return nil, err
	}
	return cols[r.hidden:], nil
}

func (r *rows) Close() error {
	err := r.Rows.Close()
	if r.done != nil {
		r.done()
		r.done = nil
	}
	return err
}

func (r runner) query(ctx context.Context, text string, args ...any) (*rows, error) {
	start := time.Now()
	ctx, span := r.s.traceStatement(ctx, r.s.db, text)
	args = r.args(args)
	done := func() { r.s.record(ctx, start) }
	if span != nil {
		// A closure of its own, so that an untraced statement's is no larger.
		done = func() { r.s.record(ctx, start); span.end(nil) }
	}
	if r.tx == nil && r.s.replicas != nil {
		if res, ok := r.queryReplica(ctx, text, args); ok {
			return &rows{Rows: res, done: done}, nil
		}
	}
	st, err := r.prepared(ctx, text)
	var res *sql.Rows
	if err == nil && st == nil {
		res, err = r.conn().QueryContext(ctx, r.s.d.rebind(text), args...)
	} else if err == nil {
		res, err = st.QueryContext(ctx, args...)
	}
	if err != nil {
		r.s.record(ctx, start)
		span.end(err)
		return nil, err
	}
	return &rows{Rows: res, done: done}, nil
}

func (r runner) exec(ctx context.Context, text string, args ...any) (_ sql.Result, err error) {
	ctx, span := r.s.traceStatement(ctx, r.s.db, text)
	defer func() { span.end(err) }()
	defer r.s.record(ctx, time.Now())
	defer func() {
		if err != nil && strings.HasPrefix(text, "DELETE") {
			err = deleteError{err}
		}
	}()
	args = r.args(args)
	st, err := r.prepared(ctx, text)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return r.conn().ExecContext(ctx, r.s.d.rebind(text), args...)
	}
	return st.ExecContext(ctx, args...)
}

// queryRow scans the single row a statement returns into dest; it returns
// sql.ErrNoRows when there is none.
func (r runner) queryRow(ctx context.Context, text string, args []any, dest ...any) error {
	rows, err := r.query(ctx, text, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}

func (s *Store) read() runner { return runner{s: s} }

// inTx runs fn in one write transaction, committing when it returns nil,
// and runs it again, at most maxTxAttempts times in all, while it loses
// races (errRetry) and the context lasts. On SQLite the transaction takes
// the write lock when it begins (see the DSN's _txlock), so a read
// followed by a write never fails with SQLITE_BUSY; a BEGIN that waited
// the busy timeout out is ErrBusy and not run again, as the wait was
// SQLite's own retrying (see classifySQLite).
func (s *Store) inTx(ctx context.Context, fn func(r runner) error) error {
	for attempt := 1; ; attempt++ {
		tx, err := s.db.BeginTx(ctx, nil)
		w := s.newWrites(ctx)
		if err != nil {
			err = s.d.classify(err)
		} else {
			err = s.runTx(ctx, tx, w, fn)
		}
		if err == nil {
			s.recordWrites(ctx, w)
		}
		if attempt < maxTxAttempts && errors.Is(err, errRetry) && ctx.Err() == nil {
			continue
		}
		return err
	}
}

// runTx runs fn in tx and commits when fn returns nil. The deferred
// Rollback (a no-op after Commit) ends the transaction on every other way
// out, a panic in fn included: otherwise the transaction, and on SQLite the
// write lock, would stay held until its context ended, which for a
// background context is never. How it ended tells the store's health
// whether the storage took the write.
func (s *Store) runTx(ctx context.Context, tx *sql.Tx, w *writes, fn func(r runner) error) (err error) {
	defer tx.Rollback()
	defer func() { s.health.wrote(err) }()
	r := runner{s: s, tx: tx, writes: w}
	if err := w.begin(ctx, r); err != nil {
		return s.d.classify(err)
	}
	if err := fn(r); err != nil {
		return s.d.classify(err)
	}
	if err := tx.Commit(); err != nil {
		return s.d.classify(err)
	}
	return nil
}

func nowUTC() time.Time { return time.Now().UTC() }

// lookup runs a batch statement whose rows each answer one of keys, and
// returns the answers in the order of keys; a key with no row gets V's zero
// value. scan reads a row into its key and answer.
func lookup[K comparable, V any](ctx context.Context, s *Store, text string, arg any, keys []K, scan func(*rows) (K, V, error)) ([]V, error) {
	rs, err := s.read().query(ctx, text, arg)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	found := make(map[K]V, len(keys))
	for rs.Next() {
		k, v, err := scan(rs)
		if err != nil {
			return nil, err
		}
		found[k] = v
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	out := make([]V, len(keys))
	for i, k := range keys {
		out[i] = found[k]
	}
	return out, nil
}
