package db

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"follows/db/sqlitebtree"
)

// followPages holds the follows of an import into a new SQLite file (no
// users and no follows before it, see startNewFile) in memory, checked,
// so that after the import's transaction commits, the Follows table and
// its three indexes are written straight into the file (sqlitebtree)
// rather than by SQLite, rows and keys sorted in Go on two cores. What
// SQLite's constraints would have caught is checked here first: the
// import's loop checks the users and self-follows as for any import;
// check finds duplicate pairs and follows across blocks. Everything is
// checked before the transaction commits, and pages are written only
// after it has: a refused import leaves the empty database.
type followPages struct {
	file  *os.File // the database file, see newFollowPages
	h     sqlitebtree.Header
	roots followRoots
	// held are the rows as add holds them, in chunks of heldChunk: grown
	// as one slice, copying it again and again was a large share of the
	// loading goroutine's CPU (docs/decisions/import-speed.md). check
	// gathers them into rows.
	held  [][]memFollow
	n     int
	rows  []memFollow
	files []string // the files rows came from, by memFollow.file
	maxID int64
	// The orders of the primary key and the follower index, as row
	// indexes (rowid-1), and the followee index's keys; made by check.
	pk, byFollower []uint32
	byFollowee     []followeeKey
}

// followeeKey is a key of the (FolloweeId, CreatedAt, FollowerId) index,
// with its row's index: its order is not the rows', so that reading the
// rows in it would miss the cache at each.
type followeeKey struct {
	owner, at, other int64
	row              uint32
}

// followRoots are the root pages of Follows' trees.
type followRoots struct{ table, pk, byFollowee, byFollower uint32 }

// memFollow is a follow held for writing: 32 bytes, 94 MB for the 2.9
// million follows of the harness's graph.
type memFollow struct {
	follower, followee int64
	at                 int64 // CreatedAt: 100 ns ticks since the Unix epoch, UTC
	line               uint32
	file               uint16
	flags              uint8
}

const (
	memMuted            = 1
	memNotificationsOff = 2
)

// maxMemFollows is how many follows an import holds in memory (32 bytes
// each and the three orders' 12, 2.2 GB); an import of more goes through
// SQLite, as into a database that has rows.
const maxMemFollows = 50_000_000

// The times the writer writes: CreatedAt between years 0 and 9999, whose
// text (formatSQLiteTime) is 27 bytes long and sorts as the times do.
var (
	minWrittenTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxWrittenTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
)

const ticksPerSecond = 10_000_000

// The Follows table and indexes the writer writes: the migrations'
// schema, which EF Core's model also makes.
var (
	followsColumns = []string{"FollowerId INTEGER", "FolloweeId INTEGER", "CreatedAt TEXT", "Muted INTEGER", "NotificationsEnabled INTEGER"}
	followsIndexes = map[string]string{
		"sqlite_autoindex_Follows_1":                 "FollowerId,FolloweeId",
		"IX_Follows_FolloweeId_CreatedAt_FollowerId": "FolloweeId,CreatedAt,FollowerId",
		"IX_Follows_FollowerId_CreatedAt_FolloweeId": "FollowerId,CreatedAt,FolloweeId",
	}
)

// newFollowPages returns where to hold an import's follows for the
// writer, or nil and why the writer will not write them: an in-memory
// database, a Follows table other than the migrations' (an adopted
// database's may differ), or a header it does not write (see
// sqlitebtree.ReadHeader); then SQLite loads them. Failing to read what
// it needs is an error, not a reason.
//
// The file is opened here, in the import's transaction, and closed by
// bulkTx (see newFile.files) only once the transaction has ended and
// the pages are written: closing a descriptor drops all of the process's
// locks on the file (POSIX), SQLite's included.
func newFollowPages(ctx context.Context, r bulkRun) (_ *followPages, whyNot string, err error) {
	m := &followPages{}
	var path string
	if err := r.queryRow(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`, nil, &path); err != nil {
		return nil, "", fmt.Errorf("read the database's file name: %w", err)
	}
	if path == "" {
		return nil, "the database is in memory", nil
	}
	if whyNot, err := m.readSchema(ctx, r.runner); whyNot != "" || err != nil {
		return nil, whyNot, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open the database file to write pages: %w", err)
	}
	r.newFile.files = append(r.newFile.files, f)
	m.h, err = sqlitebtree.ReadHeader(f)
	switch {
	case errors.Is(err, sqlitebtree.ErrUnwritable):
		return nil, err.Error(), nil
	case err != nil:
		return nil, "", fmt.Errorf("read the database file's header: %w", err)
	}
	m.file = f
	return m, "", nil
}

// readSchema reads the root pages of Follows' trees, or says how its
// table and indexes differ from the ones the writer writes.
func (m *followPages) readSchema(ctx context.Context, r runner) (whyNot string, err error) {
	const differs = "the Follows table is not the migrations' (an adopted database's may differ)"
	var cols []string
	err = scanRows(ctx, r, `SELECT name || ' ' || upper(type), hidden FROM pragma_table_xinfo('Follows') ORDER BY cid`, func(rs *rows) error {
		var col string
		var hidden int
		err := rs.Scan(&col, &hidden)
		if hidden != 0 {
			col += " hidden"
		}
		cols = append(cols, col)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("read the Follows table's columns: %w", err)
	}
	if !slices.Equal(cols, followsColumns) {
		return differs, nil
	}
	// A rowid table, and no planner statistics (which SQLite's path
	// would have dropped with the indexes, and the writer would leave
	// saying the table is empty).
	var plain int
	if err := r.queryRow(ctx, `SELECT (SELECT NOT wr FROM pragma_table_list WHERE schema = 'main' AND name = 'Follows')
  AND NOT EXISTS (SELECT 1 FROM sqlite_schema WHERE name LIKE 'sqlite_stat%')`, nil, &plain); err != nil {
		return "", fmt.Errorf("read the Follows table's kind: %w", err)
	}
	if plain != 1 {
		return "Follows is a WITHOUT ROWID table, or the file has planner statistics (ANALYZE), which written pages would leave wrong", nil
	}
	roots := map[string]int64{}
	err = scanRows(ctx, r, `SELECT name, rootpage FROM sqlite_schema WHERE tbl_name = 'Follows' AND type IN ('table', 'index')`, func(rs *rows) error {
		var name string
		var root int64
		err := rs.Scan(&name, &root)
		roots[name] = root
		return err
	})
	if err != nil {
		return "", fmt.Errorf("read the Follows trees' root pages: %w", err)
	}
	if len(roots) != len(followsIndexes)+1 || roots["Follows"] < 2 {
		return differs, nil
	}
	for name, want := range followsIndexes {
		if roots[name] < 2 {
			return differs, nil
		}
		var keys []string
		err := scanRows(ctx, r, `SELECT x.name, x.coll = 'BINARY' AND x."desc" = 0 AND NOT l.partial
FROM pragma_index_xinfo(?1) AS x, pragma_index_list('Follows') AS l
WHERE x.key AND l.name = ?1 ORDER BY x.seqno`, func(rs *rows) error {
			var col string
			var plain bool
			err := rs.Scan(&col, &plain)
			if !plain {
				col += " (collated, descending or partial)"
			}
			keys = append(keys, col)
			return err
		}, name)
		if err != nil {
			return "", fmt.Errorf("read index %s: %w", name, err)
		}
		if strings.Join(keys, ",") != want {
			return differs, nil
		}
	}
	m.roots = followRoots{uint32(roots["Follows"]), uint32(roots["sqlite_autoindex_Follows_1"]),
		uint32(roots["IX_Follows_FolloweeId_CreatedAt_FollowerId"]), uint32(roots["IX_Follows_FollowerId_CreatedAt_FolloweeId"])}
	return "", nil
}

// add holds f, or says why the writer cannot write it: too many follows,
// or a time whose text would not be 27 bytes long (years before 0 or
// after 9999), or a line number past 4 billion.
func (m *followPages) add(f FollowRow) (whyNot string) {
	sec := f.At.Unix()
	switch {
	case m.n >= maxMemFollows:
		return fmt.Sprintf("more than %d follows to hold in memory", maxMemFollows)
	case sec < minWrittenTime || sec >= maxWrittenTime:
		return fmt.Sprintf("%s: a time outside years 0 to 9999", f.Pos)
	case f.Pos.Line < 0 || f.Pos.Line > 1<<32-1:
		return fmt.Sprintf("%s: a line number past 4 billion", f.Pos)
	}
	file := len(m.files) - 1
	if file < 0 || m.files[file] != f.Pos.File {
		file = slices.Index(m.files, f.Pos.File)
		if file < 0 {
			if len(m.files) == 1<<16 {
				return "follows from more than 65,536 files"
			}
			file = len(m.files)
			m.files = append(m.files, f.Pos.File)
		}
	}
	var flags uint8
	if f.Muted {
		flags |= memMuted
	}
	if f.NotificationsOff {
		flags |= memNotificationsOff
	}
	if len(m.held) == 0 || len(m.held[len(m.held)-1]) == heldChunk {
		m.held = append(m.held, make([]memFollow, 0, heldChunk))
	}
	last := &m.held[len(m.held)-1]
	m.n++
	*last = append(*last, memFollow{f.Follower, f.Followee, sec*ticksPerSecond + int64(f.At.Nanosecond()/100), uint32(f.Pos.Line), uint16(file), flags})
	m.maxID = max(m.maxID, f.Follower, f.Followee)
	return ""
}

// len is how many rows are held (none in a nil followPages).
func (m *followPages) len() int {
	if m == nil {
		return 0
	}
	return m.n
}

const heldChunk = 1 << 16

// gather puts the held rows into one slice, rows.
func (m *followPages) gather() {
	m.rows = make([]memFollow, 0, m.n)
	for _, c := range m.held {
		m.rows = append(m.rows, c...)
	}
	m.held = nil
}

// row is row i as the import took it.
func (m *followPages) row(i int) FollowRow {
	var r *memFollow
	if m.held != nil {
		r = &m.held[i/heldChunk][i%heldChunk]
	} else {
		r = &m.rows[i]
	}
	return FollowRow{
		Pos:      Pos{File: m.files[r.file], Line: int(r.line)},
		Follower: r.follower, Followee: r.followee,
		At:               time.Unix(floorDiv(r.at, ticksPerSecond), (r.at-floorDiv(r.at, ticksPerSecond)*ticksPerSecond)*100).UTC(),
		Muted:            r.flags&memMuted != 0,
		NotificationsOff: r.flags&memNotificationsOff != 0,
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// check gathers the rows and sorts them into the orders of the primary
// key and the two keyset indexes, side by side, and refuses the import, as SQLite would
// have, when a pair of users has two follows (naming the later row, as
// findDuplicate does), or when a block stands between users with a follow
// between them (as refuseFollowsAcrossBlocks does).
func (m *followPages) check(blocks map[pair]Pos) error {
	m.gather()
	var wg sync.WaitGroup
	wg.Go(func() {
		m.pk = m.order(func(f *memFollow) int64 { return f.follower }, func(a, b *memFollow) int { return cmp.Compare(a.followee, b.followee) })
	})
	wg.Go(func() { m.byFollowee = m.followeeKeys() })
	wg.Go(func() {
		m.byFollower = m.order(func(f *memFollow) int64 { return f.follower }, func(a, b *memFollow) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.followee, b.followee))
		})
	})
	wg.Wait()
	dup := -1
	for j := 1; j < len(m.pk); j++ {
		a, b := &m.rows[m.pk[j-1]], &m.rows[m.pk[j]]
		if a.follower == b.follower && a.followee == b.followee && (dup < 0 || int(m.pk[j]) < dup) {
			dup = int(m.pk[j])
		}
	}
	if dup >= 0 {
		f := m.row(dup)
		return followThere(f)
	}
	var bad ImportErrors
	for _, p := range slices.SortedFunc(maps.Keys(blocks), func(a, b pair) int { return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to)) }) {
		if len(bad) < maxImportErrors && (m.has(p.from, p.to) || m.has(p.to, p.from)) {
			bad = append(bad, followAcrossBlock(blocks[p], p))
		}
	}
	if len(bad) > 0 {
		return bad
	}
	return nil
}

// has says whether a held follow goes from follower to followee.
func (m *followPages) has(follower, followee int64) bool {
	j := sort.Search(len(m.pk), func(j int) bool {
		f := &m.rows[m.pk[j]]
		return f.follower > follower || f.follower == follower && f.followee >= followee
	})
	return j < len(m.pk) && m.rows[m.pk[j]].follower == follower && m.rows[m.pk[j]].followee == followee
}

// followeeKeys returns the keys of the (FolloweeId, CreatedAt,
// FollowerId) index in order: by followee (see order), and each
// followee's by time, follower and row.
func (m *followPages) followeeKeys() []followeeKey {
	perm := m.order(func(f *memFollow) int64 { return f.followee }, nil)
	keys := make([]followeeKey, len(perm))
	for j, i := range perm {
		r := &m.rows[i]
		keys[j] = followeeKey{r.followee, r.at, r.follower, i}
	}
	for s := 0; s < len(keys); {
		e := s + 1
		for e < len(keys) && keys[e].owner == keys[s].owner {
			e++
		}
		if e-s > 1 {
			slices.SortFunc(keys[s:e], func(a, b followeeKey) int {
				return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.other, b.other), cmp.Compare(a.row, b.row))
			})
		}
		s = e
	}
	return keys
}

// order returns the rows' indexes sorted by group, then by within, then
// by index. Grouping is a counting sort where the ids are dense enough
// (users' ids mostly are); each group is then sorted apart, most of them
// a few dozen rows (when within is not nil).
func (m *followPages) order(group func(*memFollow) int64, within func(a, b *memFollow) int) []uint32 {
	rows := m.rows
	perm := make([]uint32, len(rows))
	if m.maxID <= 4*int64(len(rows))+1<<20 {
		at := make([]uint32, m.maxID+2)
		for i := range rows {
			at[group(&rows[i])+1]++
		}
		for g := 1; g < len(at); g++ {
			at[g] += at[g-1]
		}
		for i := range rows {
			g := group(&rows[i])
			perm[at[g]] = uint32(i)
			at[g]++
		}
	} else {
		for i := range perm {
			perm[i] = uint32(i)
		}
		slices.SortStableFunc(perm, func(a, b uint32) int { return cmp.Compare(group(&rows[a]), group(&rows[b])) })
	}
	for s := 0; s < len(perm) && within != nil; {
		g, e := group(&rows[perm[s]]), s+1
		for e < len(perm) && group(&rows[perm[e]]) == g {
			e++
		}
		if e-s > 1 {
			slices.SortFunc(perm[s:e], func(a, b uint32) int { return cmp.Or(within(&rows[a], &rows[b]), cmp.Compare(a, b)) })
		}
		s = e
	}
	return perm
}

// trees are Follows' four b-trees over the held rows, the slowest first
// (see sqlitebtree.Write): the (FolloweeId, CreatedAt, FollowerId)
// index, the table (rowids in the order the rows came, as SQLite's
// inserts give them), its primary key, and the (FollowerId, CreatedAt,
// FolloweeId) index.
func (m *followPages) trees() []sqlitebtree.Tree {
	return []sqlitebtree.Tree{
		{Root: m.roots.byFollowee, Entries: &followeeIndex{m: m, tt: new(ticksText)}},
		{Root: m.roots.table, Table: true, Entries: &followsTable{m: m, tt: new(ticksText)}},
		{Root: m.roots.pk, Entries: pkIndex{m}},
		{Root: m.roots.byFollower, Entries: &followerIndex{m: m, tt: new(ticksText)}},
	}
}

// followsTable is the table's rows: FollowerId, FolloweeId, CreatedAt,
// Muted, NotificationsEnabled.
type followsTable struct {
	m    *followPages
	tt   *ticksText
	text []byte
}

func (t *followsTable) Len() int { return len(t.m.rows) }

func (t *followsTable) RecordLen(i int) int {
	r := &t.m.rows[i]
	return sqlitebtree.ShortRecordLen(t.m.h.Format4, len(sqliteTime), r.follower, r.followee, r.muted(), r.notifications())
}

func (t *followsTable) AppendRecord(dst []byte, i int) []byte {
	r := &t.m.rows[i]
	t.text = t.tt.append(t.text[:0], r.at)
	return sqlitebtree.AppendShortRecord(dst, t.m.h.Format4, 2, t.text, r.follower, r.followee, r.muted(), r.notifications())
}

func (r *memFollow) muted() int64         { return int64(r.flags & memMuted) }
func (r *memFollow) notifications() int64 { return int64(1 - (r.flags&memNotificationsOff)>>1) }

// pkIndex is the primary key's keys: FollowerId, FolloweeId, rowid.
type pkIndex struct{ m *followPages }

func (x pkIndex) Len() int { return len(x.m.pk) }

func (x pkIndex) RecordLen(j int) int {
	i := x.m.pk[j]
	return sqlitebtree.ShortRecordLen(x.m.h.Format4, -1, x.m.rows[i].follower, x.m.rows[i].followee, int64(i)+1)
}

func (x pkIndex) AppendRecord(dst []byte, j int) []byte {
	i := x.m.pk[j]
	return sqlitebtree.AppendShortRecord(dst, x.m.h.Format4, -1, nil, x.m.rows[i].follower, x.m.rows[i].followee, int64(i)+1)
}

// followeeIndex is the keys of (FolloweeId, CreatedAt, FollowerId), rowid.
type followeeIndex struct {
	m    *followPages
	tt   *ticksText
	text []byte
}

func (x *followeeIndex) Len() int { return len(x.m.byFollowee) }

func (x *followeeIndex) RecordLen(j int) int {
	k := &x.m.byFollowee[j]
	return sqlitebtree.ShortRecordLen(x.m.h.Format4, len(sqliteTime), k.owner, k.other, int64(k.row)+1)
}

func (x *followeeIndex) AppendRecord(dst []byte, j int) []byte {
	k := &x.m.byFollowee[j]
	x.text = x.tt.append(x.text[:0], k.at)
	return sqlitebtree.AppendShortRecord(dst, x.m.h.Format4, 1, x.text, k.owner, k.other, int64(k.row)+1)
}

// followerIndex is the keys of (FollowerId, CreatedAt, FolloweeId), rowid.
type followerIndex struct {
	m    *followPages
	tt   *ticksText
	text []byte
}

func (x *followerIndex) Len() int { return len(x.m.byFollower) }

func (x *followerIndex) RecordLen(j int) int {
	r := &x.m.rows[x.m.byFollower[j]]
	return sqlitebtree.ShortRecordLen(x.m.h.Format4, len(sqliteTime), r.follower, r.followee, int64(x.m.byFollower[j])+1)
}

func (x *followerIndex) AppendRecord(dst []byte, j int) []byte {
	i := x.m.byFollower[j]
	r := &x.m.rows[i]
	x.text = x.tt.append(x.text[:0], r.at)
	return sqlitebtree.AppendShortRecord(dst, x.m.h.Format4, 1, x.text, r.follower, r.followee, int64(i)+1)
}

// ticksText writes CreatedAt texts, as formatSQLiteTime does, from 100
// ns ticks after the Unix epoch (years 0 to 9999), without the time
// package's calendar: an import writes millions of them, a noticeable
// part of the load's CPU by the calendar and even digit by digit
// (docs/decisions/import-speed.md). The texts of the last days written
// are kept (a graph's follows span a few thousand days), and the time of
// day is written two digits at a time.
type ticksText struct {
	days [4096]struct {
		day  int64
		text [11]byte // "YYYY-MM-DD "
	}
	ready [4096]bool
}

// digits2 are the numbers 00 to 99 written out.
const digits2 = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

func (t *ticksText) append(dst []byte, ticks int64) []byte {
	const perDay = 86400 * ticksPerSecond
	day := floorDiv(ticks, perDay)
	rest := ticks - day*perDay
	slot := day & 4095
	d := &t.days[slot]
	if !t.ready[slot] || d.day != day {
		d.day, d.text = day, civilDate(day)
		t.ready[slot] = true
	}
	dst = append(dst, d.text[:]...)
	secs, frac := rest/ticksPerSecond, rest%ticksPerSecond
	two := func(v int64) { dst = append(dst, digits2[2*v], digits2[2*v+1]) }
	two(secs / 3600)
	dst = append(dst, ':')
	two(secs / 60 % 60)
	dst = append(dst, ':')
	two(secs % 60)
	dst = append(dst, '.', byte('0'+frac/1000000))
	frac %= 1000000
	two(frac / 10000)
	two(frac / 100 % 100)
	two(frac % 100)
	return dst
}

// civilDate writes the date of a day counted from the Unix epoch (Howard
// Hinnant's days-to-civil algorithm, from 0000-03-01), and a space.
func civilDate(days int64) [11]byte {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	mo := mp + 3
	if mp >= 10 {
		mo = mp - 9
		y++
	}
	var b [11]byte
	copy(b[0:], digits2[2*(y/100):2*(y/100)+2])
	copy(b[2:], digits2[2*(y%100):2*(y%100)+2])
	b[4] = '-'
	copy(b[5:], digits2[2*mo:2*mo+2])
	b[7] = '-'
	copy(b[8:], digits2[2*d:2*d+2])
	b[10] = ' '
	return b
}

// testHookFollowPagesWritten, when set by a test, runs after the pages
// are written and before they are checked and the mark is cleared; an
// error from it stops the import there, as a process ended at that point
// would.
var testHookFollowPagesWritten func() error

// write writes the held follows' trees into the file, after the import's
// transaction committed, on conn, the import's connection, which holds
// SQLite's exclusive lock on the file meanwhile: no other connection,
// in this process or another, reads pages half written. The file is in
// a rollback-journal mode (startNewFile left WAL mode; the header
// says so, see sqlitebtree.ReadHeader), so SQLite's connections see the
// change counter move and drop the pages they held. Then SQLite checks
// what was written (checkFollowTrees); all of it happens before the
// file's "import unfinished" mark is cleared, so a file whose pages are
// wrong, or were never all written, stays refused.
func (m *followPages) write(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		return fmt.Errorf("lock the file to write the follow table's pages: %w", err)
	}
	err := m.writeTrees(m.file)
	if err != nil {
		err = fmt.Errorf("write the follow table's pages: %w", err)
	}
	if err == nil && testHookFollowPagesWritten != nil {
		err = testHookFollowPagesWritten()
	}
	// Nothing changed through SQLite: COMMIT only lets go of the lock.
	if _, cerr := conn.ExecContext(context.Background(), `COMMIT`); cerr != nil {
		err = errors.Join(err, fmt.Errorf("unlock the file after writing pages: %w", cerr))
	}
	return err
}

// checkFollowTrees has SQLite check the follow table's trees, as
// written, against each other. PRAGMA quick_check restricted to Follows
// reads every page of the table and its three indexes and checks each
// page's cells and each tree's order; then each tree is read whole (the
// indexes through INDEXED BY) into a count and checksums of its entries,
// which must be the table's: every row's rowid, ids and time (its digits
// and length) in every index. This is SQLite's integrity_check in two
// linear passes rather than a lookup per row and index, which cost
// several times the writer's own time (the figures:
// docs/decisions/sqlite-page-writer.md). The start-up check cannot stand
// in for it: quick_check stops at a time limit, and never compares an
// index with its table.
func checkFollowTrees(ctx context.Context, conn *sql.Conn) error {
	fail := func(what string) error {
		return fmt.Errorf("the follow table's pages as written fail SQLite's check, so the file stays marked as an unfinished import (delete it and import again; please report this): %s", what)
	}
	rows, err := conn.QueryContext(ctx, `PRAGMA quick_check(Follows)`)
	if err != nil {
		return fmt.Errorf("check the follow table's pages: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() && len(problems) < 10 {
		var p string
		if err := rows.Scan(&p); err != nil {
			return fmt.Errorf("check the follow table's pages: %w", err)
		}
		problems = append(problems, p)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check the follow table's pages: %w", err)
	}
	rows.Close()
	if len(problems) != 1 || problems[0] != "ok" {
		return fail("quick_check: " + strings.Join(problems, "; "))
	}
	var want [3]int64
	for i, tree := range []string{"NOT INDEXED", "INDEXED BY sqlite_autoindex_Follows_1", "INDEXED BY IX_Follows_FolloweeId_CreatedAt_FollowerId", "INDEXED BY IX_Follows_FollowerId_CreatedAt_FolloweeId"} {
		sums := followTreeSums
		if i == 1 { // the primary key holds no time
			sums = followKeySums
		}
		var got [3]int64
		if err := conn.QueryRowContext(ctx, `SELECT `+sums+` FROM Follows `+tree).Scan(&got[0], &got[1], &got[2]); err != nil {
			return fmt.Errorf("check the follow table's pages: read Follows %s: %w", tree, err)
		}
		switch {
		case i == 0:
			want = got
		case got[0] != want[0] || got[1] != want[1] || (i > 1 && got[2] != want[2]):
			return fail(fmt.Sprintf("Follows %s has %d entries (checksums %d, %d), the table %d (%d, %d)", tree, got[0], got[1], got[2], want[0], want[1], want[2]))
		}
	}
	return nil
}

// followKeySums and followTreeSums are a tree's entry count and
// checksums of its rows' ids and times: each row's term times its rowid
// (so that values moved between rows show), modulo a prime that keeps
// every product inside 64 bits and the sums of 50 million rows exact.
const (
	followIDsTerm  = `(((FollowerId % 2147483647) * 1000003 + FolloweeId % 2147483647 + 1) % 2147483647)`
	followTimeTerm = `((CAST(substr(CreatedAt, 1, 4) || substr(CreatedAt, 6, 2) || substr(CreatedAt, 9, 2) || substr(CreatedAt, 12, 2) || substr(CreatedAt, 15, 2) || substr(CreatedAt, 18, 2) AS INTEGER) % 2147483647 * 1000003 + CAST(substr(CreatedAt, 21) AS INTEGER) + length(CreatedAt)) % 2147483647)`
	followKeySums  = `count(*), coalesce(sum(rowid % 2147483647 * ` + followIDsTerm + ` % 2147483647), 0), 0`
	followTreeSums = `count(*), coalesce(sum(rowid % 2147483647 * ` + followIDsTerm + ` % 2147483647), 0), coalesce(sum(rowid % 2147483647 * ` + followTimeTerm + ` % 2147483647), 0)`
)

func (m *followPages) writeTrees(f *os.File) error {
	h, err := sqlitebtree.ReadHeader(f)
	if err != nil {
		return err
	}
	if h.PageSize != m.h.PageSize || h.Usable != m.h.Usable || h.Format4 != m.h.Format4 {
		return errors.New("the file's header changed during the import")
	}
	if fi, err := f.Stat(); err != nil || fi.Size() < int64(h.Pages)*int64(h.PageSize) {
		return fmt.Errorf("the file is shorter than its header says (%v)", err)
	}
	return sqlitebtree.Write(f, h, m.trees())
}

// followAcrossBlock is the refusal of a block, imported from pos, that
// stands between users who follow each other.
func followAcrossBlock(pos Pos, p pair) *RowError {
	return &RowError{pos, fmt.Sprintf("block %d -> %d stands between users with a follow between them (a block removes their follows)", p.from, p.to)}
}
