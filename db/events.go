package db

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Live follow events come from a transactional outbox: each follow and
// unfollow adds its row to FollowEvents in the transaction that makes the
// change (addEvent), so an event exists exactly when its change committed.
// Subscribers read the outbox after their cursor, in Id order, applying
// the delivery rules (eventsFor) when they read, not when the event was
// written: a block, a mute or a deactivation made since hides what it
// should, also on a resume.
//
// The events are written by the store's Go code rather than by a trigger
// on Follows. A trigger would also announce the writes of other apps
// sharing the database, but it cannot tell an unfollow from the follows a
// block or an account deletion removes, which must not be announced,
// without per-dialect session state; the store knows which it is doing.
//
// Ids must become visible in Id order, or a reader that saw Id 6 would
// move its cursor past a 5 that commits later. SQLite has one writer at a
// time. On the server databases an event's writer first takes a
// transaction-scoped exclusive lock (the dialect's eventLocker), held until
// it commits, and draws its Id after: the next writer's Id is drawn only
// once this one's commit is visible. Writers of events queue for the lock
// only for the last statements of their transactions.

// EventKind is what a follow event announces.
type EventKind int

// The kinds of follow events, as the outbox stores them.
const (
	EventFollowed   EventKind = 1
	EventUnfollowed EventKind = 2
)

// Event is one follow event as delivered: its outbox Id (the cursor's
// position), what happened, both users as they are now, and when.
type Event struct {
	ID                 int64
	Kind               EventKind
	Follower, Followee User
	At                 time.Time
}

const (
	insertEventReturning = `INSERT INTO FollowEvents (Kind, FollowerId, FolloweeId, At) VALUES (?, ?, ?, ?) RETURNING Id`
	lastEvent            = `SELECT COALESCE(MAX(Id), 0) FROM FollowEvents`
	pruneEvents          = `DELETE FROM FollowEvents WHERE At < ?`
)

// eventsFor reads the events for a viewer (the first parameter) with Ids
// in a range (the next two), in Id order, by the delivery rules:
//   - the viewer's own actions are not echoed;
//   - the followee hears of being followed and unfollowed;
//   - whoever follows the actor with notifications on and not muted hears
//     of the actor's follows (FOLLOWED only) made since it began following
//     the actor: a resume from before does not show a new follower what
//     the actor did earlier, nor follows since undone;
//   - nothing involving a user blocked by the viewer, or blocking it;
//   - nothing involving a deactivated or deleted account, the viewer's
//     own included.
var eventsFor = `SELECT e.Id, e.Kind, e.At, ` + usersAs("a") + `, ` + usersAs("b") + `
FROM FollowEvents AS e
JOIN ` + activeUser("a", "e.FollowerId") + `
JOIN ` + activeUser("b", "e.FolloweeId") + `
JOIN ` + activeUser("v", "?") + `
WHERE e.Id > ? AND e.Id <= ? AND e.FollowerId <> v.Id
AND (e.FolloweeId = v.Id OR (e.Kind = ? AND EXISTS (SELECT 1 FROM Follows AS f
    WHERE f.FollowerId = v.Id AND f.FolloweeId = e.FollowerId AND f.NotificationsEnabled = ? AND f.Muted = ?
    AND f.CreatedAt <= e.At)))
AND ` + notBlocked("v.Id", "e.FollowerId") + `
AND ` + notBlocked("v.Id", "e.FolloweeId") + `
ORDER BY e.Id`

// eventRecipients is who may hear of the events in an Id range (the
// parameters): each followee, and the followers of each FOLLOWED event's
// actor with notifications on and not muted. A subscriber not among them
// moves past the range without reading it (see FollowEvents), so that an
// event costs one statement per process rather than one per subscriber;
// eventsFor applies the rest of the rules.
const eventRecipients = `SELECT e.FolloweeId FROM FollowEvents AS e WHERE e.Id > ? AND e.Id <= ?
UNION
SELECT f.FollowerId FROM FollowEvents AS e JOIN Follows AS f ON f.FolloweeId = e.FollowerId
WHERE e.Id > ? AND e.Id <= ? AND e.Kind = ? AND f.NotificationsEnabled = ? AND f.Muted = ?`

// usersAs is userColumns for the Users row aliased alias.
func usersAs(alias string) string {
	return strings.ReplaceAll(userColumns, "u.", alias+".")
}

// eventRange bounds the Ids one read of eventsFor covers, so that a
// subscriber far behind reads the outbox in steps.
const eventRange = 1000

// addEvent writes an event to the outbox inside the write transaction r
// (see the comment at the top of this file) and returns its Id, for the
// caller to tell the feed once the transaction has committed.
func (r runner) addEvent(ctx context.Context, kind EventKind, follower, followee int64, at time.Time) (int64, error) {
	if l, ok := r.s.d.(eventLocker); ok {
		if _, err := r.exec(ctx, l.lockEvents()); err != nil {
			return 0, fmt.Errorf("lock the event outbox: %w", err)
		}
	}
	var id int64
	if err := r.queryRow(ctx, r.s.q.insertEvent, []any{int64(kind), follower, followee, r.s.d.timeArg(at)}, &id); err != nil {
		return 0, fmt.Errorf("write the event: %w", err)
	}
	if l, ok := r.s.d.(eventListener); ok {
		if _, err := r.exec(ctx, l.notifyEvent(), strconv.FormatInt(id, 10)); err != nil {
			return 0, fmt.Errorf("notify the event: %w", err)
		}
	}
	return id, nil
}

// EventsConfig is how a store's event feed wakes and prunes.
type EventsConfig struct {
	// Poll is how often the outbox is checked for events written by
	// other processes where nothing announces them (SQLite, SQL Server),
	// and, on PostgreSQL, while its listener is down.
	Poll time.Duration
	// Retention is how long events are kept for subscribers resuming with
	// a cursor.
	Retention time.Duration
	// ReplayWindow is how many outbox Ids back a resume may start: a
	// cursor further behind gets ErrCursorTooOld rather than a replay
	// whose cost grows with the outbox (see OpenFollowEvents).
	ReplayWindow int64
	// Replays is how many resumes a process replays at once, and
	// ReplaysPerViewer how many of them one viewer may run; more get
	// ErrReplayLimit.
	Replays, ReplaysPerViewer int
}

// DefaultEventsConfig is the feed's configuration before flags. A resume
// reads at most ten ranges of the outbox (eventRange), however large the
// outbox: its cost no longer grows with the history kept. A client
// further behind has missed more than live notifications can usefully
// show, and refetches its lists.
func DefaultEventsConfig() EventsConfig {
	return EventsConfig{Poll: time.Second, Retention: 7 * 24 * time.Hour,
		ReplayWindow: 10 * eventRange, Replays: 16, ReplaysPerViewer: 2}
}

// Why a resume is refused (OpenFollowEvents).
var (
	// ErrCursorTooOld is a cursor further behind the newest event than
	// EventsConfig.ReplayWindow: the client resubscribes without one.
	ErrCursorTooOld = errors.New("the cursor is further back than a resume may replay")
	// ErrReplayLimit is a resume while the process, or the viewer, already
	// runs as many replays as it may: the client retries a little later.
	ErrReplayLimit = errors.New("too many resumes replaying at once")
)

// WithEvents configures the store's event feed.
func WithEvents(cfg EventsConfig) Option {
	return func(s *Store) { s.feed.cfg = cfg }
}

// feed tells a process's subscribers that the outbox has grown: last is
// the highest Id known committed, and changed is closed (and replaced)
// whenever last moves. It learns of events from this process's commits,
// from PostgreSQL's notifications, and by polling.
type feed struct {
	cfg     EventsConfig
	last    atomic.Int64
	mu      sync.Mutex
	changed chan struct{}
	// run guards stop, done and stopped: a subscription may start the
	// feed while the store is closing.
	run     sync.Mutex
	stopped bool
	stop    context.CancelFunc
	done    chan struct{}
	// recipients holds who may hear of the events of the ranges read
	// lately, each read once however many subscribers ask; order is
	// their keys, oldest first.
	recipients map[[2]int64]*recipients
	order      [][2]int64
	// replaying counts the replays running, in all and per viewer
	// (guarded by mu).
	replaying int
	replayers map[int64]int
	// step is eventRange, smaller in tests; onRange, if set, is told of
	// each range a subscriber has read (tests count the work a replay
	// does).
	step    int64
	onRange func(viewer, after, upto int64)
	// onRead, if set, is told of each read of a range's recipients.
	onRead func()
}

// recipients is eventRecipients of one range, read by the first
// subscriber to ask while the others wait: done is closed once viewers or
// err is set.
type recipients struct {
	done    chan struct{}
	viewers map[int64]bool
	err     error
	// left is an err of the reader's leaving, not of the read: the
	// others read again rather than fail with it.
	left bool
}

// keptRanges is how many ranges' recipients the feed remembers: enough
// for the subscribers of a process to be at a few different places.
const keptRanges = 64

// wait returns a channel closed when last next moves.
func (f *feed) wait() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.changed
}

// saw records that the events up to id are committed.
func (f *feed) saw(id int64) {
	for {
		cur := f.last.Load()
		if id <= cur {
			return
		}
		if f.last.CompareAndSwap(cur, id) {
			break
		}
	}
	f.mu.Lock()
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
	f.mu.Unlock()
}

// LastEventID is the Id of the newest event in the outbox, 0 if none.
func (s *Store) LastEventID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.read().queryRow(ctx, lastEvent, nil, &id); err != nil {
		return 0, fmt.Errorf("read the last event id: %w", err)
	}
	s.feed.saw(id)
	return id, nil
}

// FollowEvents sends the viewer's follow events (see eventsFor) one at a
// time to send, in Id order, from after the event with Id after, or from
// now when after is nil: first those in the outbox, then each as it
// commits. It returns when ctx ends, send fails, or reading fails, and
// refuses a resume as OpenFollowEvents does.
func (s *Store) FollowEvents(ctx context.Context, viewer int64, after *int64, send func(Event) error) error {
	sub, err := s.OpenFollowEvents(ctx, viewer, after)
	if err != nil {
		return err
	}
	return sub.Run(ctx, send)
}

// EventStream is one subscriber's place in the outbox, opened by
// OpenFollowEvents and read by Run.
type EventStream struct {
	s      *Store
	viewer int64
	cur    int64
	// replayTo is the newest Id when the stream opened; until cur reaches
	// it the stream holds a replay slot, released by release.
	replayTo int64
	release  func()
}

// OpenFollowEvents is where a subscription's stream starts: after the
// event with Id after, or now when after is nil. A resume is refused
// before it costs anything: ErrCursorTooOld when after is more than the
// replay window behind the newest event, ErrReplayLimit when the process
// or the viewer already replays as many resumes as it may. An accepted
// resume holds its replay slot until it has caught up or ends: Run, or
// Close for a stream never run, gives it back.
func (s *Store) OpenFollowEvents(ctx context.Context, viewer int64, after *int64) (*EventStream, error) {
	s.startFeed()
	last, err := s.LastEventID(ctx)
	if err != nil {
		return nil, err
	}
	es := &EventStream{s: s, viewer: viewer, cur: last, release: func() {}}
	if after == nil || *after >= last {
		if after != nil {
			es.cur = *after
		}
		return es, nil
	}
	if last-*after > s.feed.cfg.ReplayWindow {
		return nil, ErrCursorTooOld
	}
	if es.release, err = s.feed.startReplay(viewer); err != nil {
		return nil, err
	}
	es.cur, es.replayTo = *after, last
	return es, nil
}

// startReplay takes a replay slot of the viewer's, or refuses.
func (f *feed) startReplay(viewer int64) (release func(), err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.replaying >= f.cfg.Replays || f.replayers[viewer] >= f.cfg.ReplaysPerViewer {
		return nil, ErrReplayLimit
	}
	if f.replayers == nil {
		f.replayers = map[int64]int{}
	}
	f.replaying++
	f.replayers[viewer]++
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.replaying--
			if f.replayers[viewer]--; f.replayers[viewer] == 0 {
				delete(f.replayers, viewer)
			}
		})
	}, nil
}

// Close gives back the stream's replay slot, if it still holds one.
func (es *EventStream) Close() { es.release() }

// Run sends the stream's events to send (see FollowEvents) until ctx
// ends, send fails, or reading fails. Each range is read under ctx, which
// is checked before each: a subscriber that leaves stops its replay at
// once rather than at the live tail.
func (es *EventStream) Run(ctx context.Context, send func(Event) error) error {
	defer es.release()
	s := es.s
	step := s.feed.step
	if step <= 0 {
		step = eventRange
	}
	for {
		// Taken before last is read, so no event is missed between.
		changed := s.feed.wait()
		for last := s.feed.last.Load(); es.cur < last; {
			if err := ctx.Err(); err != nil {
				return err
			}
			// Ranges are aligned to multiples of step, so that
			// subscribers resuming from different cursors ask who hears
			// of the same ranges and share the answer; the live tail,
			// where subscribers are at the same place anyway, is read
			// as far as it goes.
			from := es.cur - es.cur%step
			upto := min(last, from+step)
			if upto < from+step {
				from = es.cur
			}
			if hears, err := s.mayHear(ctx, es.viewer, from, upto); err != nil {
				return err
			} else if hears {
				evs, err := s.eventsFor(ctx, es.viewer, es.cur, upto)
				if err != nil {
					return err
				}
				for _, e := range evs {
					if err := send(e); err != nil {
						return err
					}
				}
			}
			if hook := s.feed.onRange; hook != nil {
				hook(es.viewer, es.cur, upto)
			}
			es.cur = upto
			if es.cur >= es.replayTo {
				es.release()
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// mayHear reports whether viewer is among the recipients of the events
// with Ids in (after, upto]. The first subscriber to ask reads them, under
// its own context, while the others wait for its answer: if it leaves
// before it has one, the next one still waiting reads them instead.
func (s *Store) mayHear(ctx context.Context, viewer, after, upto int64) (bool, error) {
	key := [2]int64{after, upto}
	for {
		s.feed.mu.Lock()
		r := s.feed.recipients[key]
		reader := r == nil
		if reader {
			if s.feed.recipients == nil {
				s.feed.recipients = map[[2]int64]*recipients{}
			}
			r = &recipients{done: make(chan struct{})}
			s.feed.recipients[key] = r
			s.feed.order = append(s.feed.order, key)
			if len(s.feed.order) > keptRanges {
				delete(s.feed.recipients, s.feed.order[0])
				s.feed.order = s.feed.order[1:]
			}
		}
		s.feed.mu.Unlock()
		if reader {
			r.viewers, r.err = s.readRecipients(ctx, after, upto)
			r.left = r.err != nil && ctx.Err() != nil
			if r.err != nil {
				// Read again next time rather than fail every subscriber.
				s.feed.mu.Lock()
				if s.feed.recipients[key] == r {
					delete(s.feed.recipients, key)
				}
				s.feed.mu.Unlock()
			}
			close(r.done)
			return r.viewers[viewer], r.err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-r.done:
		}
		if !r.left {
			return r.viewers[viewer], r.err
		}
		// The reader left: ask again, perhaps as the reader.
	}
}

// readRecipients reads eventRecipients of the range (after, upto].
func (s *Store) readRecipients(ctx context.Context, after, upto int64) (map[int64]bool, error) {
	if s.feed.onRead != nil {
		s.feed.onRead()
	}
	rs, err := s.read().query(ctx, eventRecipients, after, upto, after, upto, int64(EventFollowed), true, false)
	if err != nil {
		return nil, fmt.Errorf("read event recipients: %w", err)
	}
	defer rs.Close()
	viewers := map[int64]bool{}
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, fmt.Errorf("read event recipients: %w", err)
		}
		viewers[id] = true
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("read event recipients: %w", err)
	}
	return viewers, nil
}

func (s *Store) eventsFor(ctx context.Context, viewer, after, upto int64) ([]Event, error) {
	rs, err := s.read().query(ctx, eventsFor, viewer, after, upto, int64(EventFollowed), true, false)
	if err != nil {
		return nil, fmt.Errorf("read follow events: %w", err)
	}
	defer rs.Close()
	var evs []Event
	for rs.Next() {
		var e Event
		var raw any
		dest := append([]any{&e.ID, &e.Kind, &raw}, e.Follower.scanDest()...)
		if err := rs.Scan(append(dest, e.Followee.scanDest()...)...); err != nil {
			return nil, fmt.Errorf("read follow events: %w", err)
		}
		if e.At, err = s.d.scanTime(raw); err != nil {
			return nil, err
		}
		evs = append(evs, e)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("read follow events: %w", err)
	}
	return evs, nil
}

// PruneEvents removes the events older than the retention.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.read().exec(ctx, pruneEvents, s.d.timeArg(before))
	if err != nil {
		return 0, fmt.Errorf("prune follow events: %w", err)
	}
	return res.RowsAffected()
}

// startFeed starts, once, what keeps the feed current: PostgreSQL's
// listener or the poll, and the pruning. It stops when the store closes.
func (s *Store) startFeed() {
	s.feed.run.Lock()
	defer s.feed.run.Unlock()
	if s.feed.stopped || s.feed.stop != nil {
		return
	}
	// What is not configured is the default's.
	def, cfg := DefaultEventsConfig(), &s.feed.cfg
	for _, v := range []struct {
		set  *time.Duration
		with time.Duration
	}{{&cfg.Poll, def.Poll}, {&cfg.Retention, def.Retention}} {
		if *v.set <= 0 {
			*v.set = v.with
		}
	}
	if cfg.ReplayWindow <= 0 {
		cfg.ReplayWindow = def.ReplayWindow
	}
	if cfg.Replays <= 0 {
		cfg.Replays = def.Replays
	}
	if cfg.ReplaysPerViewer <= 0 {
		cfg.ReplaysPerViewer = def.ReplaysPerViewer
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.feed.stop, s.feed.done = cancel, make(chan struct{})
	go func() {
		defer close(s.feed.done)
		var wg sync.WaitGroup
		wg.Go(func() { s.pruneLoop(ctx) })
		if l, ok := s.d.(eventListener); ok && s.listenConn != "" {
			wg.Go(func() { s.listen(ctx, l) })
		} else {
			wg.Go(func() { s.pollLoop(ctx, s.feed.cfg.Poll) })
		}
		wg.Wait()
	}()
}

// stopFeed ends the feed's goroutines, if they were started, and keeps
// them from starting after.
func (s *Store) stopFeed() {
	s.feed.run.Lock()
	s.feed.stopped = true
	stop, done := s.feed.stop, s.feed.done
	s.feed.run.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

func (s *Store) pollLoop(ctx context.Context, every time.Duration) {
	// An error leaves last as it was until the next tick.
	onTicks(ctx, every, func(ctx context.Context) { s.LastEventID(ctx) })
}

// onTicks runs fn every interval until ctx is done: the store's
// background loops (the outbox's poll, the replicas' probes).
func onTicks(ctx context.Context, every time.Duration, fn func(context.Context)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}

func (s *Store) pruneLoop(ctx context.Context) {
	every := min(max(s.feed.cfg.Retention/10, time.Minute), time.Hour)
	for {
		s.PruneEvents(ctx, nowUTC().Add(-s.feed.cfg.Retention))
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// listen keeps a connection that listens for events (see eventListener),
// telling the feed of each Id notified. While it is down (and after it reconnects, for what it
// missed) the outbox is polled.
func (s *Store) listen(ctx context.Context, l eventListener) {
	for ctx.Err() == nil {
		err := l.listenEvents(ctx, s.listenConn, func(ctx context.Context) error {
			_, err := s.LastEventID(ctx)
			return err
		}, s.feed.saw)
		if ctx.Err() != nil {
			return
		}
		_ = err // reconnected below; the poll covers the gap
		pollCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s.pollLoop(pollCtx, min(s.feed.cfg.Poll, time.Second))
		cancel()
	}
}
