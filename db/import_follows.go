package db

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"
)

// How an import loads its follows: followLoad checks nothing (the import
// has) but counts them, and hands them to a followDest, which is SQL
// (sqlFollows) or, into a new file whose dialect writes the follow
// table's b-tree itself, memory until the commit (treeFollows).

// followLoad takes an import's checked follows, counts them, and hands
// them to dest.
type followLoad struct {
	ctx  context.Context
	b    bulkRun
	dest followDest
	// noFollowsBefore says the graph had no follows before the import:
	// the counts the load makes are then the users' counts.
	noFollowsBefore bool
	// counts are, by user, the imported follows the count rule counts
	// for it (its followers, its following), given deactivated, the
	// users it leaves out; every user at either end of an imported
	// follow has an entry.
	counts      importCounts
	deactivated map[int64]bool

	// whyNotTree says why the follows of an import into a new file go
	// through SQL rather than into the follow table's b-tree (see
	// ImportStats.FollowTable).
	whyNotTree string
}

// followDest is where an import's follows go.
type followDest interface {
	// add takes a follow; false when it holds no more, and the follows
	// go through SQL from then on (see followLoad.toSQL).
	add(f FollowRow) (bool, error)
	// flush writes the follows still gathered.
	flush() error
	// rebuild makes the follow table whole once every follow is in,
	// setting the counts (setCounts) meanwhile, and returns the time
	// that took (see ImportStats.Rebuild).
	rebuild(blocks map[pair]Pos, setCounts func() error, clock *phaseClock) (time.Duration, error)
	// afterCommit is what writes the follows on the import's connection
	// once its transaction has committed; nil when they are in already.
	afterCommit() func(ctx context.Context, conn *sql.Conn) error
}

var (
	_ followDest = (*sqlFollows)(nil)
	_ followDest = (*treeFollows)(nil)
)

// newFollowLoad starts the load of follows between ids, into a graph
// that had follows or not (noFollowsBefore), with the users held, if any,
// not yet written.
func newFollowLoad(ctx context.Context, b bulkRun, ids map[int64]bool, noFollowsBefore bool, held *heldRows) (*followLoad, error) {
	l := &followLoad{ctx: ctx, b: b, counts: newImportCounts(ids), deactivated: map[int64]bool{}, noFollowsBefore: noFollowsBefore}
	if held != nil {
		for _, u := range held.rows {
			if u[3] != nil { // DeactivatedAt (userImportColumns)
				l.deactivated[u[0].(int64)] = true
			}
		}
	}
	err := scanRows(ctx, b.runner, deactivatedIDs, func(rs *rows) error {
		var id int64
		err := rs.Scan(&id)
		l.deactivated[id] = true
		return err
	})
	if err != nil {
		return nil, err
	}
	loader, ok := b.s.d.(newFileLoader)
	switch {
	case ok && l.noFollowsBefore && b.newFile != nil && b.newFile.writeTree:
		tree, whyNot, err := loader.followTree(ctx, b)
		if err != nil {
			return nil, err
		}
		if tree != nil {
			l.dest = &treeFollows{tree: tree}
			return l, nil
		}
		l.whyNotTree = whyNot
	case b.newFile != nil:
		l.whyNotTree = "another connection has the file open, so it stays in WAL mode"
	}
	return l, l.toSQL(nil)
}

// noFollows reports whether the graph has no follows yet (in SQL every
// dialect reads: SQL Server has no LIMIT).
func noFollows(ctx context.Context, r runner) (bool, error) {
	var some int
	err := r.queryRow(ctx, `SELECT CASE WHEN EXISTS (SELECT 1 FROM Follows) THEN 1 ELSE 0 END`, nil, &some)
	return some == 0, err
}

// toSQL sets the follow table's indexes and triggers aside and has the
// follows go through SQL, those held so far first.
func (l *followLoad) toSQL(held *followPages) error {
	restore, err := l.b.s.d.(bulkLoader).setAsideFollowIndexes(l.ctx, l.b.runner)
	if err != nil {
		return err
	}
	sink := l.b.s.rowSink(l.ctx, l.b, "Follows", followImportColumns, func(v []any) string { return fmt.Sprintf("follow %v -> %v", v[0], v[1]) })
	q := &sqlFollows{l: l, sink: sink, restore: restore}
	if k, ok := l.b.s.d.(followKeyLoader); ok && l.noFollowsBefore {
		if q.keyBack, err = k.setAsideFollowKey(l.ctx, l.b.runner); err != nil {
			return err
		}
		if q.keyBack != nil {
			q.groups = newFollowGroups()
		}
	}
	l.dest = q
	if held == nil {
		return nil
	}
	for i := range held.len() {
		if _, err := l.dest.add(held.row(i)); err != nil {
			return err
		}
	}
	return nil
}

func (l *followLoad) add(f FollowRow) error {
	l.count(f.Followee, 0, f.Follower)
	l.count(f.Follower, 1, f.Followee)
	ok, err := l.dest.add(f)
	if ok || err != nil {
		return err
	}
	tree := l.dest.(*treeFollows)
	l.whyNotTree = tree.whyNot
	if err := l.toSQL(tree.tree); err != nil {
		return err
	}
	_, err = l.dest.add(f)
	return err
}

// count counts a follow for user in its counts[which] when the user at
// the follow's other end is active.
func (l *followLoad) count(user int64, which int, other int64) {
	l.counts.add(user, which, len(l.deactivated) == 0 || !l.deactivated[other])
}

func (l *followLoad) flush() error { return l.dest.flush() }

// how says how an import into a new file loads its follow table, and
// why when not by writing its b-tree; "" for any other import.
func (l *followLoad) how() string {
	if _, ok := l.dest.(*treeFollows); ok {
		return "writing its pages, then having SQLite check them"
	}
	if l.whyNotTree != "" {
		return "through SQLite, not by writing its pages: " + l.whyNotTree
	}
	return ""
}

func (l *followLoad) rebuild(blocks map[pair]Pos, clock *phaseClock) (time.Duration, error) {
	return l.dest.rebuild(blocks, l.setCounts, clock)
}

func (l *followLoad) afterCommit() func(ctx context.Context, conn *sql.Conn) error {
	return l.dest.afterCommit()
}

// sqlFollows writes follows into the follow table with the dialect's
// rowSink, its indexes and triggers set aside (restore makes them again).
// Where the dialect set the primary key aside too (followKeyLoader),
// keyBack makes it again, and groups finds a follow that comes twice
// meanwhile.
type sqlFollows struct {
	l       *followLoad
	sink    rowSink
	restore func() error
	keyBack func() error
	groups  *followGroups
}

func (q *sqlFollows) add(f FollowRow) (bool, error) {
	if q.keyBack != nil {
		grouped, again := q.groups.add(f.Follower, f.Followee)
		if again {
			return true, followThere(f)
		}
		if !grouped {
			// The key finds a follow twice from here on, as it does
			// where it was never set aside.
			if err := q.putKeyBack(); err != nil {
				return true, err
			}
		}
	}
	return true, q.sink.add(f.Pos, f.Follower, f.Followee, q.l.b.s.d.timeArg(f.At), f.Muted, !f.NotificationsOff)
}

// putKeyBack makes the primary key again once the follows written so
// far are in.
func (q *sqlFollows) putKeyBack() error {
	if err := q.sink.flush(); err != nil {
		return err
	}
	err := q.keyBack()
	q.keyBack, q.groups = nil, nil
	return err
}

func (q *sqlFollows) flush() error { return q.sink.flush() }

func (q *sqlFollows) rebuild(blocks map[pair]Pos, setCounts func() error, clock *phaseClock) (time.Duration, error) {
	if q.keyBack != nil {
		if err := q.putKeyBack(); err != nil {
			return 0, err
		}
	}
	if err := q.restore(); err != nil {
		return 0, err
	}
	if err := refuseFollowsAcrossBlocks(q.l.ctx, q.l.b.runner, blocks); err != nil {
		return 0, err
	}
	took := clock.mark("indexes and triggers")
	// The set-aside triggers did not count the imported follows.
	return took, setCounts()
}

func (q *sqlFollows) afterCommit() func(context.Context, *sql.Conn) error { return nil }

// treeFollows holds follows for writing the follow table's b-tree pages
// into a new file (see followPages) after the commit.
type treeFollows struct {
	tree *followPages
	// whyNot says why the tree took no more follows (see followPages.add).
	whyNot string
}

func (t *treeFollows) add(f FollowRow) (bool, error) {
	t.whyNot = t.tree.add(f)
	return t.whyNot == "", nil
}

func (t *treeFollows) flush() error { return nil }

// rebuild sorts and checks the held rows, which is Go's work on two
// cores, while SQLite sets the counts on one: side by side.
func (t *treeFollows) rebuild(blocks map[pair]Pos, setCounts func() error, clock *phaseClock) (time.Duration, error) {
	checked := make(chan error, 1)
	go func() { checked <- t.tree.check(blocks) }()
	err := setCounts()
	if err := <-checked; err != nil {
		return 0, err
	}
	if err != nil {
		return 0, err
	}
	return clock.mark("sort and check, counts beside"), nil
}

func (t *treeFollows) afterCommit() func(context.Context, *sql.Conn) error { return t.tree.write }

// importCounts are, by user, the imported follows the count rule counts
// for it (its followers, its following); every user at either end of an
// imported follow has an entry. They are kept in a slice by id when the
// ids are dense enough, as users' mostly are: in a map, the two lookups
// a follow were a third of the loading goroutine's CPU
// (docs/decisions/import-speed.md).
type importCounts struct {
	dense  []denseCount
	sparse map[int64]*[2]int
}

type denseCount struct {
	n    [2]int
	seen bool
}

// newImportCounts makes the counts of follows between ids.
func newImportCounts(ids map[int64]bool) importCounts {
	if top, ok := denseIDs(ids); ok {
		return importCounts{dense: make([]denseCount, top+1)}
	}
	return importCounts{sparse: map[int64]*[2]int{}}
}

// denseIDs returns the highest of ids, and whether they are few enough
// gaps apart to keep something for each id up to it in a slice, rather
// than in a map: none below zero, and the highest at most four times
// their number (and 65,536 more).
func denseIDs(ids map[int64]bool) (top int64, dense bool) {
	for id := range ids {
		if id < 0 {
			return 0, false
		}
		top = max(top, id)
	}
	return top, top <= 4*int64(len(ids))+1<<16
}

// userSet says which users there are, for both ends of every imported
// follow: a bitmap where the ids are dense (denseIDs), which the large
// graph's 5.9 million lookups find in the processor's cache, where the
// map's took 0.55 s of the import's 6 s of CPU
// (docs/decisions/postgres-queries.md).
type userSet struct {
	bits []uint64
	ids  map[int64]bool
}

func newUserSet(ids map[int64]bool) userSet {
	top, ok := denseIDs(ids)
	if !ok {
		return userSet{ids: ids}
	}
	bits := make([]uint64, top/64+1)
	for id := range ids {
		bits[id/64] |= 1 << (id % 64)
	}
	return userSet{bits: bits}
}

func (s userSet) has(id int64) bool {
	if s.bits == nil {
		return s.ids[id]
	}
	return id >= 0 && id/64 < int64(len(s.bits)) && s.bits[id/64]&(1<<(id%64)) != 0
}

// add counts a follow for user in its counts[which] if counted, and
// gives it an entry in any case.
func (c *importCounts) add(user int64, which int, counted bool) {
	n := 0
	if counted {
		n = 1
	}
	if c.dense != nil && user >= 0 && user < int64(len(c.dense)) {
		d := &c.dense[user]
		d.n[which] += n
		d.seen = true
		return
	}
	if c.sparse == nil {
		c.sparse = map[int64]*[2]int{}
	}
	e := c.sparse[user]
	if e == nil {
		e = new([2]int)
		c.sparse[user] = e
	}
	e[which] += n
}

// all yields each user's counts, those in the slice in id order.
func (c *importCounts) all(yield func(int64, [2]int) bool) {
	for id, d := range c.dense {
		if d.seen && !yield(int64(id), d.n) {
			return
		}
	}
	for id, n := range c.sparse {
		if !yield(id, *n) {
			return
		}
	}
}

// take returns user's counts and whether it has an entry, which it
// removes: all yields it no more.
func (c *importCounts) take(user int64) ([2]int, bool) {
	if c.dense != nil && user >= 0 && user < int64(len(c.dense)) {
		d := &c.dense[user]
		n, seen := d.n, d.seen
		*d = denseCount{}
		return n, seen
	}
	e := c.sparse[user]
	if e == nil {
		return [2]int{}, false
	}
	delete(c.sparse, user)
	return *e, true
}

// ids are the users all yields.
func (c *importCounts) ids() []int64 {
	var ids []int64
	for id := range c.all {
		ids = append(ids, id)
	}
	return ids
}

// setCounts sets the counts of the users at either end of an imported
// follow. Into a graph that had no follows (noFollowsBefore), they are the
// counts the load made, written in one statement where the dialect has
// one (countSetter): the count rule applied in Go, to the
// imported rows as they went by, with the rule's own list of deactivated
// users, which costs nothing beside reading the rows back
// (docs/decisions/import-speed.md). Otherwise the count rule recounts
// them in SQL (see
// recountUsersGrouped), which also counts the follows there were.
func (l *followLoad) setCounts() error {
	if c, ok := l.b.s.d.(countSetter); ok && l.noFollowsBefore {
		b := []byte{'['}
		for id, c := range l.counts.all {
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendInt(b, id, 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(c[0]), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(c[1]), 10)
			b = append(b, ']')
		}
		if len(b) == 1 {
			return nil // the users were written with their counts (graphImport.held)
		}
		b = append(b, ']')
		_, err := l.b.exec(l.ctx, c.setImportedCounts(), string(b))
		return err
	}
	_, err := l.b.exec(l.ctx, l.b.s.q.recountImported, idList(l.counts.ids()))
	return err
}

// followThere refuses an import for a follow that comes twice.
func followThere(f FollowRow) ImportErrors {
	return ImportErrors{{f.Pos, fmt.Sprintf("follow %d -> %d is there already", f.Follower, f.Followee)}}
}

// followGroups finds a follow that comes twice without the follow
// table's primary key, for as long as the follows come grouped by
// follower, as an export writes them: it holds the followees of the
// follower whose follows are coming and the followers whose follows have
// come, a few bytes a user, where holding every follow would take tens
// of bytes a follow.
type followGroups struct {
	follower  int64
	followees map[int64]struct{}
	done      map[int64]struct{}
}

func newFollowGroups() *followGroups {
	return &followGroups{follower: -1, followees: map[int64]struct{}{}, done: map[int64]struct{}{}}
}

// add takes a follow, and says whether the follows are still grouped by
// follower with it, and, if they are, whether it came before.
func (g *followGroups) add(follower, followee int64) (grouped, again bool) {
	if follower != g.follower {
		if _, ok := g.done[follower]; ok {
			return false, false
		}
		if g.follower >= 0 {
			g.done[g.follower] = struct{}{}
		}
		g.follower = follower
		if len(g.followees) > 1024 {
			// clear would cost the map's largest size for each
			// follower after a prolific one.
			g.followees = map[int64]struct{}{}
		} else {
			clear(g.followees)
		}
	}
	if _, ok := g.followees[followee]; ok {
		return true, true
	}
	g.followees[followee] = struct{}{}
	return true, false
}
