package db

// sqlitefile.go writes b-trees in SQLite's file format
// (https://www.sqlite.org/fileformat2.html), for the import into a new
// file (see followPages). Feeding 2.9 million follows to SQLite cost
// 19 s on this project's 2-core machine, nearly all of it SQLite's own
// single-threaded work: the table and primary key appends about 3.5 s of
// CPU, sorting the (FolloweeId, CreatedAt, FollowerId) index about 6 s.
// Sorted and written here, side by side, the four trees of Follows take
// about 2.5 s of CPU, 2 to 3 s on two cores (docs/decisions/import-speed.md).
//
// Only what an import into an empty table needs is here: each tree is
// built whole, bottom up, its pages full, appended at the end of the
// file, and its top page written into the root page the schema names.
// Nothing is read back; SQLite's PRAGMA integrity_check is what checks
// the result (see the tests).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// sqliteHeader is what the writer needs of a database file's header.
type sqliteHeader struct {
	pageSize int
	usable   int    // page size less the reserved bytes at each page's end
	pages    uint32 // database size in pages
	counter  uint32 // file change counter
	format4  bool   // schema format 4: integers 0 and 1 take no bytes
}

// lockPage is the page holding byte 1,073,741,824 (SQLite's
// PENDING_BYTE), which SQLite never uses: the writer skips it.
func (h sqliteHeader) lockPage() uint32 { return uint32(0x40000000/h.pageSize) + 1 }

// readSQLiteHeader reads and checks f's header: a file the writer can
// append to is UTF-8, without auto-vacuum (whose pointer map pages the
// writer does not keep) and in a rollback-journal mode (file format
// versions 1: in WAL mode, readers would take pages from the log).
func readSQLiteHeader(f io.ReaderAt) (sqliteHeader, error) {
	var b [100]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		return sqliteHeader{}, fmt.Errorf("read the header: %w", err)
	}
	var h sqliteHeader
	be := binary.BigEndian
	h.pageSize = int(be.Uint16(b[16:]))
	if h.pageSize == 1 {
		h.pageSize = 65536
	}
	h.usable = h.pageSize - int(b[20])
	h.counter = be.Uint32(b[24:])
	h.pages = be.Uint32(b[28:])
	format := be.Uint32(b[44:])
	h.format4 = format >= 4
	switch {
	case !bytes.Equal(b[:16], []byte("SQLite format 3\x00")):
		return h, errors.New("not a SQLite database")
	case h.pageSize < 512 || h.pageSize&(h.pageSize-1) != 0 || h.usable < 480:
		return h, fmt.Errorf("page size %d, usable %d", h.pageSize, h.usable)
	case b[18] != 1 || b[19] != 1:
		return h, fmt.Errorf("file format versions %d, %d: not in a rollback-journal mode", b[18], b[19])
	case be.Uint32(b[52:]) != 0:
		return h, errors.New("auto_vacuum is on")
	case be.Uint32(b[56:]) != 1:
		return h, errors.New("the text encoding is not UTF-8")
	case format < 1 || format > 4:
		return h, fmt.Errorf("schema format %d", format)
	case h.pages == 0 || h.counter != be.Uint32(b[92:]):
		return h, errors.New("the header's database size is not valid")
	}
	return h, nil
}

// btree is a b-tree to write: an index's keys or a table's rows, in
// order, and the page its root is to be written into.
type btree struct {
	root uint32
	// table is a rowid table's tree, whose entries are rows; otherwise
	// an index's, whose entries are keys.
	table bool
	n     int
	// recordLen is entry i's record's size; record appends it to dst.
	recordLen func(i int) int
	record    func(dst []byte, i int) []byte
	// rowid is a table row's rowid (tables only).
	rowid func(i int) int64
}

// The kinds of b-tree page, the first byte of each.
const (
	pageIndexInterior = 0x02
	pageTableInterior = 0x05
	pageIndexLeaf     = 0x0a
	pageTableLeaf     = 0x0d
)

// treeLevel is one level of a planned tree, leaves first. Its cells are
// the entries (leaves) or cells (child, entry) (interior levels); page k
// holds cells [start(k), ends[k]). Where a level promotes, the cell after
// each page but the last goes up a level rather than into a page: an
// index keeps each key once, a key between two pages sits in their
// parent; and in an interior page of either kind, the promoted cell's
// child is the page's right-most child.
type treeLevel struct {
	ends    []int
	promote bool
	cells   []treeCell // interior levels
	final   int        // interior levels: the right-most child of the last page
	first   int        // the tree's index of the level's first page
}

// treeCell is an interior cell: its left child, by the tree's index of
// the page, and the entry whose key it holds (an index's key, a table's
// rowid).
type treeCell struct {
	child int
	entry int
}

func (l *treeLevel) start(k int) int {
	if k == 0 {
		return 0
	}
	if l.promote {
		return l.ends[k-1] + 1
	}
	return l.ends[k-1]
}

// pack splits n cells of the given sizes (each with its 2-byte pointer)
// into pages of room bytes, each as full as it goes; with promote, the
// cell after each page but the last is left out (see treeLevel). No page
// is empty: a last page that would be takes the page before's last cell
// (pages hold at least three cells, see plan).
func pack(n int, size func(int) int, room int, promote bool) []int {
	var ends []int
	i := 0
	for {
		used, start := 0, i
		for i < n {
			s := size(i)
			if used+s > room {
				break
			}
			used += s
			i++
		}
		ends = append(ends, i)
		if i >= n || i == start { // the end, or a cell too large for a page
			return ends
		}
		if promote {
			i++
			if i == n {
				ends[len(ends)-1]--
				return append(ends, n)
			}
		}
	}
}

// varintLen is the length of v as a SQLite varint.
func varintLen(v uint64) int {
	if v > 0x00ffffffffffffff {
		return 9
	}
	n := 1
	for v > 0x7f {
		v >>= 7
		n++
	}
	return n
}

// appendVarint appends v as a SQLite varint: big-endian 7-bit groups, the
// high bit set on all but the last; a ninth byte carries 8 bits.
func appendVarint(dst []byte, v uint64) []byte {
	if v <= 0x7f {
		return append(dst, byte(v))
	}
	var b [9]byte
	if v > 0x00ffffffffffffff {
		b[8] = byte(v)
		v >>= 8
		for i := 7; i >= 0; i-- {
			b[i] = byte(v&0x7f) | 0x80
			v >>= 7
		}
		return append(dst, b[:]...)
	}
	n := varintLen(v)
	for i := n - 1; i >= 0; i-- {
		b[i] = byte(v&0x7f) | 0x80
		v >>= 7
	}
	b[n-1] &^= 0x80
	return append(dst, b[:n]...)
}

// intSerial is an integer's serial type in a record, and its content's
// size, as SQLite chooses them: the smallest that holds it, and from
// schema format 4, 0 and 1 in no bytes (types 8 and 9).
func intSerial(v int64, format4 bool) (byte, int) {
	u := uint64(v)
	if v < 0 {
		u = ^u
	}
	switch {
	case u <= 127:
		if format4 && (v == 0 || v == 1) {
			return 8 + byte(v), 0
		}
		return 1, 1
	case u <= 32767:
		return 2, 2
	case u <= 8388607:
		return 3, 3
	case u <= 2147483647:
		return 4, 4
	case u <= 0x7fffffffffff:
		return 5, 6
	}
	return 6, 8
}

// A short record is a record of at most 7 integer columns and at most
// one TEXT (at column textAt, -1 for none) of at most 57 bytes
// (CreatedAt's are 27): every serial type (TEXT's is 2n+13), and the
// header's size, is one byte, which is what makes these two quick. Each
// follow's record is one.
func shortRecordLen(format4 bool, textLen int, ints ...int64) int {
	n := 1 + len(ints)
	if textLen >= 0 {
		n += 1 + textLen
	}
	for _, v := range ints {
		_, size := intSerial(v, format4)
		n += size
	}
	return n
}

func appendShortRecord(dst []byte, format4 bool, textAt int, text []byte, ints ...int64) []byte {
	cols := len(ints)
	if textAt >= 0 {
		cols++
	}
	dst = append(dst, byte(1+cols))
	var sizes [8]int
	for c, k := 0, 0; c < cols; c++ {
		if c == textAt {
			dst = append(dst, byte(2*len(text)+13))
			continue
		}
		t, n := intSerial(ints[k], format4)
		dst = append(dst, t)
		sizes[k] = n
		k++
	}
	for c, k := 0, 0; c < cols; c++ {
		if c == textAt {
			dst = append(dst, text...)
			continue
		}
		switch v := ints[k]; sizes[k] {
		case 1:
			dst = append(dst, byte(v))
		case 2:
			dst = append(dst, byte(v>>8), byte(v))
		case 3:
			dst = append(dst, byte(v>>16), byte(v>>8), byte(v))
		case 4:
			dst = binary.BigEndian.AppendUint32(dst, uint32(v))
		case 6:
			dst = append(dst, byte(v>>40), byte(v>>32))
			dst = binary.BigEndian.AppendUint32(dst, uint32(v))
		case 8:
			dst = binary.BigEndian.AppendUint64(dst, uint64(v))
		}
		k++
	}
	return dst
}

// treePlan is a tree's levels and its page count (its root apart).
type treePlan struct {
	t      *btree
	levels []treeLevel
	pages  int
}

// maxLocal is the largest payload a cell keeps on its page; a larger one
// would spill into overflow pages, which the writer does not make.
func (h sqliteHeader) maxLocal(table bool) int {
	if table {
		return h.usable - 35
	}
	return (h.usable-12)*64/255 - 23
}

// plan lays out t's levels from the sizes of its cells alone, so that its
// page count is known before any page is written.
func (h sqliteHeader) plan(t *btree) (*treePlan, error) {
	p := &treePlan{t: t}
	leafCell := func(i int) int { // with its pointer
		n := t.recordLen(i)
		if t.table {
			return varintLen(uint64(n)) + varintLen(uint64(t.rowid(i))) + n + 2
		}
		return varintLen(uint64(n)) + n + 2
	}
	innerCell := func(c treeCell) int {
		if t.table {
			return 4 + varintLen(uint64(t.rowid(c.entry))) + 2
		}
		n := t.recordLen(c.entry)
		return 4 + varintLen(uint64(n)) + n + 2
	}
	// Every cell must fit a page whole (no overflow pages), and three to
	// a page, interior ones too (4 bytes more), so that no page of pack's
	// is empty.
	maxCell := min(h.maxLocal(t.table), (h.usable-12)/3-4)
	big := -1
	leaf := func(i int) int {
		n := leafCell(i)
		if n > maxCell {
			big = i
		}
		return n
	}
	lv := treeLevel{ends: pack(t.n, leaf, h.usable-8, !t.table), promote: !t.table}
	if big >= 0 {
		return nil, fmt.Errorf("entry %d of tree %d is %d bytes: too large for pages of %d", big, t.root, t.recordLen(big), h.usable)
	}
	for {
		if len(lv.ends) == 1 {
			p.levels = append(p.levels, lv)
			return p, nil // the root
		}
		lv.first = p.pages
		p.pages += len(lv.ends)
		p.levels = append(p.levels, lv)
		// The level above: a cell for each page but the last, which is
		// the right-most child.
		var cells []treeCell
		for k := range len(lv.ends) - 1 {
			c := treeCell{child: lv.first + k}
			switch {
			case lv.cells == nil && t.table:
				c.entry = lv.ends[k] - 1 // the leaf's highest rowid
			case lv.cells == nil:
				c.entry = lv.ends[k] // the promoted key
			default:
				c.entry = lv.cells[lv.ends[k]].entry // the promoted cell's key
			}
			cells = append(cells, c)
		}
		up := treeLevel{cells: cells, final: lv.first + len(lv.ends) - 1, promote: true}
		up.ends = pack(len(cells), func(i int) int { return innerCell(cells[i]) }, h.usable-12, true)
		lv = up
	}
}

// pageWriter writes a tree's pages, which are the pages numbered from
// first+base on (the lock page skipped), in runs of consecutive pages.
type pageWriter struct {
	f     io.WriterAt
	h     sqliteHeader
	first uint32 // the file's first new page
	base  int    // the tree's first slot among the new pages
	buf   []byte
	at    uint32 // the page buf's first page is
	cells []byte
	ptrs  []int
}

// pageNo is the page number of a new page, by its slot.
func (w *pageWriter) pageNo(slot int) uint32 {
	p := w.first + uint32(slot)
	if lock := w.h.lockPage(); w.first <= lock && p >= lock {
		p++
	}
	return p
}

func (w *pageWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.f.WriteAt(w.buf, int64(w.at-1)*int64(w.h.pageSize))
	w.buf = w.buf[:0]
	return err
}

// put writes a page made of w.cells (at the offsets w.ptrs) as page pgno.
func (w *pageWriter) put(pgno uint32, kind byte, right uint32) error {
	if len(w.buf) > 0 && (pgno != w.at+uint32(len(w.buf)/w.h.pageSize) || len(w.buf) >= 1<<20) {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if len(w.buf) == 0 {
		w.at = pgno
	}
	off := len(w.buf)
	w.buf = append(w.buf, make([]byte, w.h.pageSize)...)
	pg := w.buf[off : off+w.h.pageSize]
	hdr := 8
	if kind == pageIndexInterior || kind == pageTableInterior {
		hdr = 12
		binary.BigEndian.PutUint32(pg[8:], right)
	}
	content := w.h.usable - len(w.cells)
	pg[0] = kind
	binary.BigEndian.PutUint16(pg[3:], uint16(len(w.ptrs)))
	binary.BigEndian.PutUint16(pg[5:], uint16(content)) // 65536 is written 0, as the format says
	for i, p := range w.ptrs {
		binary.BigEndian.PutUint16(pg[hdr+2*i:], uint16(content+p))
	}
	copy(pg[content:], w.cells)
	w.cells, w.ptrs = w.cells[:0], w.ptrs[:0]
	return nil
}

// write writes a planned tree: its pages from slot w.base on, its top page
// into its root page.
func (w *pageWriter) write(p *treePlan) error {
	t := p.t
	pageOf := func(level, k int) uint32 {
		if level == len(p.levels)-1 {
			return t.root
		}
		return w.pageNo(w.base + p.levels[level].first + k)
	}
	var rec []byte
	for li := range p.levels {
		lv := &p.levels[li]
		for k := range lv.ends {
			for c := lv.start(k); c < lv.ends[k]; c++ {
				w.ptrs = append(w.ptrs, len(w.cells))
				e := c
				if lv.cells != nil {
					cell := lv.cells[c]
					w.cells = binary.BigEndian.AppendUint32(w.cells, w.pageNo(w.base+cell.child))
					e = cell.entry
				}
				if t.table && lv.cells != nil {
					w.cells = appendVarint(w.cells, uint64(t.rowid(e)))
					continue
				}
				// A leaf's cell, or an index's interior cell after its child:
				// the payload's size, a table row's rowid, the record.
				rec = t.record(rec[:0], e)
				w.cells = appendVarint(w.cells, uint64(len(rec)))
				if t.table {
					w.cells = appendVarint(w.cells, uint64(t.rowid(e)))
				}
				w.cells = append(w.cells, rec...)
			}
			kind, right := byte(pageIndexLeaf), uint32(0)
			switch {
			case lv.cells != nil && k == len(lv.ends)-1:
				right = w.pageNo(w.base + lv.final)
			case lv.cells != nil:
				right = w.pageNo(w.base + lv.cells[lv.ends[k]].child)
			}
			switch {
			case lv.cells != nil && t.table:
				kind = pageTableInterior
			case lv.cells != nil:
				kind = pageIndexInterior
			case t.table:
				kind = pageTableLeaf
			}
			if err := w.put(pageOf(li, k), kind, right); err != nil {
				return err
			}
		}
	}
	return w.flush()
}

// writeSQLiteTrees writes trees into the database file f, whose header is
// h, each into its own root page (an empty tree's, which the writer
// overwrites) and new pages appended to the file; then the header's page
// count and change counter, which makes SQLite's connections drop the
// pages they hold; then syncs the file. The trees are built side by
// side, one goroutine each. The caller holds SQLite's exclusive lock on
// the file, in a rollback-journal mode (see readSQLiteHeader).
func writeSQLiteTrees(f *os.File, h sqliteHeader, trees []*btree) error {
	// Each tree's pages follow the earlier trees': a tree is planned, then
	// written as soon as the trees before it are planned. The first, which
	// the caller makes the slowest, waits for none.
	first := h.pages + 1
	bases := make([]chan int, len(trees)+1)
	for i := range bases {
		bases[i] = make(chan int, 1)
	}
	bases[0] <- 0
	errs := make([]error, len(trees))
	var wg sync.WaitGroup
	for i, t := range trees {
		wg.Go(func() {
			p, err := h.plan(t)
			base := <-bases[i]
			if err != nil {
				bases[i+1] <- base
				errs[i] = err
				return
			}
			bases[i+1] <- base + p.pages
			errs[i] = (&pageWriter{f: f, h: h, first: first, base: base}).write(p)
		})
	}
	wg.Wait()
	slots := <-bases[len(trees)]
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The header last: the new size, and the change counter with the
	// version-valid-for number that says the size is current.
	pages := h.pages
	if slots > 0 {
		pages = (&pageWriter{h: h, first: first}).pageNo(slots - 1)
	}
	var b [4]byte
	for _, field := range []struct {
		at int64
		v  uint32
	}{{28, pages}, {24, h.counter + 1}, {92, h.counter + 1}} {
		binary.BigEndian.PutUint32(b[:], field.v)
		if _, err := f.WriteAt(b[:], field.at); err != nil {
			return err
		}
	}
	return f.Sync()
}
