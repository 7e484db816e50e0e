package resolvers

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"follows/auth"
	"follows/db"

	"github.com/vikstrous/dataloadgen"
)

// loaders batch the store lookups that one request's resolvers make at
// about the same time: a list of fifty users asking for their first
// followers and whether the viewer follows them makes one statement for
// each kind of lookup, not one per user. They live for one request, so
// nothing is cached across requests.
type loaders struct {
	users   *dataloadgen.Loader[int64, *db.User]
	follows *dataloadgen.Loader[db.Pair, db.FollowState]
	// blocks answers, by user, whether the viewer blocks it and it the
	// viewer: both fields of a user are one key (see viewerBlocks).
	blocks       *dataloadgen.Loader[int64, db.BlockRelation]
	mutualCounts *dataloadgen.Loader[int64, int]
	// pages holds the loader of each list field that has one, by its row's
	// index in listFields; list.pages reads it.
	pages []any
}

// batched adapts a store method that answers many keys at once, or fails
// as a whole, to the loader's fetch function, telling onBatch (if any) the
// size of each batch, and giving a traced batch its span (startBatch).
func batched[K comparable, V any](name string, onBatch func(string, int), fetch func(context.Context, []K) ([]V, error)) func(context.Context, []K) ([]V, []error) {
	return func(ctx context.Context, keys []K) ([]V, []error) {
		if onBatch != nil {
			onBatch(name, len(keys))
		}
		ctx, span := startBatch(ctx, name, len(keys))
		vs, err := fetch(ctx, keys)
		endBatch(span, err)
		if err != nil {
			return nil, []error{err}
		}
		return vs, nil
	}
}

func newLoaders(s *db.Store, wait time.Duration, onBatch func(string, int)) *loaders {
	w := dataloadgen.WithWait(wait)
	l := &loaders{
		users:        dataloadgen.NewLoader(batched("users", onBatch, s.UsersByID), w),
		follows:      dataloadgen.NewLoader(batched("follows", onBatch, s.Follows), w),
		blocks:       dataloadgen.NewLoader(batched("blocks", onBatch, viewerBlocks(s)), w),
		mutualCounts: dataloadgen.NewLoader(batched("mutualCounts", onBatch, s.MutualCounts), w),
		pages:        make([]any, len(listFields)),
	}
	// A batch of pages becomes one UNION ALL branch per key, so it is
	// capped at what one statement may hold.
	capped := dataloadgen.WithBatchCapacity(db.MaxBatch)
	for _, f := range listFields {
		if f.newLoader != nil {
			l.pages[f.index] = f.newLoader(s, onBatch, w, capped)
		}
	}
	return l
}

// viewerBlocks looks up the block relations between the request's viewer
// and users: one statement, which reads the viewer's stamp beside the
// blocks, so that checking the viewer's token costs no statement of its
// own (the fields answer false without a viewer, as they would with no
// block). A page of users asking viewerBlocks and blocksViewer costs one
// statement together.
func viewerBlocks(s *db.Store) func(ctx context.Context, users []int64) ([]db.BlockRelation, error) {
	return func(ctx context.Context, users []int64) ([]db.BlockRelation, error) {
		claim, why := auth.Viewer(ctx)
		if why != nil {
			if errors.Is(why, auth.ErrAccountLookup) {
				return nil, why
			}
			return make([]db.BlockRelation, len(users)), nil
		}
		return s.ViewerBlocks(ctx, claim.UserID, users, func(stamp string) bool { return claim.Holds(claim.UserID, stamp) })
	}
}

// requestLoaders holds one request's loaders. A mutation swaps in fresh
// ones, so that what it changed is read anew by its own payload and by the
// mutations after it.
type requestLoaders struct {
	mu   sync.Mutex
	cur  *loaders
	make func() *loaders
	// plans caches prefetch plans by list field (*ast.Field); they depend
	// on the query only, so they outlive a mutation's reset.
	plans sync.Map
	// roots runs prefetchRoots once per request.
	roots sync.Once
	// along holds the root users until a batch of lists takes them to
	// read along (see takeAlong).
	along atomic.Pointer[rootsAlong]
}

// rootsAlong is a request's root users, which the first batch of lists
// to run reads along with its pages (db.Along), and startRoots waits for.
type rootsAlong struct {
	ids   []int64
	users []*db.User    // in the order of ids; nil if the batch failed
	done  chan struct{} // closed once users is set
}

// takeAlong gives the request's root users, if they wait for a batch, to
// the one that asks first: the batch reads them with its own statement,
// and must call the function returned once it has, whether it failed or
// not.
func takeAlong(ctx context.Context) (*db.Along, func()) {
	rl, ok := ctx.Value(loadersKey{}).(*requestLoaders)
	if !ok {
		return nil, func() {}
	}
	ra := rl.along.Swap(nil)
	if ra == nil {
		return nil, func() {}
	}
	a := &db.Along{IDs: ra.ids}
	return a, func() {
		ra.users = a.Users
		close(ra.done)
	}
}

func (rl *requestLoaders) get() *loaders {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.cur
}

func (rl *requestLoaders) reset() {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.cur = rl.make()
}

type loadersKey struct{}

// Middleware gives each request its own loaders.
func (r *Resolver) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		next.ServeHTTP(w, req.WithContext(r.ForOperation(req.Context())))
	})
}

// ForOperation gives ctx loaders, prefetch plans and a root prefetch of
// its own, as Middleware gives a request. A websocket is one HTTP request
// that carries any number of operations over its life: each gets its own,
// so that it reads the graph as it stands when it runs (a deactivation, a
// block, a deletion made since the socket opened shows, as over HTTP),
// plans from its own document and variables, and leaves nothing cached
// behind when it ends.
func (r *Resolver) ForOperation(ctx context.Context) context.Context {
	mk := func() *loaders { return newLoaders(r.Store, r.BatchWait, r.OnBatch) }
	return context.WithValue(ctx, loadersKey{}, &requestLoaders{cur: mk(), make: mk})
}

// loadersFor returns the request's loaders; a context without them (a call
// from outside HTTP) gets loaders of its own.
func (r *Resolver) loadersFor(ctx context.Context) *loaders {
	if rl, ok := ctx.Value(loadersKey{}).(*requestLoaders); ok {
		return rl.get()
	}
	return newLoaders(r.Store, r.BatchWait, r.OnBatch)
}

// freshLoaders drops what the request's loaders have cached.
func freshLoaders(ctx context.Context) {
	if rl, ok := ctx.Value(loadersKey{}).(*requestLoaders); ok {
		rl.reset()
	}
}

// EventClock bounds the resolution of each event of one subscription,
// which has no deadline of its own: a request's deadline, from the moment
// the transport has taken the event from the resolver to the end of the
// response it makes of it. The transport asks for each response in a
// context from Next; the resolver tells, once an event is taken, that
// the clock of that response starts (eventTaken). Each response receives
// one event, in order, so the nth response resolves the nth event; a
// clock never runs while a response is still waiting for its event,
// which its cancellation would end as if the stream were over.
type EventClock struct {
	timeout time.Duration

	mu     sync.Mutex
	calls  int // responses asked for so far
	taken  int // events taken so far
	cancel context.CancelFunc
	timer  *time.Timer
}

type eventClockKey struct{}

// WithEventClock gives the subscription started in ctx a clock of
// timeout for each event.
func WithEventClock(ctx context.Context, timeout time.Duration) (context.Context, *EventClock) {
	c := &EventClock{timeout: timeout}
	return context.WithValue(ctx, eventClockKey{}, c), c
}

// Next is the context of the next response, and the function that ends
// it once the response is made.
func (c *EventClock) Next(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.calls++
	c.cancel = cancel
	c.mu.Unlock()
	return ctx, func() {
		c.mu.Lock()
		if c.timer != nil {
			c.timer.Stop()
			c.timer = nil
		}
		c.cancel = nil
		c.mu.Unlock()
		cancel()
	}
}

// eventTaken starts the clock of the response resolving the event the
// transport has just taken.
func eventTaken(ctx context.Context) {
	c, ok := ctx.Value(eventClockKey{}).(*EventClock)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.taken++
	if c.taken == c.calls && c.cancel != nil {
		c.timer = time.AfterFunc(c.timeout, c.cancel)
	}
}
