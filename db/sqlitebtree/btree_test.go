package sqlitebtree

import (
	"bytes"
	"cmp"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	_ "modernc.org/sqlite"
)

// readVarint is SQLite's varint decoder, written from the file format's
// description rather than from AppendVarint: up to eight bytes of seven
// bits, high bit set on all but the last, and a ninth byte of eight.
func readVarint(b []byte) (uint64, int) {
	var v uint64
	for i := range 8 {
		if i >= len(b) {
			return 0, -1
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	if len(b) < 9 {
		return 0, -1
	}
	return v<<8 | uint64(b[8]), 9
}

func FuzzVarint(f *testing.F) {
	for _, v := range []uint64{0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 1<<56 - 1, 1 << 56, math.MaxUint64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v uint64) {
		b := AppendVarint([]byte{0xff}, v)[1:]
		if len(b) != VarintLen(v) {
			t.Fatalf("%d written in %d bytes, VarintLen says %d", v, len(b), VarintLen(v))
		}
		got, n := readVarint(b)
		if got != v || n != len(b) {
			t.Fatalf("%d written % x, read back %d from %d bytes", v, b, got, n)
		}
		// The shortest form: fewer bytes could not hold v.
		if len(b) > 1 && len(b) < 9 && v < 1<<(7*(len(b)-1)) {
			t.Fatalf("%d written in %d bytes, fewer hold it", v, len(b))
		}
	})
}

// readRecord decodes a record as the file format describes it: a
// header of its size and each column's serial type, then the values.
// Integers come back as int64, text as string, NULL as nil.
func readRecord(b []byte) ([]any, error) {
	hdr, n := readVarint(b)
	if n < 0 || int(hdr) > len(b) {
		return nil, fmt.Errorf("header size %d of %d bytes", hdr, len(b))
	}
	var vals []any
	body := b[hdr:]
	for at := n; at < int(hdr); {
		st, k := readVarint(b[at:hdr])
		if k < 0 {
			return nil, fmt.Errorf("serial type at %d", at)
		}
		at += k
		size := map[uint64]int{0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 8: 0, 9: 0}
		switch {
		case st == 0:
			vals = append(vals, nil)
		case st == 8 || st == 9:
			vals = append(vals, int64(st-8))
		case st <= 6:
			sz := size[st]
			if len(body) < sz {
				return nil, fmt.Errorf("integer of %d bytes in %d", sz, len(body))
			}
			var v int64
			if body[0]&0x80 != 0 {
				v = -1
			}
			for _, c := range body[:sz] {
				v = v<<8 | int64(c)
			}
			vals = append(vals, v)
			body = body[sz:]
		case st >= 13 && st%2 == 1:
			sz := int(st-13) / 2
			if len(body) < sz {
				return nil, fmt.Errorf("text of %d bytes in %d", sz, len(body))
			}
			vals = append(vals, string(body[:sz]))
			body = body[sz:]
		default:
			return nil, fmt.Errorf("serial type %d", st)
		}
	}
	if len(body) != 0 {
		return nil, fmt.Errorf("%d bytes after the values", len(body))
	}
	return vals, nil
}

func FuzzShortRecord(f *testing.F) {
	f.Add(int64(0), int64(1), int64(-1), int64(2), "2024-06-06 12:00:00.0000000", uint8(2), true)
	f.Add(int64(127), int64(128), int64(32767), int64(-32768), "", uint8(5), true)
	f.Add(int64(math.MinInt64), int64(math.MaxInt64), int64(-32769), int64(8388608), "", uint8(0), false)
	f.Add(int64(1<<47), int64(-1<<47-1), int64(2147483648), int64(-129), "x", uint8(9), true)
	f.Fuzz(func(t *testing.T, a, b, c, d int64, text string, textAt uint8, format4 bool) {
		if len(text) > 57 {
			text = text[:57]
		}
		ints := []int64{a, b, c, d}
		at := int(textAt % 6) // 0 to 4: that column; 5: no text
		if at == 5 {
			at = -1
		}
		textLen := -1
		if at >= 0 {
			textLen = len(text)
		}
		rec := AppendShortRecord([]byte("x"), format4, at, []byte(text), ints...)[1:]
		if len(rec) != ShortRecordLen(format4, textLen, ints...) {
			t.Fatalf("record of %d bytes, ShortRecordLen says %d", len(rec), ShortRecordLen(format4, textLen, ints...))
		}
		vals, err := readRecord(rec)
		if err != nil {
			t.Fatalf("record % x: %v", rec, err)
		}
		var want []any
		for _, v := range ints {
			want = append(want, v)
		}
		if at >= 0 {
			want = slices.Insert(want, at, any(text))
		}
		if fmt.Sprint(vals) != fmt.Sprint(want) {
			t.Fatalf("record % x reads %v, want %v", rec, vals, want)
		}
		if !format4 && bytes.ContainsAny(rec[1:len(want)+1], "\x08\x09") {
			t.Fatalf("serial types 8 or 9 before schema format 4: % x", rec)
		}
	})
}

// emptyFile writes an empty database, by hand as the file format
// describes it, with the page size and reserved bytes given: SQLite
// keeps both in the tables it then makes, and has no statement to set
// the reserved bytes.
func emptyFile(t *testing.T, pageSize, reserved int) string {
	t.Helper()
	pg := make([]byte, pageSize)
	copy(pg, "SQLite format 3\x00")
	be := binary.BigEndian
	be.PutUint16(pg[16:], uint16(pageSize))
	if pageSize == 65536 {
		be.PutUint16(pg[16:], 1) // as the format writes it
	}
	pg[18], pg[19], pg[20], pg[21], pg[22], pg[23] = 1, 1, byte(reserved), 64, 32, 32
	be.PutUint32(pg[24:], 1) // change counter
	be.PutUint32(pg[28:], 1) // pages
	be.PutUint32(pg[44:], 4) // schema format
	be.PutUint32(pg[56:], 1) // UTF-8
	be.PutUint32(pg[92:], 1) // version-valid-for
	be.PutUint32(pg[96:], 3045000)
	pg[100] = PageTableLeaf
	be.PutUint16(pg[105:], uint16(pageSize-reserved)) // content starts at the usable end
	path := filepath.Join(t.TempDir(), "t.db")
	if err := os.WriteFile(path, pg, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// row is a row of the test's table t(a INTEGER, b INTEGER, c TEXT),
// indexed by ix(a, c, b).
type row struct {
	a, b int64
	c    string
}

type tableRows struct {
	rows    []row
	format4 bool
}

func (t tableRows) Len() int { return len(t.rows) }
func (t tableRows) RecordLen(i int) int {
	return ShortRecordLen(t.format4, len(t.rows[i].c), t.rows[i].a, t.rows[i].b)
}
func (t tableRows) AppendRecord(dst []byte, i int) []byte {
	return AppendShortRecord(dst, t.format4, 2, []byte(t.rows[i].c), t.rows[i].a, t.rows[i].b)
}

// indexKeys are ix's keys, in order: row indexes.
type indexKeys struct {
	tableRows
	order []int
}

func (x indexKeys) RecordLen(j int) int {
	r := x.rows[x.order[j]]
	return ShortRecordLen(x.format4, len(r.c), r.a, r.b, rowid(x.order[j]))
}
func (x indexKeys) AppendRecord(dst []byte, j int) []byte {
	r := x.rows[x.order[j]]
	return AppendShortRecord(dst, x.format4, 1, []byte(r.c), r.a, r.b, rowid(x.order[j]))
}

// genRows makes n rows of integers of every size and texts up to 57
// bytes, some rows' keys equal but for b.
func genRows(seed uint64, n int) []row {
	rnd := rand.New(rand.NewPCG(seed, 2))
	var rows []row
	for i := range n {
		r := row{a: rnd.Int64() >> rnd.IntN(64), b: rnd.Int64N(3) - 1, c: string(bytes.Repeat([]byte{byte('a' + rnd.IntN(3))}, rnd.IntN(58)))}
		if rnd.IntN(2) == 0 {
			r.a = -r.a
		}
		if i > 0 && rnd.IntN(4) == 0 {
			r.a, r.c = rows[i-1].a, rows[i-1].c
		}
		rows = append(rows, r)
	}
	return rows
}

// writeAndCheck makes a file of the page size and reserved bytes given,
// writes rows into its table t and index ix, and has SQLite check it:
// integrity_check, which reads every page of both trees and finds every
// row's key in the index, and the rows read back.
func writeAndCheck(t *testing.T, path string, rows []row) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS t (a INTEGER, b INTEGER, c TEXT); CREATE INDEX IF NOT EXISTS ix ON t (a, c, b)`); err != nil {
		t.Fatal(err)
	}
	var tableRoot, indexRoot uint32
	if err := db.QueryRow(`SELECT (SELECT rootpage FROM sqlite_schema WHERE name = 't'), (SELECT rootpage FROM sqlite_schema WHERE name = 'ix')`).Scan(&tableRoot, &indexRoot); err != nil {
		t.Fatal(err)
	}
	db.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := ReadHeader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tableRows{rows, h.Format4}
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		a, b := rows[i], rows[j]
		return cmp.Or(cmp.Compare(a.a, b.a), cmp.Compare(a.c, b.c), cmp.Compare(a.b, b.b), cmp.Compare(i, j))
	})
	if err := Write(f, h, []Tree{{Root: indexRoot, Entries: indexKeys{tr, order}}, {Root: tableRoot, Table: true, Entries: tr}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check after writing %d rows on pages of %d (%d usable): %q, %v", len(rows), h.PageSize, h.Usable, ok, err)
	}
	rs, err := db.Query(`SELECT a, b, c FROM t ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var got []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.a, &r.b, &r.c); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if !slices.Equal(got, rows) {
		t.Fatalf("read back %d rows, wrote %d; first differing: %v", len(got), len(rows), firstDiff(got, rows))
	}
}

func firstDiff(a, b []row) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("row %d: %v, wrote %v", i+1, a[i], b[i])
		}
	}
	return "none"
}

// Trees written on every page size, with reserved bytes or none, are
// ones SQLite reads whole: leaves only, one interior level, several.
func FuzzWrite(f *testing.F) {
	f.Add(uint64(1), uint16(0), uint8(0), uint8(0))
	f.Add(uint64(2), uint16(1), uint8(0), uint8(32))
	f.Add(uint64(3), uint16(40), uint8(0), uint8(0))
	f.Add(uint64(4), uint16(3000), uint8(0), uint8(7))
	f.Add(uint64(5), uint16(2000), uint8(3), uint8(255))
	f.Add(uint64(6), uint16(4000), uint8(7), uint8(100))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16, sizeLog, reserved uint8) {
		pageSize := 512 << (sizeLog % 8) // 512 to 65536
		res := int(reserved) % min(256, pageSize-480+1)
		writeAndCheck(t, emptyFile(t, pageSize, res), genRows(seed, int(n)))
	})
}

// A file that reaches past byte 1,073,741,824 keeps the page that holds
// it (SQLite's lock-byte page) unused: the writer's trees cross it.
func TestWriteAcrossTheLockPage(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a file of more than 1 GiB")
	}
	path := emptyFile(t, 4096, 0)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// Four blobs (one may not pass 1e9 bytes) that fill the file to
	// about 30 pages before the lock page.
	h := Header{PageSize: 4096}
	blob := (int(h.LockPage()) - 30) * (4096 - 4) / 4
	if _, err := db.Exec(`CREATE TABLE filler (x); INSERT INTO filler VALUES (zeroblob(?1)), (zeroblob(?1)), (zeroblob(?1)), (zeroblob(?1))`, blob); err != nil {
		t.Fatal(err)
	}
	var pages uint32
	if err := db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil || pages >= h.LockPage() {
		t.Fatalf("%d pages before the write (%v), the lock page is %d", pages, err, h.LockPage())
	}
	db.Close()
	writeAndCheck(t, path, genRows(7, 5000))
	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil || pages <= h.LockPage() {
		t.Fatalf("%d pages after the write (%v): it did not cross the lock page %d", pages, err, h.LockPage())
	}
}
