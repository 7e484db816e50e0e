package graphcsv

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"follows/db"
)

// MaxRecord bounds each record of a file, the header included: a record
// longer than this ends the file with an error. The longest record of
// this format is a user's, a few hundred bytes (an ExternalId is at most
// auth.MaxSubject), so the bound refuses only what is not such a file;
// without it encoding/csv holds a whole record however long, and a field
// of 200 MB took 1.3 GB.
const MaxRecord = 64 << 10

// readBuffer is how much of a file is read ahead of its records.
const readBuffer = 64 << 10

// errTooLong is a record over MaxRecord.
var errTooLong = fmt.Errorf("a record is over %d KiB, far longer than any of this format: not a file of it", MaxRecord>>10)

// byteOrderMark is UTF-8's byte order mark, which editors on Windows put
// at the start of a file they save as UTF-8. Left in, it is part of the
// header's first name, and the header is refused as misspelled.
const byteOrderMark = "\uFEFF"

// records reads a CSV file a record at a time, each bounded by MaxRecord,
// after a byte order mark at its start if there is one.
type records struct {
	src *boundedReader
	buf *bufio.Reader
	cr  *csv.Reader
	// next is the line the next record starts on, so that a record too
	// long to read can be pointed at.
	next int
}

func newRecords(r io.Reader) *records {
	src := &boundedReader{r: r, limit: MaxRecord + readBuffer}
	buf := bufio.NewReaderSize(src, readBuffer)
	if b, err := buf.Peek(len(byteOrderMark)); err == nil && string(b) == byteOrderMark {
		buf.Discard(len(byteOrderMark))
	}
	cr := csv.NewReader(buf) // reads buf itself: it is a bufio.Reader already
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	return &records{src: src, buf: buf, cr: cr, next: 1}
}

// read returns the next record, its fields as they are, and the line it
// starts on; io.EOF after the last. Any other error ends the file: a
// record over MaxRecord (errTooLong), or one that is not CSV. The record
// is only good until the next call.
func (rs *records) read() ([]string, int, error) {
	rec, err := rs.cr.Read()
	if rs.src.over {
		return nil, rs.next, errTooLong
	}
	if err != nil {
		if pe, ok := errors.AsType[*csv.ParseError](err); ok {
			return nil, pe.StartLine, err
		}
		return nil, rs.next, err
	}
	line, _ := rs.cr.FieldPos(0)
	size := 0
	for _, f := range rec {
		size += len(f)
	}
	if size > MaxRecord {
		return nil, line, errTooLong
	}
	last := len(rec) - 1
	end, _ := rs.cr.FieldPos(last)
	rs.next = end + strings.Count(rec[last], "\n") + 1
	// The next record may take MaxRecord bytes past where this one
	// ended, and the buffer's worth of look-ahead beyond that.
	rs.src.limit = rs.src.read - int64(rs.buf.Buffered()) + MaxRecord + readBuffer
	return rec, line, nil
}

// readAll reads a small file's records, at most max of them: a file with
// more is refused by its caller for how many it has.
func readAll(r io.Reader, max int) ([][]string, error) {
	rs := newRecords(r)
	var recs [][]string
	for len(recs) < max {
		rec, line, err := rs.read()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, errTooLong) {
				err = fmt.Errorf("line %d: %w", line, err)
			}
			return nil, err
		}
		recs = append(recs, slices.Clone(rec))
	}
	return recs, nil
}

// boundedReader reads r up to limit bytes in all; past it, it fails and
// says so in over. records moves the limit on as each record ends, so
// that a file of any size is read but no one record of more than
// MaxRecord: the reading stops there, rather than after the whole record
// is held.
type boundedReader struct {
	r           io.Reader
	read, limit int64
	over        bool
}

func (b *boundedReader) Read(p []byte) (int, error) {
	room := b.limit - b.read
	if room <= 0 {
		b.over = true
		return 0, errTooLong
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

// shown is how a reason quotes a field's value: its first 40 bytes at
// most, and how long it is when that is not all of it, so that each error
// of a hostile file stays short (a 20 MB field once made 20 MB of error).
func shown(s string) string {
	const most = 40
	if len(s) <= most {
		return strconv.Quote(s)
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// userIDRule says what parseUserID takes.
var userIDRule = fmt.Sprintf("a user id: a whole number from 1 to %d", db.MaxUserID)

// parseUserID reads a user's id: a whole number from 1 to db.MaxUserID,
// the highest the store gives, so that a file cannot hand the store an id
// it could never have given.
func parseUserID(s string) (int64, bool) {
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0 && id <= db.MaxUserID
}

// lastUserIDRule says what parseLastUserID takes.
var lastUserIDRule = fmt.Sprintf("a whole number from 0 to %d, the highest user id there can be", db.MaxUserID)

// parseLastUserID reads a LastUserId, of a manifest or a sequence file:
// the highest id a database gave, 0 for none. Above db.MaxUserID, taken,
// it would leave every later sign-up refused.
func parseLastUserID(s string) (int64, bool) {
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id >= 0 && id <= db.MaxUserID
}
