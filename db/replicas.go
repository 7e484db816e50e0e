package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Read replicas: PostgreSQL streaming hot standbys that answer reads the
// primary would otherwise answer (docs/replicas.md). Three rules hold:
//
//   - Only what a request marks with ReadFromReplica may go to a replica:
//     its reads outside transactions. Transactions, writes, the events
//     outbox and its LISTEN, and everything unmarked stay on the primary.
//   - Read your writes, on every instance: each transaction of a viewer's
//     (WritesBy) marks the viewer's row of ViewerWrites on the primary, and
//     after the commit records there the primary's WAL position. A marked
//     request of that viewer reads the row once, on the primary, and uses
//     a replica only if its replay position has reached it.
//   - Bounded staleness: a replica is used only while its last probe
//     (every probeEvery) found it in recovery and at most maxLag behind;
//     one that fails a read is dropped until a probe finds it well again,
//     and the read runs again on the primary.
type replicaSet struct {
	maxLag time.Duration
	list   []*replica
	next   atomic.Uint64 // round robin over list
	// primaryReads counts reads outside transactions the primary answered.
	primaryReads atomic.Uint64
	positions    walPositions
	log          *slog.Logger
	stop         context.CancelFunc
	done         sync.WaitGroup
}

// replica is one standby's pool and what its last probe found.
type replica struct {
	name  string // replica1, replica2... in the order given: no credentials
	db    *sql.DB
	reads atomic.Uint64
	state atomic.Pointer[replicaState]
}

type replicaState struct {
	usable bool
	replay int64         // WAL position replayed, as of the probe
	lag    time.Duration // how old its data is, to within probeEvery
	why    string        // why it is not usable
}

// probeEvery is how often each replica's replay position, and the
// primary's WAL position, are read: one statement per replica and one on
// the primary per period, shared by every request.
const probeEvery = 200 * time.Millisecond

// probeTimeout bounds one probe, so that an unreachable host counts as
// down rather than holding the probe up.
const probeTimeout = time.Second

// unrecorded is the position a viewer's row holds from a transaction's
// start until its commit position is recorded: no replica reaches it.
const unrecorded = math.MaxInt64

// DefaultReplicaMaxLag is how far behind the primary a replica may be and
// still answer reads.
const DefaultReplicaMaxLag = 5 * time.Second

// WithReplicas has reads that a request allows (ReadFromReplica) answered
// by these PostgreSQL standbys of the primary, each while at most maxLag
// behind it. Open refuses them for any other database.
func WithReplicas(dsns []string, maxLag time.Duration) Option {
	return func(s *Store) { s.replicaDSNs, s.replicaMaxLag = dsns, maxLag }
}

// Replicas is how many replicas the store was given.
func (s *Store) Replicas() int {
	if s.replicas == nil {
		return 0
	}
	return len(s.replicas.list)
}

// replicasFor refuses replicas for a database other than PostgreSQL.
func replicasFor(d dialect, opts []Option) error {
	var given Store
	for _, opt := range opts {
		opt(&given)
	}
	if _, pg := d.(*postgresDialect); len(given.replicaDSNs) > 0 && !pg {
		return fmt.Errorf("read replicas need PostgreSQL, and this is a %s database", d.name())
	}
	return nil
}

// openReplicas connects to the replicas and probes each once, so that a
// server starts using the healthy ones at once; one that is down is
// skipped until it answers, and does not keep the server from starting.
func (s *Store) openReplicas(ctx context.Context) error {
	if len(s.replicaDSNs) == 0 {
		return nil
	}
	if s.replicaMaxLag <= 0 {
		return errors.New("the replicas' maximum lag must be positive")
	}
	set := &replicaSet{maxLag: s.replicaMaxLag, log: s.logger()}
	for i, dsn := range s.replicaDSNs {
		d, connStr, err := dialectFor(dsn)
		if _, pg := d.(*postgresDialect); err != nil || !pg {
			set.close()
			return fmt.Errorf("replica %d is not a postgres:// URL: %v", i+1, err)
		}
		pool, err := sql.Open(d.driver(), connStr)
		if err != nil {
			set.close()
			return fmt.Errorf("replica %d: %w", i+1, err)
		}
		d.configure(pool)
		r := &replica{name: fmt.Sprintf("replica%d", i+1), db: pool}
		r.state.Store(&replicaState{why: "not probed yet"})
		set.list = append(set.list, r)
	}
	set.positions.sample(ctx, s.db, set.maxLag)
	for _, r := range set.list {
		set.probe(ctx, r)
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	set.stop = stop
	set.done.Add(1 + len(set.list))
	go set.every(bg, func(ctx context.Context) { set.positions.sample(ctx, s.db, set.maxLag) })
	for _, r := range set.list {
		go set.every(bg, func(ctx context.Context) { set.probe(ctx, r) })
	}
	s.replicas = set
	return nil
}

func (set *replicaSet) every(ctx context.Context, fn func(context.Context)) {
	defer set.done.Done()
	onTicks(ctx, probeEvery, fn)
}

func (set *replicaSet) close() {
	if set == nil {
		return
	}
	if set.stop != nil {
		set.stop()
		set.done.Wait()
	}
	for _, r := range set.list {
		r.db.Close()
	}
}

// probeReplica reads a standby's replay position; a server that is not in
// recovery (a replica promoted, or the primary given by mistake) is not a
// replica of this primary's WAL, and is not used.
const probeReplica = `SELECT pg_is_in_recovery(), (COALESCE(pg_last_wal_replay_lsn(), '0/0') - '0/0'::pg_lsn)::bigint`

// probe reads r's replay position and judges, from the primary's recent
// positions, how far behind it is.
func (set *replicaSet) probe(ctx context.Context, r *replica) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var recovering bool
	var replay int64
	st := &replicaState{}
	switch err := r.db.QueryRowContext(ctx, probeReplica).Scan(&recovering, &replay); {
	case err != nil:
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return // closing
		}
		st.why = "does not answer: " + err.Error()
	case !recovering:
		st.why = "is not in recovery: not a standby"
	default:
		st.replay = replay
		lag, known := set.positions.lag(replay, time.Now())
		st.lag = lag
		switch {
		case !known:
			st.why = fmt.Sprintf("is more than %s behind the primary, or the primary does not answer", set.maxLag)
		case lag > set.maxLag:
			st.why = fmt.Sprintf("is %s behind the primary, more than %s", lag.Round(time.Millisecond), set.maxLag)
		default:
			st.usable = true
		}
	}
	set.update(r, st)
}

// update stores what was learnt of r, and logs when r goes in or out of
// use.
func (set *replicaSet) update(r *replica, st *replicaState) {
	old := r.state.Swap(st)
	switch {
	case st.usable && !old.usable:
		set.log.Info("replica in use", "replica", r.name, "lag", st.lag)
	case !st.usable && (old.usable || old.why == "not probed yet"):
		set.log.Warn("replica skipped: the primary answers its reads", "replica", r.name, "reason", st.why)
	}
}

// failed takes r out of use after a read failed on it, until a probe
// finds it well.
func (set *replicaSet) failed(r *replica, err error) {
	set.update(r, &replicaState{why: "a read failed: " + err.Error()})
}

// walPositions are the primary's WAL positions of the last maxLag and a
// little more, each with when it was read: a replica that has replayed a
// position has every change made before it was read.
type walPositions struct {
	mu      sync.Mutex
	samples []walSample
}

type walSample struct {
	at  time.Time
	lsn int64
}

const primaryPosition = `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint`

func (p *walPositions) sample(ctx context.Context, primary *sql.DB, maxLag time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var lsn int64
	if err := primary.QueryRowContext(ctx, primaryPosition).Scan(&lsn); err != nil {
		return // the replicas' lag grows until the primary answers again
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := now.Add(-maxLag - 2*probeEvery)
	drop := 0
	for drop < len(p.samples) && p.samples[drop].at.Before(keep) {
		drop++
	}
	p.samples = append(p.samples[drop:], walSample{at: now, lsn: lsn})
}

// lag is how old a replica's data is that has replayed up to replay: the
// age of the newest primary position it has reached. known is false when
// it has reached none of those kept, that is when it is further behind
// than they go back.
func (p *walPositions) lag(replay int64, now time.Time) (lag time.Duration, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.samples) - 1; i >= 0; i-- {
		if p.samples[i].lsn <= replay {
			return now.Sub(p.samples[i].at), true
		}
	}
	return 0, false
}

// route is one request's choice of where its reads go, made at its first
// read and kept, so that its reads see one replica's state, or the
// primary's once a replica failed it.
type route struct {
	viewer int64
	mu     sync.Mutex
	chosen *replica
	// primary: the rest of the request reads from the primary.
	primary bool
}

type routeKey struct{}

// ReadFromReplica lets the reads in ctx outside transactions be answered
// by a replica, if the store has any, that has replayed the viewer's last
// write (0: anonymous, any replica in use). Mark only reads that may be
// up to the replicas' maximum lag old for anyone but that viewer.
func ReadFromReplica(ctx context.Context, viewer int64) context.Context {
	return context.WithValue(ctx, routeKey{}, &route{viewer: viewer})
}

type writerKey struct{}

// WritesBy marks the transactions in ctx as the viewer's writes: with
// replicas, the viewer's later reads, on any instance, wait for a replica
// to have replayed them or go to the primary.
func WritesBy(ctx context.Context, viewer int64) context.Context {
	return context.WithValue(ctx, writerKey{}, viewer)
}

// replicaFor is the replica that answers a read in ctx, or nil for the
// primary.
func (s *Store) replicaFor(ctx context.Context) *replica {
	rt, _ := ctx.Value(routeKey{}).(*route)
	if rt == nil {
		return nil
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	switch {
	case rt.primary:
		return nil
	case rt.chosen != nil:
		if rt.chosen.state.Load().usable {
			return rt.chosen
		}
		rt.primary = true
		return nil
	}
	rt.chosen = s.replicas.pick(s.viewerPosition(ctx, rt.viewer))
	rt.primary = rt.chosen == nil
	return rt.chosen
}

// pick is a replica in use that has replayed position floor, taking each
// in turn, or nil.
func (set *replicaSet) pick(floor int64) *replica {
	start := set.next.Add(1)
	for i := range set.list {
		r := set.list[(start+uint64(i))%uint64(len(set.list))]
		if st := r.state.Load(); st.usable && st.replay >= floor {
			return r
		}
	}
	return nil
}

const (
	viewerPosition = `SELECT Lsn FROM ViewerWrites WHERE UserId = ?`
	// markWriting is a transaction's first statement for its viewer, and
	// follows each user it creates: until the commit position is
	// recorded, no replica serves the viewer.
	markWriting = `INSERT INTO ViewerWrites (UserId, Lsn) VALUES (?, 9223372036854775807)
ON CONFLICT (UserId) DO UPDATE SET Lsn = EXCLUDED.Lsn`
	// recordWrite runs after the commit: the insert position then is at
	// or past the commit's record. Its own commit need not wait for the
	// disk (synchronous_commit off, for this transaction only): lost in a
	// crash, the row keeps markWriting's position, which sends the viewer
	// to the primary until its next write, and so is never wrong.
	recordWrite = `WITH async AS (SELECT set_config('synchronous_commit', 'off', true))
UPDATE ViewerWrites SET Lsn = (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint FROM async WHERE UserId = ?`
)

// viewerPosition is where the viewer's last write stands in the primary's
// WAL: 0 for an anonymous request or a viewer that never wrote, and
// unrecorded when it cannot be read. One point read on the primary.
func (s *Store) viewerPosition(ctx context.Context, viewer int64) int64 {
	if viewer == 0 {
		return 0
	}
	var lsn int64
	err := runner{s: s, primary: true}.queryRow(ctx, viewerPosition, []any{viewer}, &lsn)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0
	case err != nil:
		return unrecorded
	}
	return lsn
}

// writes are the users a transaction wrote for, whose positions are
// recorded once it commits; nil without replicas.
type writes struct{ users []int64 }

// newWrites starts the writes of one transaction's attempt in ctx.
func (s *Store) newWrites(ctx context.Context) *writes {
	if s.replicas == nil {
		return nil
	}
	w := &writes{}
	if viewer, _ := ctx.Value(writerKey{}).(int64); viewer != 0 {
		w.users = append(w.users, viewer)
	}
	return w
}

// wrote marks user's row in r's transaction (see markWriting); a no-op
// without replicas.
func (r runner) wrote(ctx context.Context, user int64) error {
	if r.writes == nil {
		return nil
	}
	if _, err := r.exec(ctx, markWriting, user); err != nil {
		return fmt.Errorf("mark the writer for the replicas: %w", err)
	}
	if len(r.writes.users) == 0 || r.writes.users[0] != user {
		r.writes.users = append(r.writes.users, user)
	}
	return nil
}

// begin is the first statement of a transaction: the viewer's mark.
func (w *writes) begin(ctx context.Context, r runner) error {
	if w == nil || len(w.users) == 0 {
		return nil
	}
	return r.wrote(ctx, w.users[0])
}

// recordWrites stores the commit's position for each user written for. A
// failure leaves the mark, which only sends the users' reads to the
// primary, so it is logged and not returned: the write itself is made.
func (s *Store) recordWrites(ctx context.Context, w *writes) {
	if w == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	for _, user := range w.users {
		if _, err := (runner{s: s}).exec(ctx, recordWrite, user); err != nil {
			s.logger().Warn("record a write's position for the replicas; the user reads from the primary until its next write", "user", user, "err", err)
		}
	}
}

// ReplicaStatus is what /metrics tells of one replica.
type ReplicaStatus struct {
	Name   string
	Reads  uint64
	Lag    time.Duration
	Usable bool
}

// ReplicaReads counts the reads outside transactions answered by the
// primary and by each replica since the store opened, with each replica's
// lag as last probed; nothing without replicas.
func (s *Store) ReplicaReads() (primary uint64, replicas []ReplicaStatus) {
	if s.replicas == nil {
		return 0, nil
	}
	for _, r := range s.replicas.list {
		st := r.state.Load()
		replicas = append(replicas, ReplicaStatus{Name: r.name, Reads: r.reads.Load(), Lag: st.lag, Usable: st.usable})
	}
	return s.replicas.primaryReads.Load(), replicas
}

// queryReplica runs a read on the replica ctx's request is given, if any:
// ok is false when the primary must answer it, because the read or the
// request is for the primary, or because its replica failed (then taken
// out of use). It counts the read where it goes.
func (r runner) queryReplica(ctx context.Context, text string, args []any) (_ *sql.Rows, ok bool) {
	set := r.s.replicas
	if r.primary {
		set.primaryReads.Add(1)
		return nil, false
	}
	if rep := r.s.replicaFor(ctx); rep != nil {
		res, err := rep.db.QueryContext(ctx, r.s.d.rebind(text), args...)
		if err == nil {
			rep.reads.Add(1)
			return res, true
		}
		if ctx.Err() == nil {
			set.failed(rep, err)
		}
	}
	set.primaryReads.Add(1)
	return nil, false
}
