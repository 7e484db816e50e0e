package graphcsv

import (
	"bytes"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"follows/auth"
	"follows/db"
)

// collect reads a sequence whole: its rows and the errors in between.
func collect[T any](seq iter.Seq2[T, error]) (rows []T, errs []string) {
	for row, err := range seq {
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		rows = append(rows, row)
	}
	return rows, errs
}

// Files read and written again come out in the one form: trimmed fields,
// times in UTC with seven fractional digits; and that form reads back as
// the same rows.
func TestRoundTrip(t *testing.T) {
	// Version 1 files, read and written as version 2: no deactivation, the
	// default settings.
	users := "id , NAME, securitystamp\n1, alice, 0123abcd\n20,Bob.B-b_,\n"
	follows := "FollowerId,FolloweeId,CreatedAt\n1,20,2026-01-02 03:04:05.123456789\n20,1, 2026-01-02 03:04:05\n"
	wantUsers := "Id,Name,SecurityStamp,DeactivatedAt,ExternalId\n1,alice,0123abcd,,\n20,Bob.B-b_,,,\n"
	wantFollows := "FollowerId,FolloweeId,CreatedAt,Muted,NotificationsEnabled\n1,20,2026-01-02 03:04:05.1234567,0,1\n20,1,2026-01-02 03:04:05.0000000,0,1\n"
	for range 2 {
		var ub, fb bytes.Buffer
		if n, err := WriteUsers(&ub, ReadUsers("u.csv", strings.NewReader(users))); n != 2 || err != nil {
			t.Fatalf("write users: %d, %v", n, err)
		}
		if n, err := WriteFollows(&fb, ReadFollows("f.csv", strings.NewReader(follows))); n != 2 || err != nil {
			t.Fatalf("write follows: %d, %v", n, err)
		}
		if ub.String() != wantUsers || fb.String() != wantFollows {
			t.Fatalf("written:\n%s%s\nwant\n%s%s", &ub, &fb, wantUsers, wantFollows)
		}
		users, follows = ub.String(), fb.String()
	}
	rows, errs := collect(ReadFollows("f.csv", strings.NewReader(follows)))
	if len(errs) > 0 || rows[0].Pos != (db.Pos{File: "f.csv", Line: 2}) || rows[1].Pos.Line != 3 ||
		!rows[0].At.Equal(time.Date(2026, 1, 2, 3, 4, 5, 123456700, time.UTC)) || rows[0].Follower != 1 || rows[0].Followee != 20 {
		t.Errorf("follows read back = %+v, %v", rows, errs)
	}

	// A time in another zone is written as UTC.
	var b bytes.Buffer
	cet := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	WriteFollows(&b, func(yield func(db.FollowRow, error) bool) {
		yield(db.FollowRow{Follower: 1, Followee: 2, At: cet}, nil)
	})
	if !strings.Contains(b.String(), "1,2,2026-01-02 02:04:05.0000000,0,1\n") {
		t.Errorf("a CET time written as %q", &b)
	}
}

// CreatedAt may carry any number of fractional digits, or none.
func TestReadTimes(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026-01-01 00:00:01":           time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC),
		"2026-01-01 00:00:02.5":         time.Date(2026, 1, 1, 0, 0, 2, 500000000, time.UTC),
		"2026-01-01 00:00:03.123456":    time.Date(2026, 1, 1, 0, 0, 3, 123456000, time.UTC),
		"2026-01-01 00:00:04.1234567":   time.Date(2026, 1, 1, 0, 0, 4, 123456700, time.UTC),
		"2026-01-01 00:00:05.123456789": time.Date(2026, 1, 1, 0, 0, 5, 123456789, time.UTC),
	} {
		rows, errs := collect(ReadFollows("f.csv", strings.NewReader("FollowerId,FolloweeId,CreatedAt\n1,2,"+in+"\n")))
		if len(errs) > 0 || len(rows) != 1 || !rows[0].At.Equal(want) {
			t.Errorf("%s read as %+v, %v; want %v", in, rows, errs, want)
		}
	}
}

// parseTime reads what time.Parse reads, to the same time, and refuses
// what it refuses: the usual form by readTime, edge cases and near misses
// included.
func TestParseTimeIsTimeParse(t *testing.T) {
	ins := []string{
		"2026-01-01 00:00:01", "2026-01-01 00:00:02.5", "2024-02-29 23:59:59.9999999", "2023-02-29 00:00:00",
		"2026-04-31 00:00:00", "2026-13-01 00:00:00", "2026-00-01 00:00:00", "2026-01-00 00:00:00",
		"2026-01-01 24:00:00", "2026-01-01 23:60:00", "2026-01-01 23:59:60", "0000-01-01 00:00:00",
		"9999-12-31 23:59:59.999999999", "2026-01-01 00:00:00.", "2026-01-01 00:00:00.1234567891",
		"2026-01-01 00:00:00,5", "2026-01-01T00:00:00", "2026-1-01 00:00:00", "+026-01-01 00:00:00",
		"2026-01-01 00:00:0a", "2026-01-01 00:00:00.12a", "2026-01-01 00:00:00 ", "", "2026-01-01",
		"2026-01-01 00:00:00.0000000", "1900-02-29 00:00:00", "2000-02-29 00:00:00", "2026-01-01 0:00:00",
		"2026-01-01 00:00:00.-1", "2026-01-01 00:00:00.1 ", "2026-01-01 12:30:60", "2026-01-01 12:60:00", "2026-06-01 23:00:00",
	}
	for i := range 20000 {
		tm := time.Unix(int64(i)*15485863%253402300800-62135596800+int64(i)*7, int64(i)*7919%1e9).UTC()
		ins = append(ins, tm.Format(TimeLayout), tm.Format(time.DateTime), tm.Format("2006-01-02 15:04:05.000"), tm.Format(time.DateTime+".999999999"))
	}
	for _, in := range ins {
		got, err := parseTime(in)
		want, werr := time.Parse(time.DateTime, in)
		if (err == nil) != (werr == nil) || !got.Equal(want) || got.Location() != want.Location() {
			t.Errorf("parseTime(%q) = %v, %v; time.Parse: %v, %v", in, got, err, want, werr)
		}
		if err != nil && err.Error() != werr.Error() {
			t.Errorf("parseTime(%q) says %q; time.Parse %q", in, err, werr)
		}
	}
}

// Each bad row is reported with its file and the line its record starts
// on, and reading goes on past it.
func TestReadPointsAtBadRows(t *testing.T) {
	users := "Id,Name\n1,alice\nx,frank\n\"2\",\"two\nlines\"\n3,a b\n4\n5,erin\n"
	rows, errs := collect(ReadUsers("users.csv", strings.NewReader(users)))
	wantErrs := []string{
		`users.csv line 3: Id "x" is not a user id: a whole number from 1 to 2147483647`,
		`users.csv line 4: Name "two\nlines" is not a handle (` + db.NameRule + `)`,
		`users.csv line 6: Name "a b" is not a handle (` + db.NameRule + `)`,
		`users.csv line 7: 1 fields, want 2`,
	}
	if !slices.Equal(errs, wantErrs) {
		t.Errorf("errors:\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(wantErrs, "\n"))
	}
	if want := []db.UserRow{{Pos: db.Pos{File: "users.csv", Line: 2}, ID: 1, Name: "alice"}, {Pos: db.Pos{File: "users.csv", Line: 8}, ID: 5, Name: "erin"}}; !slices.Equal(rows, want) {
		t.Errorf("rows = %+v, want %+v", rows, want)
	}

	follows := "followerid , FolloweeId,CreatedAt\n1,2,yesterday\n0,2,2026-01-01 00:00:00\n1,-2,2026-01-01 00:00:00\n"
	_, errs = collect(ReadFollows("follows.csv", strings.NewReader(follows)))
	wantErrs = []string{
		`follows.csv line 2: CreatedAt "yesterday" is not YYYY-MM-DD HH:MM:SS[.ffffff]`,
		`follows.csv line 3: FollowerId "0" is not a user id: a whole number from 1 to 2147483647`,
		`follows.csv line 4: FolloweeId "-2" is not a user id: a whole number from 1 to 2147483647`,
	}
	if !slices.Equal(errs, wantErrs) {
		t.Errorf("errors:\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(wantErrs, "\n"))
	}

	_, errs = collect(ReadFollows("follows.csv", strings.NewReader("Follower,Followee,When\n1,2,2026-01-01 00:00:00\n")))
	if want := []string{"follows.csv line 1: the header must be FollowerId,FolloweeId,CreatedAt,Muted,NotificationsEnabled or FollowerId,FolloweeId,CreatedAt"}; !slices.Equal(errs, want) {
		t.Errorf("a wrong header: %q, want %q", errs, want)
	}
	var re *db.RowError
	for _, err := range ReadUsers("users.csv", strings.NewReader("")) {
		if !errors.As(err, &re) || re.Pos.Line != 1 || !strings.Contains(err.Error(), "Id,Name,SecurityStamp,DeactivatedAt,ExternalId or Id,Name,SecurityStamp or Id,Name") {
			t.Errorf("an empty file: %v, want a row error at line 1 naming both headers", err)
		}
	}

	// Stamps are read as the store keeps them; an empty one is left for
	// the store to make.
	rows, errs = collect(ReadUsers("users.csv", strings.NewReader("Id,Name,SecurityStamp\n1,a,abc-DEF-0\n2,b,\n3,c,a:b\n4,d\n")))
	wantErrs = []string{
		`users.csv line 4: SecurityStamp "a:b" is not a stamp (` + db.StampRule + `)`,
		`users.csv line 5: 2 fields, want 3`,
	}
	if !slices.Equal(errs, wantErrs) {
		t.Errorf("errors:\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(wantErrs, "\n"))
	}
	if len(rows) != 2 || rows[0].SecurityStamp != "abc-DEF-0" || rows[1].SecurityStamp != "" {
		t.Errorf("rows = %+v", rows)
	}
}

// The sequence file holds one number, the highest user id ever given out.
func TestSequence(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSequence(&b, 42); err != nil || b.String() != "LastUserId\n42\n" {
		t.Fatalf("written %q, %v", &b, err)
	}
	if n, err := ReadSequence("s.csv", &b); n != 42 || err != nil {
		t.Errorf("read back %d, %v", n, err)
	}
	for in, want := range map[string]string{
		"":                      "s.csv line 1: the header must be LastUserId",
		"LastUserId\n":          "s.csv line 2: want one LastUserId, not 0",
		"LastUserId\n1\n2\n":    "s.csv line 2: want one LastUserId, not 2",
		"LastUserId\nmany\n":    `s.csv line 2: LastUserId "many" is not a whole number from 0 to 2147483647, the highest user id there can be`,
		"LastUserId,Other\n1\n": "s.csv line 1: the header must be LastUserId",
	} {
		if _, err := ReadSequence("s.csv", strings.NewReader(in)); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", in, err, want)
		}
	}
	if got := SequencePath("/x/users.csv"); got != "/x/users.sequence.csv" {
		t.Errorf("SequencePath = %s", got)
	}
}

// Writing stops at the first error of the rows and returns it.
func TestWriteStopsAtAnError(t *testing.T) {
	boom := errors.New("read follows: the disk is on fire")
	rows := func(yield func(db.UserRow, error) bool) {
		_ = yield(db.UserRow{ID: 1, Name: "a"}, nil) && yield(db.UserRow{}, boom) && yield(db.UserRow{ID: 2, Name: "b"}, nil)
	}
	var b bytes.Buffer
	n, err := WriteUsers(&b, rows)
	if n != 1 || !errors.Is(err, boom) {
		t.Errorf("write = %d, %v; want 1 and the rows' error", n, err)
	}
	if strings.Contains(b.String(), "2,b") {
		t.Errorf("a row after the error was written:\n%s", &b)
	}
}

// Version 2 carries deactivations, provider subjects, follow settings and
// blocks, and reads back what it wrote; bad values are named.
func TestVersion2Rows(t *testing.T) {
	users := "Id,Name,SecurityStamp,DeactivatedAt,ExternalId\n1,a,s1,,\"auth0|a,\"\"b\"\"\"\n2,b,s2,2026-01-02 03:04:05.1234567,\n"
	follows := "FollowerId,FolloweeId,CreatedAt,Muted,NotificationsEnabled\n1,2,2026-01-01 00:00:00.0000000,1,0\n2,1,2026-01-01 00:00:00.0000000,0,1\n"
	blocks := "BlockerId,BlockedId,CreatedAt\n1,3,2026-01-05 00:00:00.0000000\n"
	var ub, fb, bb bytes.Buffer
	WriteUsers(&ub, ReadUsers("u", strings.NewReader(users)))
	WriteFollows(&fb, ReadFollows("f", strings.NewReader(follows)))
	WriteBlocks(&bb, ReadBlocks("b", strings.NewReader(blocks)))
	if ub.String() != users || fb.String() != follows || bb.String() != blocks {
		t.Errorf("written again:\n%s%s%s", &ub, &fb, &bb)
	}
	us, _ := collect(ReadUsers("u", strings.NewReader(users)))
	fs, _ := collect(ReadFollows("f", strings.NewReader(follows)))
	if !us[0].DeactivatedAt.IsZero() || !us[1].DeactivatedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 123456700, time.UTC)) ||
		us[0].ExternalID != `auth0|a,"b"` || us[1].ExternalID != "" ||
		!fs[0].Muted || !fs[0].NotificationsOff || fs[1].Muted || fs[1].NotificationsOff {
		t.Errorf("read %+v %+v", us, fs)
	}
	// A subject is the provider's rule's: up to 255 characters.
	longest, tooLong := strings.Repeat("s", auth.MaxSubject), strings.Repeat("s", auth.MaxSubject+1)
	us, errs := collect(ReadUsers("u", strings.NewReader("Id,Name,SecurityStamp,DeactivatedAt,ExternalId\n1,a,s,never,\n2,b,,,"+tooLong+"\n3,c,,,"+longest+"\n")))
	if len(us) != 1 || us[0].ExternalID != longest {
		t.Errorf("read %+v; want c, with the longest subject", us)
	}
	_, ferrs := collect(ReadFollows("f", strings.NewReader("FollowerId,FolloweeId,CreatedAt,Muted,NotificationsEnabled\n1,2,2026-01-01 00:00:00,maybe,1\n")))
	_, berrs := collect(ReadBlocks("b", strings.NewReader("BlockerId,BlockedId,CreatedAt\n1,x,2026-01-01 00:00:00\n")))
	want := []string{
		`u line 2: DeactivatedAt "never" is not empty nor YYYY-MM-DD HH:MM:SS[.fffffff]`,
		`u line 3: ExternalId "` + tooLong[:40] + `"... (256 bytes) is not a subject (` + auth.SubjectRule + `)`,
		`f line 2: Muted "maybe" is not 0 or 1`,
		`b line 2: BlockedId "x" is not a user id: a whole number from 1 to 2147483647`,
	}
	if got := append(append(errs, ferrs...), berrs...); !slices.Equal(got, want) {
		t.Errorf("errors %q, want %q", got, want)
	}
}

// The manifest's version is read before anything else of it: a later
// version is refused for its version, whatever its columns.
func TestManifest(t *testing.T) {
	var b bytes.Buffer
	m := Manifest{Version: Version, LastUserID: 9, Users: 3, Blocks: 1, Follows: 2}
	if err := WriteManifest(&b, m); err != nil || b.String() != "Version,LastUserId,Users,Blocks,Follows\n2,9,3,1,2\n" {
		t.Fatalf("written %q, %v", &b, err)
	}
	if got, err := ReadManifest("m", &b); got != m || err != nil {
		t.Errorf("read back %+v, %v", got, err)
	}
	for in, want := range map[string]string{
		"":                     "m line 1: not a manifest",
		"Version,Other\n3,x\n": `m line 2: format version "3": this build reads version 2`,
		"Version,LastUserId,Users,Blocks\n2,1,1,1\n":           "m line 1: the header must be Version,LastUserId,Users,Blocks,Follows",
		"Version,LastUserId,Users,Blocks,Follows\n2,1,1,1,x\n": `m line 2: Follows "x" is not a whole number`,
	} {
		if _, err := ReadManifest("m", strings.NewReader(in)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %s", in, err, want)
		}
	}
}
