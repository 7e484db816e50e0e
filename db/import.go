package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"iter"
	"os"
	"slices"
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
// COPY (see bulkCopier): enough that a statement's round trip
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
// by the count rule (see counts.go), or, where the dialect writes new
// users with their counts (see graphImport.held), the new users and the
// blocks are written after the follows, counts and all. Rows go in with multi-row INSERTs,
// or with the dialect's bulk copy where it has one (PostgreSQL's COPY,
// SQL Server's bulk insert). progress, if not nil, is told the follows
// loaded so far.
//
// The import holds the database's write lock throughout: run it on a
// database that is not serving writes.
func (s *Store) ImportGraph(ctx context.Context, g Graph, progress func(follows int)) (ImportStats, error) {
	bulk, ok := s.d.(bulkLoader)
	if !ok {
		return ImportStats{}, fmt.Errorf("import: bulk import is not built for %s", s.d.name())
	}
	if g.LastUserID < 0 || g.LastUserID > MaxUserID {
		// Taken, it would leave every sign-up refused (and, on SQLite
		// at 2^63-1, refused as if the disk were full).
		return ImportStats{}, fmt.Errorf("import: LastUserId %d is not between 0 and %d, the highest user id there can be", g.LastUserID, int64(MaxUserID))
	}
	im := &graphImport{s: s, ctx: ctx, bulk: bulk, g: g, progress: progress}
	im.clock = &phaseClock{st: &im.st, last: time.Now()}
	im.lastPhase = "commit"
	err := s.bulkTx(ctx, bulk, im.run)
	im.clock.mark(im.lastPhase)
	var ie ImportErrors
	if errors.As(err, &ie) {
		return ImportStats{}, ie
	}
	if err != nil {
		return ImportStats{}, fmt.Errorf("import: %w", err)
	}
	return im.st, nil
}

// graphImport is one ImportGraph, in the phases run calls in turn.
type graphImport struct {
	s        *Store
	ctx      context.Context
	bulk     bulkLoader
	g        Graph
	progress func(follows int)
	b        bulkRun
	st       ImportStats
	clock    *phaseClock
	// lastPhase names the phase the import ends with, once the
	// transaction has committed.
	lastPhase string
	// bad are the rows refused so far.
	bad ImportErrors
	// The users there are, imported or not: ids, names in lower case,
	// external ids with where each came from.
	ids       map[int64]bool
	names     map[string]bool
	externals map[string]Pos
	// blocks are where each imported block came from.
	blocks map[pair]Pos
	// noFollowsBefore says the graph had no follows before the import.
	noFollowsBefore bool
	// held are the new users' rows, where the dialect writes them with
	// their counts (countSetter's usersWithCounts) into a graph without
	// follows: kept until the follows are counted, then written once,
	// before the blocks that refer to them (heldBlocks) and the foreign
	// keys that check the follows. nil where users go in first.
	held, heldBlocks *heldRows
}

// heldRows is a rowSink that keeps the rows it is given.
type heldRows struct {
	rows [][]any
	pos  []Pos
}

func (h *heldRows) add(pos Pos, vals ...any) error {
	h.rows = append(h.rows, vals)
	h.pos = append(h.pos, pos)
	return nil
}

func (h *heldRows) flush() error { return nil }

// run is the import's transaction: users, blocks, follows, then what
// makes the tables whole and the counts true. Where the users are held
// (see held), they and the blocks are checked first and written after the
// follows.
func (im *graphImport) run(b bulkRun) error {
	im.b = b
	var err error
	if im.noFollowsBefore, err = noFollows(im.ctx, b.runner); err != nil {
		return err
	}
	if c, ok := im.s.d.(countSetter); ok && c.usersWithCounts() && im.noFollowsBefore {
		im.held, im.heldBlocks = &heldRows{}, &heldRows{}
	}
	if err := im.loadUsers(); err != nil {
		return err
	}
	if err := im.loadBlocks(); err != nil {
		return err
	}
	phase := "users and blocks"
	if im.held != nil {
		phase = "users and blocks checked"
	}
	users := im.clock.mark(phase)
	load, err := im.loadFollows()
	if err != nil {
		return err
	}
	im.st.Load = users + im.clock.mark("follows")
	if im.held != nil {
		if err := im.writeHeldUsers(load); err != nil {
			return err
		}
		if err := im.writeHeldBlocks(); err != nil {
			return err
		}
		im.st.Load += im.clock.mark("users with their counts, and blocks")
	}
	im.st.FollowTable = load.how()
	if im.st.Rebuild, err = load.rebuild(im.blocks, im.clock); err != nil {
		return err
	}
	for _, q := range im.bulk.afterImport() {
		if _, err := b.tx.ExecContext(im.ctx, q); err != nil {
			return err
		}
	}
	im.st.Recount = im.clock.mark("counts")
	if write := load.afterCommit(); write != nil {
		// Written once the rest has committed, with the new file still
		// marked as being loaded (see newFile).
		im.lastPhase = "clear the mark"
		b.newFile.afterCommit = func() error {
			im.clock.mark("commit")
			err := write(im.ctx, b.conn)
			im.st.Rebuild += im.clock.mark("write the follow table's pages")
			if err == nil {
				err = checkFollowTrees(im.ctx, b.conn)
				im.st.Rebuild += im.clock.mark("check the follow table's pages")
			}
			return err
		}
	}
	return nil
}

// reject keeps err in bad when it is a bad row, and says whether it was.
func (im *graphImport) reject(err error) bool {
	var re *RowError
	if !errors.As(err, &re) {
		return false
	}
	im.bad = append(im.bad, re)
	return true
}

// loadUsers checks the graph's users, refusing those whose id, name or
// external id is taken, and loads them, or holds them (held); and keeps
// new users' ids above the graph's last.
func (im *graphImport) loadUsers() error {
	ctx, r := im.ctx, im.b.runner
	var err error
	if im.ids, im.names, im.externals, err = existingUsers(ctx, r); err != nil {
		return err
	}
	if im.held != nil {
		err = im.readUsers(im.held)
	} else {
		err = im.writeUsers(userImportColumns, im.readUsers)
	}
	if err != nil {
		return err
	}
	if err := im.bulk.keepUserIDsAbove(ctx, r, im.g.LastUserID); err != nil {
		return fmt.Errorf("keep user ids above %d: %w", im.g.LastUserID, err)
	}
	return nil
}

// readUsers reads the graph's users, checking each, into ins.
func (im *graphImport) readUsers(ins rowSink) error {
	for u, err := range im.g.Users {
		if err != nil {
			if !im.reject(err) {
				return err
			}
		} else if err := im.user(ins, u); err != nil {
			return err
		}
		if len(im.bad) >= maxImportErrors {
			return im.bad
		}
	}
	return nil
}

// writeUsers has fill write users' rows of cols, with their own ids.
func (im *graphImport) writeUsers(cols []string, fill func(ins rowSink) error) error {
	ctx, r := im.ctx, im.b.runner
	inserter, explicit := im.s.d.(userIDInserter)
	if explicit {
		if err := execAll(ctx, r, inserter.beforeUserIDs()); err != nil {
			return err
		}
	}
	ins := im.s.rowSink(ctx, im.b, "Users", cols, func(v []any) string { return fmt.Sprintf("user id %v", v[0]) })
	if err := fill(ins); err != nil {
		return err
	}
	if err := ins.flush(); err != nil {
		return err
	}
	if explicit {
		return execAll(ctx, r, inserter.afterUserIDs())
	}
	return nil
}

// writeHeldUsers writes the held users, each with its counts and the
// following version the counts' UPDATE would have given it (see
// bumpFollowingVersion), and leaves their counts out of those load sets.
func (im *graphImport) writeHeldUsers(load *followLoad) error {
	cols := append(slices.Clip(userImportColumns), "FollowerCount", "FollowingCount", "FollowingVersion")
	return im.writeUsers(cols, func(ins rowSink) error {
		for i, vals := range im.held.rows {
			n, counted := load.counts.take(vals[0].(int64))
			version := 0
			if counted {
				version = 1
			}
			if err := ins.add(im.held.pos[i], append(vals, n[0], n[1], version)...); err != nil {
				return err
			}
		}
		im.held = &heldRows{} // nothing more to keep alive
		return nil
	})
}

// loadBlocks checks the graph's blocks and loads them, or holds them
// until the held users are written.
func (im *graphImport) loadBlocks() error {
	ins := rowSink(im.heldBlocks)
	if im.held == nil {
		ins = im.blockSink()
	}
	var err error
	im.blocks, err = im.s.importBlocks(ins, im.g.Blocks, im.ids, &im.bad, im.reject)
	im.st.Blocks = len(im.blocks)
	return err
}

func (im *graphImport) blockSink() rowSink {
	return im.s.rowSink(im.ctx, im.b, "Blocks", blockImportColumns, func(v []any) string { return fmt.Sprintf("block %v -> %v", v[0], v[1]) })
}

// writeHeldBlocks writes the blocks held, once their users are in.
func (im *graphImport) writeHeldBlocks() error {
	ins := im.blockSink()
	for i, vals := range im.heldBlocks.rows {
		if err := ins.add(im.heldBlocks.pos[i], vals...); err != nil {
			return err
		}
	}
	im.heldBlocks = nil
	return ins.flush()
}

// user checks one user row and, while no row is bad, loads it.
func (im *graphImport) user(ins rowSink, u UserRow) error {
	switch first, taken := im.externals[u.ExternalID]; {
	case u.ID > MaxUserID:
		im.bad = append(im.bad, &RowError{u.Pos, fmt.Sprintf("user id %d is above %d, the highest user id there can be", u.ID, int64(MaxUserID))})
	case im.ids[u.ID]:
		im.bad = append(im.bad, &RowError{u.Pos, fmt.Sprintf("user id %d exists already", u.ID)})
	case im.names[strings.ToLower(u.Name)]:
		im.bad = append(im.bad, &RowError{u.Pos, fmt.Sprintf("name %q is taken", u.Name)})
	case taken && u.ExternalID != "":
		im.bad = append(im.bad, &RowError{u.Pos, fmt.Sprintf("ExternalId %q is taken (by %s)", u.ExternalID, first)})
	case len(im.bad) == 0:
		stamp := u.SecurityStamp
		if stamp == "" {
			stamp = newStamp()
		}
		var deactivated, external any
		if !u.DeactivatedAt.IsZero() {
			deactivated = im.s.d.timeArg(u.DeactivatedAt)
		}
		if u.ExternalID != "" {
			external = u.ExternalID
		}
		if err := ins.add(u.Pos, u.ID, u.Name, stamp, deactivated, external); err != nil {
			return err
		}
		im.st.Users++
	}
	if u.ID > 0 {
		im.ids[u.ID] = true
		im.names[strings.ToLower(u.Name)] = true
		if _, ok := im.externals[u.ExternalID]; !ok && u.ExternalID != "" {
			im.externals[u.ExternalID] = u.Pos
		}
	}
	return nil
}

// loadFollows checks the graph's follows and hands the good ones to the
// follow load, refusing the import with the bad ones.
func (im *graphImport) loadFollows() (*followLoad, error) {
	load, err := newFollowLoad(im.ctx, im.b, im.ids, im.noFollowsBefore, im.held)
	if err != nil {
		return nil, err
	}
	users := newUserSet(im.ids)
	for f, err := range im.g.Follows {
		switch {
		case err != nil:
			if !im.reject(err) {
				return nil, err
			}
		case !users.has(f.Follower):
			im.bad = append(im.bad, &RowError{f.Pos, fmt.Sprintf("follower %d is not a user", f.Follower)})
		case !users.has(f.Followee):
			im.bad = append(im.bad, &RowError{f.Pos, fmt.Sprintf("followee %d is not a user", f.Followee)})
		case f.Follower == f.Followee:
			im.bad = append(im.bad, &RowError{f.Pos, "a user cannot follow itself"})
		case len(im.bad) == 0:
			if err := load.add(f); err != nil {
				return nil, err
			}
			im.st.Follows++
			if im.progress != nil && im.st.Follows%50000 == 0 {
				im.progress(im.st.Follows)
			}
		}
		if len(im.bad) >= maxImportErrors {
			return nil, im.bad
		}
	}
	if len(im.bad) > 0 {
		return nil, im.bad
	}
	if err := load.flush(); err != nil {
		return nil, err
	}
	if im.progress != nil {
		im.progress(im.st.Follows)
	}
	return load, nil
}

// execAll runs statements in r's transaction, as they are.
func execAll(ctx context.Context, r runner, stmts []string) error {
	for _, q := range stmts {
		if _, err := r.tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// pair is a follow's or a block's two users, in its direction.
type pair struct{ from, to int64 }

// importBlocks loads blocks between users there are (ids) into ins, refusing
// self-blocks and blocks of unknown users into bad, and returns where
// each imported block came from.
func (s *Store) importBlocks(ins rowSink, blocks iter.Seq2[BlockRow, error], ids map[int64]bool, bad *ImportErrors, reject func(error) bool) (map[pair]Pos, error) {
	loaded := map[pair]Pos{}
	if blocks == nil {
		return loaded, nil
	}
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

// bulkRun is a bulk import's transaction: its runner, and the connection
// it runs on, for what database/sql cannot say (COPY, the pages written
// after the commit); newFile is set in an import into a new database that
// its dialect loads its own way (see newFileLoader).
type bulkRun struct {
	runner
	conn    *sql.Conn
	newFile *newFile
}

// bulkTx runs fn in one transaction on a connection of its own, set up
// for loading many rows (see bulkLoader.bulkSetup), and puts the
// connection back as it was; a connection that cannot be put back is
// discarded (see resetBulkConn).
func (s *Store) bulkTx(ctx context.Context, bulk bulkLoader, fn func(b bulkRun) error) (err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	// Deferred before the set-up runs, which may stop halfway.
	defer func() {
		if rerr := resetBulkConn(conn, bulk.bulkReset()); rerr != nil {
			if err == nil {
				err = fmt.Errorf("the rows went in, but: %w", rerr)
			} else {
				err = errors.Join(err, rerr)
			}
		}
	}()
	for _, q := range bulk.bulkSetup() {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	nf, err := s.startNewFile(ctx, conn)
	if err != nil {
		return err
	}
	if nf != nil {
		defer func() {
			if eerr := nf.finish(); eerr != nil && err == nil {
				err = fmt.Errorf("end loading the new database: %w", eerr)
			}
		}()
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return s.d.classify(err)
	}
	err = s.runTx(ctx, tx, nil, func(r runner) error {
		for _, q := range bulk.bulkTxSetup() {
			if _, err := r.exec(ctx, q); err != nil {
				return fmt.Errorf("set up the import's transaction: %w", err)
			}
		}
		return fn(bulkRun{runner: r, conn: conn, newFile: nf})
	})
	if err == nil && nf != nil && nf.afterCommit != nil {
		if err = nf.afterCommit(); err != nil {
			nf.unfinished = true
		}
	}
	return err
}

// resetBulkConn puts a bulk import's connection back as the pool's others
// are, and closes it. When that fails, the connection is discarded rather
// than returned to the pool: it may still have, say, SQLite's foreign keys
// off, for whichever request would get it next. The reset runs even when
// the import's context is done.
func resetBulkConn(conn *sql.Conn, reset []string) error {
	for _, q := range reset {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn })
			conn.Close()
			return fmt.Errorf("put the import's connection back (it was discarded): %s: %w", q, err)
		}
	}
	return conn.Close()
}

// newFile is a bulk import into a new, empty database that its dialect
// loads its own way (see newFileLoader).
type newFile struct {
	// writeTree says the import may write the follow table's pages
	// itself (see followPages), in afterCommit, which runs once the
	// transaction has committed and before the database is put back;
	// if it fails, the import is unfinished and the database is left
	// marked so.
	writeTree   bool
	afterCommit func() error
	unfinished  bool
	// end puts the database back after the load.
	end func() error
	// files are the database's files the import opened itself, closed
	// after the transaction and afterCommit.
	files []*os.File
}

// startNewFile has the dialect set conn up for loading a new database,
// where it loads one its own way and the database is new: no users and
// no follows.
func (s *Store) startNewFile(ctx context.Context, conn *sql.Conn) (*newFile, error) {
	loader, ok := s.d.(newFileLoader)
	if !ok {
		return nil, nil
	}
	var some int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM Users UNION ALL SELECT 1 FROM Follows LIMIT 1) AS x`).Scan(&some); err != nil {
		return nil, err
	}
	if some > 0 {
		return nil, nil
	}
	end, writeTree, err := loader.startNewFile(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("prepare the new database for loading: %w", err)
	}
	return &newFile{writeTree: writeTree, end: end}, nil
}

// finish closes the files the import opened, now that no SQLite lock is
// held (the closes would drop them), and puts the database back, unless
// the import is unfinished: then the mark stays, and the server refuses
// the file.
func (nf *newFile) finish() error {
	for _, f := range nf.files {
		f.Close()
	}
	if nf.unfinished {
		return nil
	}
	return nf.end()
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
// its bulk copy where it has one (bulkCopier), multi-row INSERTs
// otherwise.
func (s *Store) rowSink(ctx context.Context, b bulkRun, table string, cols []string, what func(vals []any) string) rowSink {
	if c, ok := s.d.(bulkCopier); ok && c.copies(table) {
		return &copySink{ctx: ctx, b: b, copier: c, table: table, cols: cols, what: what}
	}
	r := b.runner
	ins := newBatchInsert(ctx, r, `INSERT INTO `+table+` (`+strings.Join(cols, ", ")+`) VALUES `, len(cols))
	ins.onFlushError = func(err error) error { return findDuplicate(ctx, r, ins, err, what) }
	return ins
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
// dialect's copyRows, in the bulk transaction. A full batch is written
// while the next one is gathered, so that the reading and checking of
// rows, which is the import's own work, runs beside the database's
// (docs/decisions/postgres-queries.md); nothing else uses the
// transaction meanwhile, and flush waits for the last.
type copySink struct {
	ctx    context.Context
	b      bulkRun
	copier bulkCopier
	table  string
	cols   []string
	what   func([]any) string
	rows   [][]any
	pos    []Pos
	// sent is the batch being written, if any: its outcome comes on
	// the channel.
	sent chan error
}

func (c *copySink) add(pos Pos, vals ...any) error {
	c.rows = append(c.rows, vals)
	c.pos = append(c.pos, pos)
	if len(c.rows) < copyBatch {
		return nil
	}
	return c.send()
}

// send waits for the batch being written and starts writing the rows
// gathered.
func (c *copySink) send() error {
	if err := c.wait(); err != nil {
		return err
	}
	rows, pos := c.rows, c.pos
	c.rows, c.pos = make([][]any, 0, copyBatch), make([]Pos, 0, copyBatch)
	c.sent = make(chan error, 1)
	go func(done chan<- error) { done <- c.write(rows, pos) }(c.sent)
	return nil
}

// wait returns the outcome of the batch being written, if any.
func (c *copySink) wait() error {
	if c.sent == nil {
		return nil
	}
	err := <-c.sent
	c.sent = nil
	return err
}

func (c *copySink) write(rows [][]any, pos []Pos) error {
	err := c.copier.copyRows(c.ctx, c.b, c.table, c.cols, rows)
	var fr *failedRow
	if errors.As(err, &fr) && fr.row < len(rows) && errors.Is(c.b.s.d.classify(err), errDuplicate) {
		return ImportErrors{{pos[fr.row], c.what(rows[fr.row]) + " is there already"}}
	}
	return err
}

func (c *copySink) flush() error {
	if len(c.rows) > 0 {
		if err := c.send(); err != nil {
			return err
		}
	}
	return c.wait()
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
	last, err := s.d.lastUserID(ctx, s.read())
	if err != nil {
		return 0, fmt.Errorf("read the last user id: %w", err)
	}
	return last, nil
}
