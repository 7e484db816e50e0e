package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"os"
	"strconv"
	"strings"
	"time"
)

// UserRow, FollowRow and BlockRow are the rows of a graph as Import takes
// them and a GraphReader yields them. Pos says where an imported row came
// from, so that a bad one can be pointed at; exported rows have none. A
// user's SecurityStamp travels with it, so that its tokens still work
// after the graph moves; an imported user without one gets a new one. So
// does its ExternalId, so that its provider's tokens still sign it in.
// Each row's zero settings are the columns' defaults (an active user, a
// follow neither muted nor silenced), so that rows from files that do not
// carry them go in as the server would have made them.
type (
	UserRow struct {
		Pos           Pos
		ID            int64
		Name          string
		SecurityStamp string
		// DeactivatedAt is when the account was deactivated; zero for
		// an active one.
		DeactivatedAt time.Time
		// ExternalID is the subject an OpenID Connect provider knows
		// the account by (see external.go); empty for none.
		ExternalID string
	}
	FollowRow struct {
		Pos                Pos
		Follower, Followee int64
		At                 time.Time
		Muted              bool
		// NotificationsOff is NotificationsEnabled turned round, so that
		// the zero row has the column's default (enabled).
		NotificationsOff bool
	}
	BlockRow struct {
		Pos              Pos
		Blocker, Blocked int64
		At               time.Time
	}
)

// Graph is a whole follower graph as Import takes it: its rows, users
// first, and LastUserID, the highest user id its database ever gave out
// (see Store.LastUserID). Blocks may be nil.
type Graph struct {
	Users      iter.Seq2[UserRow, error]
	Blocks     iter.Seq2[BlockRow, error]
	Follows    iter.Seq2[FollowRow, error]
	LastUserID int64
}

// The columns of each table a graph moves with, in the order import
// writes and export reads them: one list, so that the two cannot drift.
var (
	userImportColumns   = []string{"Id", "Name", "SecurityStamp", "DeactivatedAt", "ExternalId"}
	followImportColumns = []string{"FollowerId", "FolloweeId", "CreatedAt", "Muted", "NotificationsEnabled"}
	blockImportColumns  = []string{"BlockerId", "BlockedId", "CreatedAt"}
)

// Pos is where a row came from: a file, or whatever its reader names, and
// a line in it.
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File // not a file's row: a table's
	}
	return fmt.Sprintf("%s line %d", p.File, p.Line)
}

// RowError is a row an import refused.
type RowError struct {
	Pos    Pos
	Reason string
}

func (e *RowError) Error() string { return e.Pos.String() + ": " + e.Reason }

// ImportErrors are the bad rows of a refused import, the first
// maxImportErrors of them.
type ImportErrors []*RowError

func (e ImportErrors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d bad rows, nothing imported:", len(e))
	for _, r := range e {
		b.WriteString("\n  " + r.Error())
	}
	return b.String()
}

const maxImportErrors = 20

// ImportStats say what an import loaded, and where its time went: Load
// checking and writing the rows, Rebuild making the set-aside indexes and
// triggers again (and checking follows across blocks), Recount the counts
// of the users it touched (with the statements that end it, such as fresh
// planner statistics); each is read off the one phase clock. Into a new
// SQLite file (see followPages), Load holds the follows rather than
// writing them, Rebuild sorts and checks them, with the counts set beside
// it, and writes the follow table's pages, and Recount is what ends it.
type ImportStats struct {
	Users, Blocks, Follows int
	Load, Rebuild, Recount time.Duration
	// FollowTable says, for an import into a new SQLite file, how the
	// follow table was loaded: by writing its pages, or through SQLite
	// and why.
	FollowTable string
	// Phases are the steps of the import in the order they ran, each
	// with its own time, for finding where an import's time goes.
	Phases []ImportPhase
}

// ImportPhase is one step of an import and how long it took.
type ImportPhase struct {
	Name string
	Took time.Duration
}

// phaseClock adds a phase to stats each time mark is called: the time
// since the previous mark.
type phaseClock struct {
	st   *ImportStats
	last time.Time
}

func (c *phaseClock) mark(name string) time.Duration {
	now := time.Now()
	took := now.Sub(c.last)
	c.st.Phases = append(c.st.Phases, ImportPhase{name, took})
	c.last = now
	return took
}

// importBatch is how many rows one INSERT carries: 5 columns x 300 rows
// stays under SQLite's (32,766) and SQL Server's (2,100) parameter limits.
const importBatch = 300

// copyBatch is how many rows one COPY carries, where the dialect has
// COPY (see dialect.copyRows): enough that a statement's round trip
// costs nothing beside its rows.
const copyBatch = 50_000

// Import bulk-loads users and then follows (see ImportGraph), with no
// blocks.
func (s *Store) Import(ctx context.Context, users iter.Seq2[UserRow, error], follows iter.Seq2[FollowRow, error], lastUserID int64, progress func(follows int)) (ImportStats, error) {
	return s.ImportGraph(ctx, Graph{Users: users, Follows: follows, LastUserID: lastUserID}, progress)
}

// ImportGraph bulk-loads a graph's users, then its blocks, then its
// follows, in one transaction: either every row goes in or, when any row
// is bad, none does, and the error lists the bad rows (ImportErrors).
// Users keep their ids, stamps and deactivations, follows their times and
// settings, blocks their times; and no later user gets an id at or below
// g.LastUserID (the exported graph's highest id ever given out, see
// LastUserID) nor below any imported one: an id that belonged to a
// deleted user is never given again. The follow table's indexes and
// triggers are set aside while rows go in and rebuilt once at the end,
// which is what makes millions of rows a matter of seconds; then the
// counts of the users at either end of an imported follow are recounted
// by the count rule (see counts.go). Rows go in with multi-row INSERTs,
// or with the dialect's bulk copy where it has one (PostgreSQL's COPY,
// SQL Server's bulk insert). progress, if not nil, is told the follows
// loaded so far.
//
// The import holds the database's write lock throughout: run it on a
// database that is not serving writes.
func (s *Store) ImportGraph(ctx context.Context, g Graph, progress func(follows int)) (ImportStats, error) {
	users, follows, lastUserID := g.Users, g.Follows, g.LastUserID
	var st ImportStats
	var bad ImportErrors
	reject := func(err error) bool {
		var re *RowError
		if !errors.As(err, &re) {
			return false
		}
		bad = append(bad, re)
		return true
	}
	if s.d.setAsideFollowIndexes == nil || s.d.keepUserIDsAbove == nil {
		return ImportStats{}, fmt.Errorf("import: bulk import is not built for %s", s.d.name)
	}
	clock := &phaseClock{st: &st, last: time.Now()}
	last := "commit" // the last phase's name
	err := s.bulkTx(ctx, func(r runner) error {
		ids, names, externals, err := existingUsers(ctx, r)
		if err != nil {
			return err
		}
		for _, q := range s.d.beforeUserIDs {
			if _, err := r.tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		ins := s.rowSink(ctx, r, "Users", userImportColumns, func(v []any) string { return fmt.Sprintf("user id %v", v[0]) })
		for u, err := range users {
			if err != nil {
				if !reject(err) {
					return err
				}
			} else if ids[u.ID] {
				bad = append(bad, &RowError{u.Pos, fmt.Sprintf("user id %d exists already", u.ID)})
			} else if names[strings.ToLower(u.Name)] {
				bad = append(bad, &RowError{u.Pos, fmt.Sprintf("name %q is taken", u.Name)})
			} else if first, ok := externals[u.ExternalID]; ok && u.ExternalID != "" {
				bad = append(bad, &RowError{u.Pos, fmt.Sprintf("ExternalId %q is taken (by %s)", u.ExternalID, first)})
			} else if len(bad) == 0 {
				stamp := u.SecurityStamp
				if stamp == "" {
					stamp = newStamp()
				}
				var deactivated, external any
				if !u.DeactivatedAt.IsZero() {
					deactivated = s.d.timeArg(u.DeactivatedAt)
				}
				if u.ExternalID != "" {
					external = u.ExternalID
				}
				if err := ins.add(u.Pos, u.ID, u.Name, stamp, deactivated, external); err != nil {
					return err
				}
				st.Users++
			}
			if u.ID > 0 {
				ids[u.ID] = true
				names[strings.ToLower(u.Name)] = true
				if _, ok := externals[u.ExternalID]; !ok && u.ExternalID != "" {
					externals[u.ExternalID] = u.Pos
				}
			}
			if len(bad) >= maxImportErrors {
				return bad
			}
		}
		if err := ins.flush(); err != nil {
			return err
		}
		for _, q := range s.d.afterUserIDs {
			if _, err := r.tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		if err := s.d.keepUserIDsAbove(ctx, r, lastUserID); err != nil {
			return fmt.Errorf("keep user ids above %d: %w", lastUserID, err)
		}
		blocks, err := s.importBlocks(ctx, r, g.Blocks, ids, &bad, reject)
		if err != nil {
			return err
		}
		st.Blocks = len(blocks)
		users := clock.mark("users and blocks")

		fresh, err := noFollows(ctx, r)
		if err != nil {
			return err
		}
		load, err := s.newFollowLoad(ctx, r, fresh, ids)
		if err != nil {
			return err
		}
		for f, err := range follows {
			switch {
			case err != nil:
				if !reject(err) {
					return err
				}
			case !ids[f.Follower]:
				bad = append(bad, &RowError{f.Pos, fmt.Sprintf("follower %d is not a user", f.Follower)})
			case !ids[f.Followee]:
				bad = append(bad, &RowError{f.Pos, fmt.Sprintf("followee %d is not a user", f.Followee)})
			case f.Follower == f.Followee:
				bad = append(bad, &RowError{f.Pos, "a user cannot follow itself"})
			case len(bad) == 0:
				if err := load.add(f); err != nil {
					return err
				}
				st.Follows++
				if progress != nil && st.Follows%50000 == 0 {
					progress(st.Follows)
				}
			}
			if len(bad) >= maxImportErrors {
				return bad
			}
		}
		if len(bad) > 0 {
			return bad
		}
		if err := load.flush(); err != nil {
			return err
		}
		if progress != nil {
			progress(st.Follows)
		}
		st.Load = users + clock.mark("follows")
		st.FollowTable = load.how()
		if load.pages != nil {
			// Sorting and checking the held rows is Go's work on two
			// cores, setting the counts SQLite's on one: side by side.
			checked := make(chan error, 1)
			go func() { checked <- load.pages.check(blocks) }()
			err := load.setCounts(fresh)
			if err := <-checked; err != nil {
				return err
			}
			if err != nil {
				return err
			}
			st.Rebuild = clock.mark("sort and check, counts beside")
		} else {
			if err := load.restore(); err != nil {
				return err
			}
			if err := refuseFollowsAcrossBlocks(ctx, r, blocks); err != nil {
				return err
			}
			st.Rebuild = clock.mark("indexes and triggers")
			// The set-aside triggers did not count the imported follows,
			// nor bump their followers' versions.
			if err := load.setCounts(fresh); err != nil {
				return err
			}
			if err := load.bumpVersions(); err != nil {
				return err
			}
		}
		for _, q := range s.d.afterImport {
			if _, err := r.tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		st.Recount = clock.mark("counts")
		if load.pages != nil {
			// The pages are written once the rest has committed, with
			// the file still marked as being loaded (see freshImport).
			last = "clear the mark"
			r.fresh.afterCommit = func() error {
				clock.mark("commit")
				err := load.pages.write(ctx, r.conn)
				st.Rebuild += clock.mark("write the follow table's pages")
				if err == nil {
					err = checkFollowTrees(ctx, r.conn)
					st.Rebuild += clock.mark("check the follow table's pages")
				}
				return err
			}
		}
		return nil
	})
	clock.mark(last)
	var ie ImportErrors
	if errors.As(err, &ie) {
		return ImportStats{}, ie
	}
	if err != nil {
		return ImportStats{}, fmt.Errorf("import: %w", err)
	}
	return st, nil
}

// pair is a follow's or a block's two users, in its direction.
type pair struct{ from, to int64 }

// importBlocks loads blocks between users there are (ids), refusing
// self-blocks and blocks of unknown users into bad, and returns where
// each imported block came from.
func (s *Store) importBlocks(ctx context.Context, r runner, blocks iter.Seq2[BlockRow, error], ids map[int64]bool, bad *ImportErrors, reject func(error) bool) (map[pair]Pos, error) {
	loaded := map[pair]Pos{}
	if blocks == nil {
		return loaded, nil
	}
	ins := s.rowSink(ctx, r, "Blocks", blockImportColumns, func(v []any) string { return fmt.Sprintf("block %v -> %v", v[0], v[1]) })
	for b, err := range blocks {
		switch {
		case err != nil:
			if !reject(err) {
				return nil, err
			}
		case !ids[b.Blocker]:
			*bad = append(*bad, &RowError{b.Pos, fmt.Sprintf("blocker %d is not a user", b.Blocker)})
		case !ids[b.Blocked]:
			*bad = append(*bad, &RowError{b.Pos, fmt.Sprintf("blocked user %d is not a user", b.Blocked)})
		case b.Blocker == b.Blocked:
			*bad = append(*bad, &RowError{b.Pos, "a user cannot block itself"})
		case len(*bad) == 0:
			if err := ins.add(b.Pos, b.Blocker, b.Blocked, s.d.timeArg(b.At)); err != nil {
				return nil, err
			}
			loaded[pair{b.Blocker, b.Blocked}] = b.Pos
		}
		if len(*bad) >= maxImportErrors {
			return nil, *bad
		}
	}
	return loaded, ins.flush()
}

// followsAcrossBlocks lists the blocks that stand between users with a
// follow between them, either way: the server removes those follows when
// a block is made, so a graph that has both is not one it could have made.
const followsAcrossBlocks = `SELECT b.BlockerId, b.BlockedId FROM Blocks AS b
WHERE EXISTS (SELECT 1 FROM Follows AS f WHERE f.FollowerId = b.BlockerId AND f.FolloweeId = b.BlockedId)
   OR EXISTS (SELECT 1 FROM Follows AS f WHERE f.FollowerId = b.BlockedId AND f.FolloweeId = b.BlockerId)
ORDER BY b.BlockerId, b.BlockedId`

// refuseFollowsAcrossBlocks refuses the import when a block stands
// between users who follow each other, naming the imported block's row
// (or, for a block the database had, the pair).
func refuseFollowsAcrossBlocks(ctx context.Context, r runner, imported map[pair]Pos) error {
	rows, err := r.query(ctx, followsAcrossBlocks)
	if err != nil {
		return fmt.Errorf("check follows across blocks: %w", err)
	}
	defer rows.Close()
	var bad ImportErrors
	for rows.Next() && len(bad) < maxImportErrors {
		var p pair
		if err := rows.Scan(&p.from, &p.to); err != nil {
			return err
		}
		pos, ok := imported[p]
		if !ok {
			pos = Pos{File: "Blocks (there before the import)"}
		}
		bad = append(bad, followAcrossBlock(pos, p))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(bad) > 0 {
		return bad
	}
	return nil
}

// noFollows reports whether the graph has no follows yet (in SQL every
// dialect reads: SQL Server has no LIMIT).
func noFollows(ctx context.Context, r runner) (bool, error) {
	var some int
	err := r.queryRow(ctx, `SELECT CASE WHEN EXISTS (SELECT 1 FROM Follows) THEN 1 ELSE 0 END`, nil, &some)
	return some == 0, err
}

// followLoad writes an import's checked follows into the follow table
// and counts them. Into a new SQLite file, it holds them for writing the
// table's pages (pages, see followPages); otherwise, or when there are
// too many to hold, it sets the table's indexes and triggers aside
// (restore makes them again) and writes the rows into sink.
type followLoad struct {
	ctx     context.Context
	r       runner
	sink    rowSink
	pages   *followPages
	restore func() error
	// counts are, by user, the imported follows the count rule counts
	// for it (its followers, its following), given deactivated, the
	// users it leaves out; every user at either end of an imported
	// follow has an entry.
	counts      importCounts
	deactivated map[int64]bool

	// whyNotPages says why the follows of an import into a new file go
	// through SQLite rather than into pages (see ImportStats.FollowTable).
	whyNotPages string
}

func (s *Store) newFollowLoad(ctx context.Context, r runner, fresh bool, ids map[int64]bool) (*followLoad, error) {
	l := &followLoad{ctx: ctx, r: r, counts: newImportCounts(ids), deactivated: map[int64]bool{}}
	err := scanRows(ctx, r, deactivatedIDs, func(rs *rows) error {
		var id int64
		err := rs.Scan(&id)
		l.deactivated[id] = true
		return err
	})
	if err != nil {
		return nil, err
	}
	switch {
	case fresh && r.fresh != nil && r.fresh.pages:
		if l.pages, l.whyNotPages, err = newFollowPages(ctx, r); err != nil || l.pages != nil {
			return l, err
		}
	case r.fresh != nil:
		l.whyNotPages = "another connection has the file open, so it stays in WAL mode"
	}
	return l, l.toSink()
}

// toSink sets the follow table's indexes and triggers aside and makes
// the sink the rows go into, with the rows held so far.
func (l *followLoad) toSink() error {
	var err error
	if l.restore, err = l.r.s.d.setAsideFollowIndexes(l.ctx, l.r); err != nil {
		return err
	}
	l.sink = l.r.s.rowSink(l.ctx, l.r, "Follows", followImportColumns, func(v []any) string { return fmt.Sprintf("follow %v -> %v", v[0], v[1]) })
	held := l.pages
	l.pages = nil
	for i := range held.len() {
		if err := l.write(held.row(i)); err != nil {
			return err
		}
	}
	return nil
}

func (l *followLoad) add(f FollowRow) error {
	l.count(f.Followee, 0, f.Follower)
	l.count(f.Follower, 1, f.Followee)
	if l.pages != nil {
		if l.whyNotPages = l.pages.add(f); l.whyNotPages == "" {
			return nil
		}
		if err := l.toSink(); err != nil {
			return err
		}
	}
	return l.write(f)
}

func (l *followLoad) write(f FollowRow) error {
	return l.sink.add(f.Pos, f.Follower, f.Followee, l.r.s.d.timeArg(f.At), f.Muted, !f.NotificationsOff)
}

// count counts a follow for user in its counts[which] when the user at
// the follow's other end is active.
func (l *followLoad) count(user int64, which int, other int64) {
	l.counts.add(user, which, len(l.deactivated) == 0 || !l.deactivated[other])
}

// importCounts are, by user, the imported follows the count rule counts
// for it (its followers, its following); every user at either end of an
// imported follow has an entry. They are kept in a slice by id when the
// ids are dense enough, as users' mostly are: in a map, the two lookups
// a follow were a third of the loading goroutine's CPU (0.5 of 1.5 s for
// 2.9 million follows).
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
	var top int64
	for id := range ids {
		top = max(top, id)
	}
	if top <= 4*int64(len(ids))+1<<16 {
		return importCounts{dense: make([]denseCount, top+1)}
	}
	return importCounts{sparse: map[int64]*[2]int{}}
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

// ids are the users all yields.
func (c *importCounts) ids() []int64 {
	var ids []int64
	for id := range c.all {
		ids = append(ids, id)
	}
	return ids
}

// flush writes the follows still gathered.
func (l *followLoad) flush() error {
	if l.sink == nil {
		return nil
	}
	return l.sink.flush()
}

// setCounts sets the counts of the users at either end of an imported
// follow. Into a graph that had no follows (fresh), they are the counts
// the load made, written in one statement where the dialect has one
// (dialect.setImportedCounts): the count rule applied in Go, to the
// imported rows as they went by, with the rule's own list of deactivated
// users, which costs nothing beside reading 3 million rows back (1.5 to
// 3 s). Otherwise the count rule recounts them in SQL (see
// recountUsersGrouped), which also counts the follows there were.
func (l *followLoad) setCounts(fresh bool) error {
	d := l.r.s.d
	if fresh && d.setImportedCounts != "" {
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
		b = append(b, ']')
		_, err := l.r.exec(l.ctx, d.setImportedCounts, string(b))
		return err
	}
	_, err := l.r.exec(l.ctx, d.recountImported, idList(l.counts.ids()))
	return err
}

// bumpVersions bumps the follow versions (see followLists) of the users
// of the imported follows, where the dialect keeps them: the triggers
// that would have were set aside for the load. (Into a new file whose
// pages the import writes itself, no server can hold a list yet.)
func (l *followLoad) bumpVersions() error {
	d := l.r.s.d
	if d.bumpFollowVersions == "" {
		return nil
	}
	// Every user at either end: a follow of a deactivated user counts for
	// nobody but is in its follower's list all the same.
	ids := l.counts.ids()
	if len(ids) == 0 {
		return nil
	}
	_, err := l.r.exec(l.ctx, d.bumpFollowVersions, idList(ids))
	return err
}

// existingUsers returns the ids of the users there are, their names in
// lower case, and their external ids, each with a Pos naming its user
// (as an imported one's names its row).
func existingUsers(ctx context.Context, r runner) (map[int64]bool, map[string]bool, map[string]Pos, error) {
	ids, names, externals := map[int64]bool{}, map[string]bool{}, map[string]Pos{}
	rows, err := r.query(ctx, `SELECT Id, Name, ExternalId FROM Users`)
	if err != nil {
		return nil, nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var name string
		var external sql.NullString
		if err := rows.Scan(&id, &name, &external); err != nil {
			return nil, nil, nil, err
		}
		ids[id], names[strings.ToLower(name)] = true, true
		if external.Valid {
			externals[external.String] = Pos{File: fmt.Sprintf("user %d, there before the import", id)}
		}
	}
	return ids, names, externals, rows.Err()
}

// bulkTx runs fn in one transaction on a connection of its own, set up
// for loading many rows (see dialect.bulkSetup), and puts the connection
// back as it was.
func (s *Store) bulkTx(ctx context.Context, fn func(r runner) error) (err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, q := range s.d.bulkSetup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	defer func() {
		for _, q := range s.d.bulkReset {
			conn.ExecContext(context.Background(), q)
		}
	}()
	var fresh *freshImport
	if s.d.freshBulk != nil {
		var empty int
		if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM Users UNION ALL SELECT 1 FROM Follows LIMIT 1) AS x`).Scan(&empty); err != nil {
			return err
		}
		if empty == 0 {
			end, pages, err := s.d.freshBulk(ctx, conn)
			if err != nil {
				return fmt.Errorf("prepare the new database for loading: %w", err)
			}
			fresh = &freshImport{pages: pages}
			defer func() {
				if fresh.unfinished {
					return // the mark stays: the server refuses the file
				}
				if eerr := end(); eerr != nil && err == nil {
					err = fmt.Errorf("end loading the new database: %w", eerr)
				}
			}()
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return s.d.classify(err)
	}
	err = s.runTx(tx, func(r runner) error {
		r.conn, r.fresh = conn, fresh
		return fn(r)
	})
	if err == nil && fresh != nil && fresh.afterCommit != nil {
		if err = fresh.afterCommit(); err != nil {
			fresh.unfinished = true
		}
	}
	if fresh != nil {
		// Now that no SQLite lock is held (the closes would drop them).
		for _, f := range fresh.files {
			f.Close()
		}
	}
	return err
}

// freshImport is a bulk import into a new database (see
// dialect.freshBulk).
type freshImport struct {
	// pages says the import may write the follow table's pages itself
	// (see followPages), in afterCommit, which runs once the transaction
	// has committed and before the database is put back; if it fails,
	// the import is unfinished and the database is left marked so.
	pages       bool
	afterCommit func() error
	unfinished  bool
	// files are the database's files the import opened itself, closed
	// after the transaction and afterCommit.
	files []*os.File
}

// setAside drops, for a bulk import, the objects that a catalogue query
// lists, each row a kind, a name and the statement that makes the object
// again, with the statement drop makes of its kind and name; it returns
// what makes them again, in the order listed.
func setAside(ctx context.Context, r runner, catalogue string, drop func(kind, name string) string) (restore func() error, err error) {
	rows, err := r.query(ctx, catalogue)
	if err != nil {
		return nil, err
	}
	type object struct{ kind, name, def string }
	var saved []object
	for rows.Next() {
		var o object
		if err := rows.Scan(&o.kind, &o.name, &o.def); err != nil {
			rows.Close()
			return nil, err
		}
		saved = append(saved, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, o := range saved {
		if _, err := r.tx.ExecContext(ctx, drop(o.kind, o.name)); err != nil {
			return nil, fmt.Errorf("set aside %s %s: %w", o.kind, o.name, err)
		}
	}
	return func() error {
		for _, o := range saved {
			if _, err := r.tx.ExecContext(ctx, o.def); err != nil {
				return fmt.Errorf("recreate %s %s: %w", o.kind, o.name, err)
			}
		}
		return nil
	}, nil
}

// rowSink writes an import's rows into one table, many at a time. A row
// refused as there already (a duplicate key) comes back as ImportErrors
// naming it, as what describes its values and "is there already".
type rowSink interface {
	add(pos Pos, vals ...any) error
	// flush writes the rows still gathered.
	flush() error
}

// rowSink returns the dialect's way of loading rows into table's columns:
// its bulk copy where it has one, multi-row INSERTs otherwise.
func (s *Store) rowSink(ctx context.Context, r runner, table string, cols []string, what func(vals []any) string) rowSink {
	if s.d.copyRows != nil && !(table == "Users" && s.d.usersByInsert) {
		return &copySink{ctx: ctx, r: r, table: table, cols: cols, what: what}
	}
	b := newBatchInsert(ctx, r, `INSERT INTO `+table+` (`+strings.Join(cols, ", ")+`) VALUES `, len(cols))
	b.onFlushError = func(err error) error { return findDuplicate(ctx, r, b, err, what) }
	return b
}

// failedRow is an error the database raised on one row of many sent
// together, at index row (from 0).
type failedRow struct {
	row int
	err error
}

func (e *failedRow) Error() string { return fmt.Sprintf("row %d: %v", e.row+1, e.err) }
func (e *failedRow) Unwrap() error { return e.err }

// copySink gathers rows and writes copyBatch of them at a time with the
// dialect's copyRows, in the bulk transaction.
type copySink struct {
	ctx   context.Context
	r     runner
	table string
	cols  []string
	what  func([]any) string
	rows  [][]any
	pos   []Pos
}

func (c *copySink) add(pos Pos, vals ...any) error {
	c.rows = append(c.rows, vals)
	c.pos = append(c.pos, pos)
	if len(c.rows) < copyBatch {
		return nil
	}
	return c.flush()
}

func (c *copySink) flush() error {
	if len(c.rows) == 0 {
		return nil
	}
	err := c.r.s.d.copyRows(c.ctx, c.r, c.table, c.cols, c.rows)
	var fr *failedRow
	if errors.As(err, &fr) && fr.row < len(c.rows) && errors.Is(c.r.s.d.classify(err), errDuplicate) {
		return ImportErrors{{c.pos[fr.row], c.what(c.rows[fr.row]) + " is there already"}}
	}
	c.rows, c.pos = c.rows[:0], c.pos[:0]
	return err
}

// findDuplicate runs after a batch of rows failed: it inserts the batch
// row by row, inside a savepoint it then rolls back, to name the row at
// fault.
func findDuplicate(ctx context.Context, r runner, b *batchInsert, batchErr error, what func([]any) string) error {
	if !errors.Is(r.s.d.classify(batchErr), errDuplicate) {
		return batchErr
	}
	if _, err := r.tx.ExecContext(ctx, `SAVEPOINT find_duplicate`); err != nil {
		return err
	}
	defer r.tx.ExecContext(ctx, `ROLLBACK TO find_duplicate; RELEASE find_duplicate`)
	for i, pos := range b.pos {
		a := b.args[i*b.cols : (i+1)*b.cols]
		if _, err := r.tx.ExecContext(ctx, r.s.d.rebind(b.text(1)), a...); err != nil {
			if errors.Is(r.s.d.classify(err), errDuplicate) {
				return ImportErrors{{pos, what(a) + " is there already"}}
			}
			return err
		}
	}
	return batchErr
}

// batchInsert gathers rows and inserts them importBatch at a time with one
// prepared multi-row INSERT.
type batchInsert struct {
	ctx          context.Context
	r            runner
	prefix       string
	cols         int
	args         []any
	pos          []Pos // of the pending rows
	n            int
	full         *sql.Stmt
	onFlushError func(error) error
}

func newBatchInsert(ctx context.Context, r runner, prefix string, cols int) *batchInsert {
	return &batchInsert{ctx: ctx, r: r, prefix: prefix, cols: cols}
}

func (b *batchInsert) text(rows int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", b.cols), ",") + ")"
	return b.prefix + strings.TrimSuffix(strings.Repeat(row+",", rows), ",")
}

func (b *batchInsert) add(pos Pos, vals ...any) error {
	b.args = append(b.args, vals...)
	b.pos = append(b.pos, pos)
	b.n++
	if b.n < importBatch {
		return nil
	}
	return b.flush()
}

func (b *batchInsert) flush() error {
	if b.n == 0 {
		return nil
	}
	var err error
	if b.n == importBatch {
		if b.full == nil {
			b.full, err = b.r.tx.PrepareContext(b.ctx, b.r.s.d.rebind(b.text(importBatch)))
			if err != nil {
				return err
			}
		}
		_, err = b.full.ExecContext(b.ctx, b.args...)
	} else {
		_, err = b.r.tx.ExecContext(b.ctx, b.r.s.d.rebind(b.text(b.n)), b.args...)
	}
	if err != nil && b.onFlushError != nil {
		err = b.onFlushError(err)
	}
	b.args, b.pos, b.n = b.args[:0], b.pos[:0], 0
	return err
}

// LastUserID returns the highest user id the database has ever given out,
// deleted users' included: the mark an import of this graph must keep
// new ids above.
func (s *Store) LastUserID(ctx context.Context) (int64, error) {
	if s.d.lastUserID == nil {
		return 0, fmt.Errorf("read the last user id: not built for %s", s.d.name)
	}
	last, err := s.d.lastUserID(ctx, s.read())
	if err != nil {
		return 0, fmt.Errorf("read the last user id: %w", err)
	}
	return last, nil
}
