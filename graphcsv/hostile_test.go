package graphcsv

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"follows/db"
)

// repeated is an io.Reader of head, then n bytes of fill, then tail,
// made as it is read, so that a file of hundreds of megabytes costs a
// test nothing; read counts what it has handed out.
type repeated struct {
	head, tail string
	fill       byte
	n          int64
	read       int64
}

func (r *repeated) Read(p []byte) (int, error) {
	size := int64(len(r.head)) + r.n + int64(len(r.tail))
	if r.read >= size {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && r.read < size {
		switch at := r.read; {
		case at < int64(len(r.head)):
			p[k] = r.head[at]
		case at < int64(len(r.head))+r.n:
			p[k] = r.fill
		default:
			p[k] = r.tail[at-int64(len(r.head))-r.n]
		}
		k++
		r.read++
	}
	return k, nil
}

// A field of 20 MB is refused with an error of a few hundred bytes that
// names the line, not with the field quoted whole.
func TestAHugeFieldGetsAShortError(t *testing.T) {
	for _, c := range []struct {
		name, head string
	}{
		{"id", "Id,Name\n1,alice\n"},
		{"name", "Id,Name\n1,alice\n2,"},
		{"quoted", "Id,Name\n1,alice\n2,\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &repeated{head: c.head, fill: '7', n: 20 << 20, tail: "\n3,carol\n"}
			if c.name == "quoted" {
				src.tail = "\"\n3,carol\n"
			}
			rows, errs := collect(ReadUsers("users.csv", src))
			if len(errs) != 1 || len(rows) != 1 {
				t.Fatalf("%d rows, errors %.300q; want alice and one error", len(rows), errs)
			}
			if len(errs[0]) > 1024 || !strings.Contains(errs[0], "users.csv line 3") || !strings.Contains(errs[0], "64 KiB") {
				t.Errorf("error of %d bytes: %.300q; want under 1 KiB, naming line 3 and the bound", len(errs[0]), errs[0])
			}
		})
	}
}

// Every reason that quotes a value quotes a short prefix of it: a field
// just under the record bound still makes a short error.
func TestErrorsQuoteAShortPrefix(t *testing.T) {
	long := strings.Repeat("x", 60<<10)
	for name, seq := range map[string]func() []string{
		"users id": func() []string {
			_, errs := collect(ReadUsers("u.csv", strings.NewReader("Id,Name\n"+long+",alice\n")))
			return errs
		},
		"users name": func() []string {
			_, errs := collect(ReadUsers("u.csv", strings.NewReader("Id,Name\n1,"+long+"\n")))
			return errs
		},
		"users deactivated": func() []string {
			_, errs := collect(ReadUsers("u.csv", strings.NewReader("Id,Name,SecurityStamp,DeactivatedAt,ExternalId\n1,a,,"+long+",\n")))
			return errs
		},
		"follows time": func() []string {
			_, errs := collect(ReadFollows("f.csv", strings.NewReader("FollowerId,FolloweeId,CreatedAt\n1,2,"+long+"\n")))
			return errs
		},
		"follows muted": func() []string {
			_, errs := collect(ReadFollows("f.csv", strings.NewReader("FollowerId,FolloweeId,CreatedAt,Muted,NotificationsEnabled\n1,2,2026-01-01 00:00:00,"+long+",1\n")))
			return errs
		},
		"blocks blocker": func() []string {
			_, errs := collect(ReadBlocks("b.csv", strings.NewReader("BlockerId,BlockedId,CreatedAt\n"+long+",2,2026-01-01 00:00:00\n")))
			return errs
		},
		"sequence": func() []string {
			_, err := ReadSequence("s.csv", strings.NewReader("LastUserId\n"+long+"\n"))
			return []string{err.Error()}
		},
		"manifest version": func() []string {
			_, err := ReadManifest("manifest.csv", strings.NewReader("Version,LastUserId,Users,Blocks,Follows\n"+long+",0,0,0,0\n"))
			return []string{err.Error()}
		},
		"manifest count": func() []string {
			_, err := ReadManifest("manifest.csv", strings.NewReader("Version,LastUserId,Users,Blocks,Follows\n2,0,"+long+",0,0\n"))
			return []string{err.Error()}
		},
	} {
		errs := seq()
		if len(errs) != 1 || len(errs[0]) > 300 {
			t.Errorf("%s: %d errors, the first %d bytes: %.400q; want one under 300 bytes", name, len(errs), len(errs[0]), errs)
		}
	}
}

// A field of 200 MB is refused having read little more than the bound:
// the reader stops where the record passes it, rather than holding the
// whole field before looking at it.
func TestAHugeFieldIsNotReadWhole(t *testing.T) {
	for _, quoted := range []bool{false, true} {
		src := &repeated{head: "FollowerId,FolloweeId,CreatedAt\n1,2,", fill: '\n', n: 200 << 20, tail: "\n"}
		if !quoted {
			src.fill = '9'
		} else {
			src.head += `"` // a quoted field may hold line breaks: a bound on lines is not enough
			src.tail = "\"\n"
		}
		_, errs := collect(ReadFollows("follows.csv", src))
		if len(errs) != 1 || !strings.Contains(errs[0], "64 KiB") {
			t.Errorf("quoted %v: errors %.300q, want one saying the record is over 64 KiB", quoted, errs)
		}
		if src.read > MaxRecord+2*readBuffer {
			t.Errorf("quoted %v: read %d bytes of a 200 MB field; want the reader to stop near %d", quoted, src.read, MaxRecord)
		}
	}
}

// A file that starts with a UTF-8 byte order mark, as editors on Windows
// write one, reads as the same file without it: the mark is not part of
// the header's first name.
func TestAByteOrderMarkIsSkipped(t *testing.T) {
	const bom = "\uFEFF"
	rows, errs := collect(ReadUsers("users.csv", strings.NewReader(bom+"Id,Name\n1,alice\n2,bob\n")))
	if len(errs) > 0 || len(rows) != 2 || rows[0].Name != "alice" || rows[1].Pos.Line != 3 {
		t.Errorf("users.csv with a BOM: %+v, %q; want alice and bob", rows, errs)
	}
	follows, errs := collect(ReadFollows("f.csv", strings.NewReader(bom+"FollowerId,FolloweeId,CreatedAt\n1,2,2026-01-01 00:00:00\n")))
	if len(errs) > 0 || len(follows) != 1 {
		t.Errorf("follows.csv with a BOM: %+v, %q", follows, errs)
	}
	if last, err := ReadSequence("s.csv", strings.NewReader(bom+"LastUserId\n7\n")); err != nil || last != 7 {
		t.Errorf("sequence file with a BOM: %d, %v", last, err)
	}
	if m, err := ReadManifest("manifest.csv", strings.NewReader(bom+"Version,LastUserId,Users,Blocks,Follows\n2,7,1,0,0\n")); err != nil || m.LastUserID != 7 {
		t.Errorf("manifest with a BOM: %+v, %v", m, err)
	}
	// Only at the start: a mark inside a field is that field's.
	_, errs = collect(ReadUsers("users.csv", strings.NewReader("Id,Name\n1,"+bom+"alice\n")))
	if len(errs) != 1 {
		t.Errorf("a BOM inside a name: %q, want the name refused", errs)
	}
}

// Ids are bounded by db.MaxUserID, the highest the Users table's int Id
// holds: an id or a LastUserId above it is refused where it is read,
// naming the file, the line and the field, rather than accepted and left
// to fail every sign-up later.
func TestIDsAboveTheBoundAreRefused(t *testing.T) {
	max := strconv.FormatInt(db.MaxUserID, 10)
	over := strconv.FormatInt(db.MaxUserID+1, 10)
	huge := "9223372036854775807" // 2^63-1
	for _, id := range []string{max} {
		if rows, errs := collect(ReadUsers("u.csv", strings.NewReader("Id,Name\n"+id+",alice\n"))); len(errs) > 0 || rows[0].ID != db.MaxUserID {
			t.Errorf("user id %s: %+v, %q; want it read", id, rows, errs)
		}
	}
	if last, err := ReadSequence("s.csv", strings.NewReader("LastUserId\n"+max+"\n")); err != nil || last != db.MaxUserID {
		t.Errorf("LastUserId %s: %d, %v; want it read", max, last, err)
	}
	for _, id := range []string{over, huge} {
		_, errs := collect(ReadUsers("u.csv", strings.NewReader("Id,Name\n"+id+",alice\n")))
		if len(errs) != 1 || !strings.Contains(errs[0], "u.csv line 2: Id") || !strings.Contains(errs[0], max) {
			t.Errorf("user id %s: %q; want it refused, saying the bound", id, errs)
		}
		_, errs = collect(ReadFollows("f.csv", strings.NewReader("FollowerId,FolloweeId,CreatedAt\n1,"+id+",2026-01-01 00:00:00\n")))
		if len(errs) != 1 || !strings.Contains(errs[0], "f.csv line 2: FolloweeId") {
			t.Errorf("followee %s: %q; want it refused", id, errs)
		}
		_, errs = collect(ReadBlocks("b.csv", strings.NewReader("BlockerId,BlockedId,CreatedAt\n"+id+",1,2026-01-01 00:00:00\n")))
		if len(errs) != 1 || !strings.Contains(errs[0], "b.csv line 2: BlockerId") {
			t.Errorf("blocker %s: %q; want it refused", id, errs)
		}
		_, err := ReadSequence("s.csv", strings.NewReader("LastUserId\n"+id+"\n"))
		var re *db.RowError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "s.csv line 2: LastUserId") || !strings.Contains(err.Error(), max) {
			t.Errorf("sequence file's LastUserId %s: %v; want it refused, saying the bound", id, err)
		}
		_, err = ReadManifest("manifest.csv", strings.NewReader("Version,LastUserId,Users,Blocks,Follows\n2,"+id+",0,0,0\n"))
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "manifest.csv line 2: LastUserId") || !strings.Contains(err.Error(), max) {
			t.Errorf("manifest's LastUserId %s: %v; want it refused, saying the bound", id, err)
		}
	}
}

// Files written by export read back whole at the bound's edge: a record
// just under it is read.
func TestARecordUnderTheBoundIsRead(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("Id,Name,SecurityStamp,DeactivatedAt,ExternalId\n")
	b.WriteString("1,alice,,," + strings.Repeat("s", 255) + "\n")
	b.WriteString("2,bob,,,\n")
	rows, errs := collect(ReadUsers("u.csv", &b))
	if len(errs) > 0 || len(rows) != 2 {
		t.Errorf("%+v, %q", rows, errs)
	}
}
