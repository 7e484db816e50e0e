package db

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"follows/db/sqlitebtree"
)

// The writer's CreatedAt texts are formatSQLiteTime's, from year 0 to
// 9999, each day's text kept or not.
func TestTicksTextIsFormatSQLiteTime(t *testing.T) {
	times := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999900, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 100, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	for i := range 50000 {
		times = append(times, time.Unix(minWrittenTime+int64(i)*6317629%(maxWrittenTime-minWrittenTime), int64(i)*7919%1e9))
	}
	tt := new(ticksText)
	m := &followPages{}
	for _, tm := range times {
		if why := m.add(FollowRow{At: tm}); why != "" {
			t.Fatalf("%v not held", tm)
		}
	}
	m.gather()
	for i, tm := range times {
		if got, want := string(tt.append(nil, m.rows[i].at)), formatSQLiteTime(tm); got != want {
			t.Errorf("ticks of %v written %q, want %q", tm, got, want)
		}
		if back := m.row(i).At; !back.Equal(tm.Truncate(100)) {
			t.Errorf("%v held and read back as %v", tm, back)
		}
	}
}

// followGraph is a generated graph for the page writer's tests: users
// (every seventh deactivated), follows between random pairs, none twice,
// with times over the years (some equal, so that the follower breaks
// ties), settings of each kind, and blocks between users with no follow
// between them.
type followGraph struct {
	users   []UserRow
	follows []FollowRow
	blocks  []BlockRow
}

func genFollowGraph(users, follows, blocks int, seed uint64) followGraph {
	var g followGraph
	rnd := rand.New(rand.NewPCG(seed, 1))
	for i := range users {
		u := UserRow{Pos: Pos{"users.csv", i + 2}, ID: int64(i + 1), Name: fmt.Sprintf("u%d", i+1), SecurityStamp: newStamp()}
		if i%7 == 3 {
			u.DeactivatedAt = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		g.users = append(g.users, u)
	}
	seen := map[[2]int64]bool{}
	for len(g.follows) < follows {
		a, b := rnd.Int64N(int64(users))+1, rnd.Int64N(int64(users))+1
		if a == b || seen[[2]int64{a, b}] {
			continue
		}
		seen[[2]int64{a, b}] = true
		at := time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rnd.Int64N(int64(6 * 365 * 24 * time.Hour))))
		if rnd.IntN(5) == 0 {
			at = time.Date(2024, 6, 6, 12, 0, 0, 0, time.UTC) // a time many share
		}
		g.follows = append(g.follows, FollowRow{Pos: Pos{"follows.csv", len(g.follows) + 2}, Follower: a, Followee: b, At: at,
			Muted: rnd.IntN(4) == 0, NotificationsOff: rnd.IntN(3) == 0})
	}
	for len(g.blocks) < blocks && users > 1 {
		a, b := rnd.Int64N(int64(users))+1, rnd.Int64N(int64(users))+1
		if a == b || seen[[2]int64{a, b}] || seen[[2]int64{b, a}] {
			continue
		}
		seen[[2]int64{a, b}], seen[[2]int64{b, a}] = true, true
		g.blocks = append(g.blocks, BlockRow{Pos: Pos{"blocks.csv", len(g.blocks) + 2}, Blocker: a, Blocked: b, At: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)})
	}
	return g
}

func (g followGraph) graph() Graph {
	return Graph{Users: seqOf(g.users...), Follows: seqOf(g.follows...), Blocks: seqOf(g.blocks...)}
}

// newSQLiteFile makes an empty SQLite file with the given page size (0:
// SQLite's default), which Open then migrates.
func newSQLiteFile(t *testing.T, pageSize int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "follows.db")
	if pageSize > 0 {
		raw, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		for _, q := range []string{`PRAGMA page_size = ` + strconv.Itoa(pageSize), `CREATE TABLE x (y)`, `DROP TABLE x`} {
			if _, err := raw.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	return path
}

// importPaths imports g into a new file by each path: the page writer's
// (a new file to itself), and SQLite's (the same, but with another
// connection reading, which keeps it in WAL mode: see startNewFile).
// It checks that each took its path, and returns the stores, open.
func importPaths(t *testing.T, g followGraph, pageSize int) (pages, bySQL *Store, pagesPath string) {
	t.Helper()
	ctx := context.Background()
	open := func(path string) *Store {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	pagesPath = newSQLiteFile(t, pageSize)
	pages = open(pagesPath)
	st, err := pages.ImportGraph(ctx, g.graph(), nil)
	if err != nil {
		t.Fatalf("import into a new file: %v", err)
	}
	if !tookPhase(st, "write the follow table's pages") {
		t.Fatalf("the import into a new file did not write pages: %+v", st.Phases)
	}
	sqlPath := newSQLiteFile(t, pageSize)
	bySQL = open(sqlPath)
	stop := readingFrom(t, sqlPath)
	st, err = bySQL.ImportGraph(ctx, g.graph(), nil)
	stop()
	if err != nil {
		t.Fatalf("import through SQLite: %v", err)
	}
	if !tookPhase(st, "indexes and triggers") {
		t.Fatalf("the import beside a reader wrote pages: %+v", st.Phases)
	}
	return pages, bySQL, pagesPath
}

// readingFrom keeps a read transaction open on the file at path, on a
// connection of its own, until stop: an import beside it stays in WAL
// mode, and goes through SQLite (see startNewFile).
func readingFrom(t *testing.T, path string) (stop func()) {
	t.Helper()
	ctx := context.Background()
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := other.Conn(ctx)
	if err == nil {
		_, err = conn.ExecContext(ctx, `BEGIN`)
	}
	if err == nil {
		err = conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema`).Scan(new(int))
	}
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		conn.ExecContext(ctx, `ROLLBACK`)
		conn.Close()
		other.Close()
	}
}

func tookPhase(st ImportStats, name string) bool {
	return slices.ContainsFunc(st.Phases, func(p ImportPhase) bool { return p.Name == name })
}

// dumpFollows is what SQLite reads of the follow table and each of its
// indexes (scanned through the index), values with their types, and the
// users' counts.
func dumpFollows(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT rowid, FollowerId, FolloweeId, CreatedAt, Muted, NotificationsEnabled, typeof(FollowerId), typeof(CreatedAt), typeof(Muted), typeof(NotificationsEnabled) FROM Follows ORDER BY rowid`,
		`SELECT FollowerId, FolloweeId, rowid FROM Follows INDEXED BY sqlite_autoindex_Follows_1 WHERE FollowerId > 0 ORDER BY FollowerId, FolloweeId`,
		`SELECT FolloweeId, CreatedAt, FollowerId, rowid FROM Follows INDEXED BY IX_Follows_FolloweeId_CreatedAt_FollowerId WHERE FolloweeId > 0 ORDER BY FolloweeId, CreatedAt, FollowerId`,
		`SELECT FollowerId, CreatedAt, FolloweeId, rowid FROM Follows INDEXED BY IX_Follows_FollowerId_CreatedAt_FolloweeId WHERE FollowerId > 0 ORDER BY FollowerId DESC, CreatedAt DESC, FolloweeId DESC`,
		`SELECT Id, FollowerCount, FollowingCount, DeactivatedAt FROM Users ORDER BY Id`,
		`SELECT BlockerId, BlockedId, CreatedAt FROM Blocks ORDER BY BlockerId, BlockedId`,
	} {
		rows, err := s.db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(vals...))
		}
		rows.Close()
		out = append(out, "--")
	}
	return out
}

// lists are every user's first pages of followers and following, as the
// server reads them, and the settings of every follow.
func lists(t *testing.T, s *Store, g followGraph) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for from := 0; from < len(g.users); from += MaxBatch {
		var qs []PageQuery
		for _, u := range g.users[from:min(from+MaxBatch, len(g.users))] {
			qs = append(qs, PageQuery{User: u.ID, First: 25})
		}
		for _, dir := range []Direction{Followers, Following} {
			pages, err := s.FollowPages(ctx, dir, qs, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range pages {
				line := fmt.Sprintf("%v of %d:", dir, qs[i].User)
				for _, e := range p.Edges {
					line += fmt.Sprintf(" %d@%s", e.User.ID, e.At.Format(time.RFC3339Nano))
				}
				out = append(out, line+fmt.Sprint(" next ", p.HasNext))
			}
		}
	}
	var pairs []Pair
	for _, f := range g.follows {
		pairs = append(pairs, Pair{f.Follower, f.Followee})
	}
	for from := 0; from < len(pairs); from += 500 {
		states, err := s.Follows(ctx, pairs[from:min(from+500, len(pairs))])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(states))
	}
	return out
}

// sameImport checks that the file the writer wrote is one SQLite finds
// whole (integrity_check reads every tree, checks each page's cells and
// order, and that every index holds every row), that the server reads
// the same from it as from SQLite's own import, and that the counts are
// the count rule's.
func sameImport(t *testing.T, g followGraph, pages, bySQL *Store) {
	t.Helper()
	ctx := context.Background()
	for _, s := range []*Store{pages, bySQL} {
		var ok string
		if err := s.db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
			t.Fatalf("integrity_check: %q, %v", ok, err)
		}
		if drift, err := s.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
			t.Errorf("drift after import: %+v, %v", drift, err)
		}
	}
	if a, b := dumpFollows(t, pages), dumpFollows(t, bySQL); !slices.Equal(a, b) {
		t.Errorf("the tables differ:\n%s", firstDifference(a, b))
	}
	if a, b := lists(t, pages, g), lists(t, bySQL, g); !slices.Equal(a, b) {
		t.Errorf("the lists differ:\n%s", firstDifference(a, b))
	}
	if a, b := readGraph(t, pages), readGraph(t, bySQL); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("the exports differ")
	}
}

func firstDifference(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d: written %q\nby SQLite %q", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("written %d lines, by SQLite %d", len(a), len(b))
}

// treeDepth is how many levels of pages a b-tree has, read from the file
// down its right-most children.
func treeDepth(t *testing.T, path string, root uint32) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdr [100]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		t.Fatal(err)
	}
	size := int(binary.BigEndian.Uint16(hdr[16:]))
	depth := 1
	for pg := make([]byte, size); ; depth++ {
		if _, err := f.ReadAt(pg, int64(root-1)*int64(size)); err != nil {
			t.Fatal(err)
		}
		if pg[0] != sqlitebtree.PageIndexInterior && pg[0] != sqlitebtree.PageTableInterior {
			return depth
		}
		root = binary.BigEndian.Uint32(pg[8:])
	}
}

func rootPage(t *testing.T, s *Store, name string) uint32 {
	var root uint32
	if err := s.db.QueryRow(`SELECT rootpage FROM sqlite_schema WHERE name = ?`, name).Scan(&root); err != nil {
		t.Fatal(err)
	}
	return root
}

// An import into a new file writes the follow table's pages itself, and
// the server reads from them what it reads after SQLite's own import:
// empty, one follow, every count from 2 to 60 on small pages (one leaf,
// two, a leaf's worth exactly, several, an interior level), a graph deep
// enough for three levels of interior pages in every tree, and one on
// SQLite's default pages; with deactivated users, blocks and settings.
func TestImportWritesFollowPages(t *testing.T) {
	cases := []struct {
		users, follows, blocks, pageSize int
	}{{3, 0, 0, 512}, {2, 1, 0, 512}}
	for n := 2; n <= 60; n++ {
		cases = append(cases, struct{ users, follows, blocks, pageSize int }{12, n, 2, 512})
	}
	cases = append(cases, struct{ users, follows, blocks, pageSize int }{400, 6000, 20, 512}, struct{ users, follows, blocks, pageSize int }{900, 4000, 10, 0})
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d follows on pages of %d", c.follows, c.pageSize), func(t *testing.T) {
			t.Parallel()
			if testing.Short() && c.follows > 2 && c.follows < 60 {
				t.Skip("SKIPPED under -short: the sweep of every count from 3 to 59 follows is long; it runs without -short")
			}
			g := genFollowGraph(c.users, c.follows, c.blocks, uint64(c.follows))
			pages, bySQL, path := importPaths(t, g, c.pageSize)
			sameImport(t, g, pages, bySQL)
			if c.follows == 6000 {
				// The keyset indexes, whose keys are largest, have three
				// levels of interior pages; the table and its key two.
				for name, want := range map[string]int{"Follows": 3, "sqlite_autoindex_Follows_1": 3, "IX_Follows_FolloweeId_CreatedAt_FollowerId": 4, "IX_Follows_FollowerId_CreatedAt_FolloweeId": 4} {
					if d := treeDepth(t, path, rootPage(t, pages, name)); d < want {
						t.Errorf("%s is %d levels deep, want at least %d", name, d, want)
					}
				}
			}
		})
	}
}

// A follow the writer does not write (a time after year 9999, whose text
// is longer) sends the import through SQLite from there, with the rows
// held before it; it ends as SQLite's own import does.
func TestImportOfFarTimesGoesThroughSQLite(t *testing.T) {
	g := genFollowGraph(30, 100, 3, 7)
	g.follows[60].At = time.Date(12026, 1, 2, 3, 4, 5, 600, time.UTC)
	ctx := context.Background()
	path := newSQLiteFile(t, 512)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.ImportGraph(ctx, g.graph(), nil)
	if err != nil || !tookPhase(st, "indexes and triggers") || tookPhase(st, "write the follow table's pages") {
		t.Fatalf("import with a far time: %+v, %v", st.Phases, err)
	}
	if want := "follows.csv line 62: a time outside years 0 to 9999"; !strings.Contains(st.FollowTable, want) {
		t.Errorf("import with a far time says %q, want %q", st.FollowTable, want)
	}
	g.follows[60].At = g.follows[59].At
	pages, bySQL, _ := importPaths(t, g, 512)
	if _, err := s.db.Exec(`UPDATE Follows SET CreatedAt = ? WHERE rowid = 61`, formatSQLiteTime(g.follows[60].At)); err != nil {
		t.Fatal(err)
	}
	if a, b := dumpFollows(t, s), dumpFollows(t, bySQL); !slices.Equal(a, b) {
		t.Errorf("the import that went through SQLite differs from SQLite's own:\n%s", firstDifference(a, b))
	}
	sameImport(t, g, pages, bySQL)
}

// What SQLite's constraints refuse, the writer's import refuses first,
// with the same errors, and nothing is imported: a follow given twice, a
// self-follow, a follow of no user, a follow across a block.
func TestImportIntoNewFileRefusesAsSQLiteDoes(t *testing.T) {
	ctx := context.Background()
	g := genFollowGraph(10, 30, 2, 3)
	b := g.blocks[0]
	for name, bad := range map[string]func(g *followGraph){
		"twice":   func(g *followGraph) { g.follows = append(g.follows, g.follows[5]) },
		"self":    func(g *followGraph) { g.follows[7].Followee = g.follows[7].Follower },
		"no user": func(g *followGraph) { g.follows[8].Followee = 99 },
		"across blocks": func(g *followGraph) {
			g.follows = append(g.follows, FollowRow{Follower: b.Blocked, Followee: b.Blocker})
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := genFollowGraph(10, 30, 2, 3)
			bad(&g)
			var errs []string
			for _, reader := range []bool{false, true} {
				path := newSQLiteFile(t, 0)
				s, err := Open(ctx, path)
				if err != nil {
					t.Fatal(err)
				}
				stop := func() {}
				if reader { // SQLite's import, in WAL mode
					stop = readingFrom(t, path)
				}
				_, err = s.ImportGraph(ctx, g.graph(), nil)
				stop()
				var ie ImportErrors
				if !errors.As(err, &ie) {
					t.Fatalf("import: %v", err)
				}
				errs = append(errs, err.Error())
				s.Close()
				if s, err = Open(ctx, path); err != nil {
					t.Fatalf("open after a refused import: %v", err)
				}
				defer s.Close()
				var users, follows int
				if err := s.db.QueryRow(`SELECT (SELECT COUNT(*) FROM Users), (SELECT COUNT(*) FROM Follows)`).Scan(&users, &follows); err != nil || users+follows > 0 {
					t.Errorf("%d users and %d follows after a refused import, %v", users, follows, err)
				}
			}
			if errs[0] != errs[1] {
				t.Errorf("the import into a new file says\n%s\nSQLite's\n%s", errs[0], errs[1])
			}
		})
	}
}

// An import into a database that has follows goes through SQLite.
func TestImportBesideFollowsGoesThroughSQLite(t *testing.T) {
	ctx := context.Background()
	pages, _, _ := importPaths(t, genFollowGraph(20, 60, 2, 5), 0)
	more := genFollowGraph(20, 40, 0, 6)
	for i := range more.users {
		more.users[i].ID += 100
		more.users[i].Name += "more"
	}
	for i := range more.follows {
		more.follows[i].Follower += 100
		more.follows[i].Followee += 100
	}
	st, err := pages.ImportGraph(ctx, more.graph(), nil)
	if err != nil || !tookPhase(st, "indexes and triggers") {
		t.Fatalf("import beside follows: %+v, %v", st.Phases, err)
	}
	var ok string
	if err := pages.db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q, %v", ok, err)
	}
	if drift, err := pages.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
		t.Errorf("drift: %+v, %v", drift, err)
	}
}

// A process that ends while the pages are written, or before the mark is
// cleared, leaves a file the server refuses.
func TestUnfinishedPageWriteIsRefused(t *testing.T) {
	_, err := Open(context.Background(), importCutShort(t))
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "import into this file did not finish") {
		t.Fatalf("open of a file whose import stopped: %v", err)
	}
}

// A file with planner statistics loads through SQLite, whose path drops
// the indexes' statistics with them; the writer would leave them saying
// the table is empty.
func TestImportIntoAnAnalyzedFileGoesThroughSQLite(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, newSQLiteFile(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.db.Exec(`ANALYZE; INSERT INTO sqlite_stat1 VALUES ('Follows', 'IX_Follows_FolloweeId_CreatedAt_FollowerId', '0 1 1 1')`); err != nil {
		t.Fatal(err)
	}
	st, err := s.ImportGraph(ctx, genFollowGraph(10, 30, 0, 2).graph(), nil)
	if err != nil || !tookPhase(st, "indexes and triggers") {
		t.Fatalf("import into an analyzed file: %+v, %v", st.Phases, err)
	}
	if want := "planner statistics"; !strings.Contains(st.FollowTable, want) {
		t.Errorf("import into an analyzed file says %q, want %q", st.FollowTable, want)
	}
}

// emptyFileReserved writes an empty database by hand (the file format's
// header and an empty schema page) with reserved bytes at the end of
// each page, which SQLite keeps in every page it then makes but has no
// statement to set; Open then migrates it.
func emptyFileReserved(t *testing.T, pageSize, reserved int) string {
	t.Helper()
	pg := make([]byte, pageSize)
	copy(pg, "SQLite format 3\x00")
	be := binary.BigEndian
	be.PutUint16(pg[16:], uint16(pageSize))
	pg[18], pg[19], pg[20], pg[21], pg[22], pg[23] = 1, 1, byte(reserved), 64, 32, 32
	for at, v := range map[int]uint32{24: 1, 28: 1, 44: 4, 56: 1, 92: 1, 96: 3045000} {
		be.PutUint32(pg[at:], v)
	}
	pg[100] = sqlitebtree.PageTableLeaf
	be.PutUint16(pg[105:], uint16(pageSize-reserved))
	path := filepath.Join(t.TempDir(), "follows.db")
	if err := os.WriteFile(path, pg, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The writer writes pages of 65,536 bytes, and pages with reserved bytes
// at their end (as encryption or checksum extensions leave), and the
// server reads from them what it reads after SQLite's own import.
func TestImportWritesLargeAndReservedPages(t *testing.T) {
	ctx := context.Background()
	g := genFollowGraph(300, 3000, 5, 11)
	t.Run("65536", func(t *testing.T) {
		pages, bySQL, path := importPaths(t, g, 65536)
		sameImport(t, g, pages, bySQL)
		if size := pageSizeOf(t, pages); size != 65536 {
			t.Errorf("page size %d after the import of %s", size, path)
		}
	})
	t.Run("reserved", func(t *testing.T) {
		path := emptyFileReserved(t, 1024, 40)
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		st, err := s.ImportGraph(ctx, g.graph(), nil)
		if err != nil || !tookPhase(st, "write the follow table's pages") {
			t.Fatalf("import into pages with reserved bytes: %+v, %v", st.Phases, err)
		}
		_, bySQL, _ := importPaths(t, g, 1024)
		sameImport(t, g, s, bySQL)
	})
}

func pageSizeOf(t *testing.T, s *Store) int {
	var size int
	if err := s.db.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	return size
}

// Pages that SQLite's check finds wrong (here one key of an index,
// changed after it was written) fail the import, say so, and leave the
// file marked: no opener takes it.
func TestImportChecksThePagesItWrote(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFile(t, 0)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	root := rootPage(t, s, "IX_Follows_FollowerId_CreatedAt_FolloweeId")
	testHookFollowPagesWritten = func() error { return changeFirstKey(path, root) }
	defer func() { testHookFollowPagesWritten = nil }()
	_, err = s.ImportGraph(ctx, genFollowGraph(10, 30, 0, 1).graph(), nil)
	if err == nil || !strings.Contains(err.Error(), "fail SQLite's check") || !strings.Contains(err.Error(), "unfinished import") {
		t.Fatalf("import whose pages were changed after writing: %v; want the check's refusal", err)
	}
	s.Close()
	if _, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "import into this file did not finish") {
		t.Fatalf("open after the check failed: %v", err)
	}
}

// changeFirstKey changes the last byte of the first key in the index
// leaf page root (an index small enough for one page): the key no longer
// matches its row.
func changeFirstKey(path string, root uint32) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	var hdr [100]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return err
	}
	size := int64(binary.BigEndian.Uint16(hdr[16:]))
	pg := make([]byte, size)
	if _, err := f.ReadAt(pg, int64(root-1)*size); err != nil {
		return err
	}
	if pg[0] != sqlitebtree.PageIndexLeaf {
		return fmt.Errorf("page %d is of kind %d, not an index leaf", root, pg[0])
	}
	cell := int(binary.BigEndian.Uint16(pg[8:]))
	last := cell + int(pg[cell]) // the payload's size is one byte: the record follows it
	pg[last] ^= 0x01
	_, err = f.WriteAt(pg[last:last+1], int64(root-1)*size+int64(last))
	return err
}

// importCutShort makes a file whose import stopped after writing its
// pages, before the mark was cleared.
func importCutShort(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := newSQLiteFile(t, 0)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	testHookFollowPagesWritten = func() error { return errors.New("stopped") }
	defer func() { testHookFollowPagesWritten = nil }()
	if _, err := s.ImportGraph(ctx, genFollowGraph(10, 30, 0, 1).graph(), nil); err == nil {
		t.Fatal("the import stopped after writing its pages returned no error")
	}
	return path
}

// Every opener refuses a file whose import did not finish, with the same
// words: Open (the server, migrate, import), even when its quick_check
// would run out of time before it found the mark, OpenGraph (export,
// and copy's source) and PlanAdoption (migrate -dry-run).
func TestEveryOpenerRefusesAnUnfinishedImport(t *testing.T) {
	ctx := context.Background()
	path := importCutShort(t)
	for name, open := range map[string]func() error{
		"Open": func() error {
			s, err := Open(ctx, path)
			if err == nil {
				s.Close()
			}
			return err
		},
		"Open, quick_check out of time": func() error {
			s, err := Open(ctx, path, WithIntegrityLimit(time.Nanosecond))
			if err == nil {
				s.Close()
			}
			return err
		},
		"OpenGraph": func() error {
			g, err := OpenGraph(ctx, path)
			if err == nil {
				g.Close()
			}
			return err
		},
		"PlanAdoption": func() error {
			_, err := PlanAdoption(ctx, path)
			return err
		},
	} {
		var ce *CorruptError
		if err := open(); !errors.As(err, &ce) || !strings.Contains(err.Error(), unfinishedImport) {
			t.Errorf("%s of a file whose import did not finish: %v", name, err)
		}
	}
}

// Every import into a new file says how it loaded the follow table, and
// why when not by writing its pages.
func TestImportSaysHowItLoadedTheFollowTable(t *testing.T) {
	ctx := context.Background()
	g := genFollowGraph(10, 30, 0, 4)
	for name, c := range map[string]struct {
		prepare func(t *testing.T, path string) (stop func())
		want    string
	}{
		"new file":        {nil, "writing its pages, then having SQLite check them"},
		"beside a reader": {func(t *testing.T, path string) func() { return readingFrom(t, path) }, "stays in WAL mode"},
		"auto_vacuum": {func(t *testing.T, path string) func() {
			raw, err := sql.Open("sqlite", path)
			if err == nil {
				_, err = raw.Exec(`PRAGMA auto_vacuum = FULL; CREATE TABLE x (y); DROP TABLE x`)
				raw.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			return func() {}
		}, "auto_vacuum is on"},
	} {
		t.Run(name, func(t *testing.T) {
			path := newSQLiteFile(t, 0)
			stop := func() {}
			if c.prepare != nil && name == "auto_vacuum" {
				c.prepare(t, path)
			}
			s, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if c.prepare != nil && name != "auto_vacuum" {
				stop = c.prepare(t, path)
			}
			st, err := s.ImportGraph(ctx, g.graph(), nil)
			stop()
			if err != nil || !strings.Contains(st.FollowTable, c.want) {
				t.Errorf("import into a new file (%s): follow table %q, %v; want %q", name, st.FollowTable, err, c.want)
			}
		})
	}
}
