package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// UserRow and FollowRow are the rows of a graph as Import takes them and
// ExportUsers and ExportFollows yield them. Pos says where an imported row
// came from, so that a bad one can be pointed at; exported rows have none.
// A user's SecurityStamp travels with it, so that its tokens still work
// after the graph moves; an imported user without one gets a new one.
type (
	UserRow struct {
		Pos           Pos
		ID            int64
		Name          string
		SecurityStamp string
	}
	FollowRow struct {
		Pos                Pos
		Follower, Followee int64
		At                 time.Time
	}
)

// Pos is where a row came from: a file, or whatever its reader names, and
// a line in it.
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string { return fmt.Sprintf("%s line %d", p.File, p.Line) }

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
// triggers again, Recount the counts of the users it touched (with the
// statements that end it, such as fresh planner statistics).
type ImportStats struct {
	Users, Follows         int
	Load, Rebuild, Recount time.Duration
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

func (c *phaseClock) mark(name string) {
	now := time.Now()
	c.st.Phases = append(c.st.Phases, ImportPhase{name, now.Sub(c.last)})
	c.last = now
}

// importBatch is how many rows one INSERT carries: 3 columns x 300 rows
// stays under SQLite's and SQL Server's parameter limits.
const importBatch = 300

// copyBatch is how many rows one COPY carries, where the dialect has
// COPY (see dialect.copyRows): enough that a statement's round trip
// costs nothing beside its rows.
const copyBatch = 50_000

// Import bulk-loads users and then follows, in one transaction: either
// every row goes in or, when any row is bad, none does, and the error
// lists the bad rows (ImportErrors). Users keep their ids, and no later
// user gets an id at or below lastUserID (the exported graph's highest id
// ever given out, see LastUserID) nor below any imported one: an id that
// belonged to a deleted user is never given again. The follow
// table's indexes and triggers are set aside while rows go in and rebuilt
// once at the end, which is what makes millions of rows a matter of
// seconds; then the counts of the users at either end of an imported
// follow are recounted by the count rule (see counts.go). Rows go in with
// multi-row INSERTs, or with COPY where the dialect has it (PostgreSQL).
// progress, if not nil, is told the follows loaded so far.
//
// The import holds the database's write lock throughout: run it on a
// database that is not serving writes.
func (s *Store) Import(ctx context.Context, users iter.Seq2[UserRow, error], follows iter.Seq2[FollowRow, error], lastUserID int64, progress func(follows int)) (ImportStats, error) {
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
		return ImportStats{}, fmt.Errorf("import: bulk import supports SQLite and PostgreSQL; import into one of them and move the graph with export")
	}
	start := time.Now()
	clock := &phaseClock{st: &st, last: start}
	err := s.bulkTx(ctx, func(r runner) error {
		ids, names, err := existingUsers(ctx, r)
		if err != nil {
			return err
		}
		ins := s.rowSink(ctx, r, "Users", []string{"Id", "Name", "SecurityStamp"}, func(v []any) string { return fmt.Sprintf("user id %v", v[0]) })
		for u, err := range users {
			if err != nil {
				if !reject(err) {
					return err
				}
			} else if ids[u.ID] {
				bad = append(bad, &RowError{u.Pos, fmt.Sprintf("user id %d exists already", u.ID)})
			} else if names[strings.ToLower(u.Name)] {
				bad = append(bad, &RowError{u.Pos, fmt.Sprintf("name %q is taken", u.Name)})
			} else if len(bad) == 0 {
				stamp := u.SecurityStamp
				if stamp == "" {
					stamp = newStamp()
				}
				if err := ins.add(u.Pos, u.ID, u.Name, stamp); err != nil {
					return err
				}
				st.Users++
			}
			if u.ID > 0 {
				ids[u.ID] = true
				names[strings.ToLower(u.Name)] = true
			}
			if len(bad) >= maxImportErrors {
				return bad
			}
		}
		if err := ins.flush(); err != nil {
			return err
		}
		if err := s.d.keepUserIDsAbove(ctx, r, lastUserID); err != nil {
			return fmt.Errorf("keep user ids above %d: %w", lastUserID, err)
		}
		clock.mark("users")

		fresh, err := noFollows(ctx, r)
		if err != nil {
			return err
		}
		restore, err := s.d.setAsideFollowIndexes(ctx, r)
		if err != nil {
			return err
		}
		load, err := s.newFollowLoad(ctx, r)
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
		st.Load = time.Since(start)
		clock.mark("follows")
		if err := restore(); err != nil {
			return err
		}
		st.Rebuild = time.Since(start) - st.Load
		clock.mark("indexes and triggers")
		// The set-aside triggers did not count the imported follows.
		if err := load.setCounts(fresh); err != nil {
			return err
		}
		for _, q := range s.d.afterImport {
			if _, err := r.tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		st.Recount = time.Since(start) - st.Load - st.Rebuild
		clock.mark("counts")
		return nil
	})
	clock.mark("commit")
	var ie ImportErrors
	if errors.As(err, &ie) {
		return ImportStats{}, ie
	}
	if err != nil {
		return ImportStats{}, fmt.Errorf("import: %w", err)
	}
	return st, nil
}

// noFollows reports whether the graph has no follows yet.
func noFollows(ctx context.Context, r runner) (bool, error) {
	var some int
	err := r.queryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM Follows LIMIT 1) AS f`, nil, &some)
	return some == 0, err
}

// followLoad writes an import's checked follows into the follow table
// and counts them.
type followLoad struct {
	ctx  context.Context
	r    runner
	sink rowSink
	// counts are, by user, the imported follows the count rule counts
	// for it (its followers, its following), given deactivated, the
	// users it leaves out; every user at either end of an imported
	// follow has an entry.
	counts      map[int64]*[2]int
	deactivated map[int64]bool
}

func (s *Store) newFollowLoad(ctx context.Context, r runner) (*followLoad, error) {
	l := &followLoad{ctx: ctx, r: r, counts: map[int64]*[2]int{}, deactivated: map[int64]bool{}}
	l.sink = s.rowSink(ctx, r, "Follows", []string{"FollowerId", "FolloweeId", "CreatedAt"}, func(v []any) string { return fmt.Sprintf("follow %v -> %v", v[0], v[1]) })
	rows, err := r.query(ctx, deactivatedIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		l.deactivated[id] = true
	}
	return l, rows.Err()
}

func (l *followLoad) add(f FollowRow) error {
	l.count(f.Followee, 0, f.Follower)
	l.count(f.Follower, 1, f.Followee)
	return l.sink.add(f.Pos, f.Follower, f.Followee, l.r.s.d.timeArg(f.At))
}

// count counts a follow for user in its counts[which] when the user at
// the follow's other end is active.
func (l *followLoad) count(user int64, which int, other int64) {
	c := l.counts[user]
	if c == nil {
		c = new([2]int)
		l.counts[user] = c
	}
	if !l.deactivated[other] {
		c[which]++
	}
}

// flush writes the follows still gathered.
func (l *followLoad) flush() error { return l.sink.flush() }

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
		for id, c := range l.counts {
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
	_, err := l.r.exec(l.ctx, d.recountImported, idList(slices.Collect(maps.Keys(l.counts))))
	return err
}

// existingUsers returns the ids of the users there are, and their names
// in lower case.
func existingUsers(ctx context.Context, r runner) (map[int64]bool, map[string]bool, error) {
	ids, names := map[int64]bool{}, map[string]bool{}
	rows, err := r.query(ctx, `SELECT Id, Name FROM Users`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, nil, err
		}
		ids[id], names[strings.ToLower(name)] = true, true
	}
	return ids, names, rows.Err()
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
	if s.d.freshBulk != nil {
		var empty int
		if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM Users UNION ALL SELECT 1 FROM Follows LIMIT 1) AS x`).Scan(&empty); err != nil {
			return err
		}
		if empty == 0 {
			end, err := s.d.freshBulk(ctx, conn)
			if err != nil {
				return fmt.Errorf("prepare the new database for loading: %w", err)
			}
			defer func() {
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
	return s.runTx(tx, func(r runner) error {
		r.conn = conn
		return fn(r)
	})
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
// COPY where it has it, multi-row INSERTs otherwise.
func (s *Store) rowSink(ctx context.Context, r runner, table string, cols []string, what func(vals []any) string) rowSink {
	if s.d.copyRows != nil {
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
// dialect's copyRows, on the bulk transaction's connection.
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
	err := c.r.s.d.copyRows(c.ctx, c.r.conn, c.table, c.cols, c.rows)
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

// ExportUsers yields every user, by id, with its security stamp.
func (s *Store) ExportUsers(ctx context.Context) iter.Seq2[UserRow, error] {
	return readAll(ctx, s, "read users", `SELECT Id, Name, SecurityStamp FROM Users ORDER BY Id`, func(rows *rows) (u UserRow, err error) {
		err = rows.Scan(&u.ID, &u.Name, &u.SecurityStamp)
		return u, err
	})
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

// ExportFollows yields every follow, by follower and followee.
func (s *Store) ExportFollows(ctx context.Context) iter.Seq2[FollowRow, error] {
	return readAll(ctx, s, "read follows", `SELECT FollowerId, FolloweeId, CreatedAt FROM Follows ORDER BY FollowerId, FolloweeId`, func(rows *rows) (f FollowRow, err error) {
		var raw any
		if err := rows.Scan(&f.Follower, &f.Followee, &raw); err != nil {
			return f, err
		}
		f.At, err = s.d.scanTime(raw)
		return f, err
	})
}

// readAll yields the rows of a query as scan reads them, or the error,
// wrapped with what, that ends them.
func readAll[T any](ctx context.Context, s *Store, what, query string, scan func(*rows) (T, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		rows, err := s.read().query(ctx, query)
		if err != nil {
			yield(zero, fmt.Errorf("%s: %w", what, err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				yield(zero, fmt.Errorf("%s: %w", what, err))
				return
			}
			if !yield(v, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(zero, fmt.Errorf("%s: %w", what, err))
		}
	}
}
