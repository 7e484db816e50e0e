// Package graphcsv is the CSV form of a follower graph, as the import and
// export subcommands read and write it. Version 2, which export writes, is
// a folder (see docs/moving-a-graph.md): manifest.csv (Version,LastUserId,
// Users,Blocks,Follows), users.csv (Id,Name,SecurityStamp,DeactivatedAt,
// ExternalId), blocks.csv (BlockerId,BlockedId,CreatedAt) and follows.csv (FollowerId,
// FolloweeId,CreatedAt,Muted,NotificationsEnabled). Version 1, which
// earlier exports wrote, is users.csv (Id,Name,SecurityStamp; Id,Name is
// read too), follows.csv (FollowerId,FolloweeId,CreatedAt) and the
// sequence file beside users.csv (LastUserId: the highest user id ever
// given out, deleted users' included); it is still read. Reading yields
// the store's rows, each with the file and line it came from so that the
// import can point at a bad one; writing takes the rows the store yields.
// The store itself deals in rows only.
package graphcsv

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"time"

	"follows/auth"
	"follows/db"
)

// TimeLayout is the form of CreatedAt: UTC with seven fractional digits,
// the precision of SQL Server's datetime2 and of the times EF Core writes
// into SQLite, so that a time moves through export and import unchanged.
// Reading also takes fewer fractional digits, or none.
const TimeLayout = time.DateTime + ".0000000"

// The headers of the files, the version 2 ones first. Files of version 1
// are read too: users.csv without deactivations (and without stamps, as
// files written before stamps were and hand-made ones are: its users get
// new stamps), follows.csv without settings (each gets the defaults).
var (
	usersHeader         = []string{"Id", "Name", "SecurityStamp", "DeactivatedAt", "ExternalId"}
	usersHeaderV1       = []string{"Id", "Name", "SecurityStamp"}
	usersHeaderNoStamps = []string{"Id", "Name"}
	followsHeader       = []string{"FollowerId", "FolloweeId", "CreatedAt", "Muted", "NotificationsEnabled"}
	followsHeaderV1     = []string{"FollowerId", "FolloweeId", "CreatedAt"}
	blocksHeader        = []string{"BlockerId", "BlockedId", "CreatedAt"}
	sequenceHeader      = []string{"LastUserId"}
)

// ReadUsers yields the users of users.csv, read from r and called name in
// errors, or a *db.RowError for each row that is not right. An empty
// SecurityStamp, or none, leaves the store to make one; an empty
// DeactivatedAt, or none, is an active account; an empty ExternalId, or
// none, is an account no OpenID Connect provider signs in.
func ReadUsers(name string, r io.Reader) iter.Seq2[db.UserRow, error] {
	return read(name, r, [][]string{usersHeader, usersHeaderV1, usersHeaderNoStamps}, func(pos db.Pos, rec []string) (db.UserRow, string) {
		id, ok := parseUserID(rec[0])
		switch {
		case !ok:
			return db.UserRow{}, fmt.Sprintf("Id %s is not %s", shown(rec[0]), userIDRule)
		case !db.ValidName(rec[1]):
			return db.UserRow{}, fmt.Sprintf("Name %s is not a handle (%s)", shown(rec[1]), db.NameRule)
		}
		u := db.UserRow{Pos: pos, ID: id, Name: rec[1]}
		if len(rec) > 2 {
			if rec[2] != "" && !db.ValidStamp(rec[2]) {
				return db.UserRow{}, fmt.Sprintf("SecurityStamp %s is not a stamp (%s)", shown(rec[2]), db.StampRule)
			}
			u.SecurityStamp = rec[2]
		}
		if len(rec) > 3 && rec[3] != "" {
			at, err := parseTime(rec[3])
			if err != nil {
				return db.UserRow{}, fmt.Sprintf("DeactivatedAt %s is not empty nor YYYY-MM-DD HH:MM:SS[.fffffff]", shown(rec[3]))
			}
			u.DeactivatedAt = at
		}
		if len(rec) > 4 && rec[4] != "" {
			if !auth.ValidSubject(rec[4]) {
				return db.UserRow{}, fmt.Sprintf("ExternalId %s is not a subject (%s)", shown(rec[4]), auth.SubjectRule)
			}
			u.ExternalID = rec[4]
		}
		return u, ""
	})
}

// parseTime reads a time in TimeLayout, or with fewer fractional digits,
// as time.Parse(time.DateTime, s) does (see db.ParseDateTime).
func parseTime(s string) (time.Time, error) { return db.ParseDateTime(s) }

// parseFlag reads a setting written as 0 or 1 (true and false are read too).
func parseFlag(s string) (bool, error) { return strconv.ParseBool(s) }

// ReadFollows yields the follows of follows.csv, read from r and called
// name in errors, or a *db.RowError for each row that is not right.
func ReadFollows(name string, r io.Reader) iter.Seq2[db.FollowRow, error] {
	return read(name, r, [][]string{followsHeader, followsHeaderV1}, func(pos db.Pos, rec []string) (db.FollowRow, string) {
		follower, followee, at, reason := parseEdge(rec, followsHeader)
		if reason != "" {
			return db.FollowRow{}, reason
		}
		f := db.FollowRow{Pos: pos, Follower: follower, Followee: followee, At: at}
		if len(rec) > 3 {
			muted, err4 := parseFlag(rec[3])
			notifications, err5 := parseFlag(rec[4])
			switch {
			case err4 != nil:
				return db.FollowRow{}, fmt.Sprintf("Muted %s is not 0 or 1", shown(rec[3]))
			case err5 != nil:
				return db.FollowRow{}, fmt.Sprintf("NotificationsEnabled %s is not 0 or 1", shown(rec[4]))
			}
			f.Muted, f.NotificationsOff = muted, !notifications
		}
		return f, ""
	})
}

// ReadBlocks yields the blocks of blocks.csv, read from r and called name
// in errors, or a *db.RowError for each row that is not right.
func ReadBlocks(name string, r io.Reader) iter.Seq2[db.BlockRow, error] {
	return read(name, r, [][]string{blocksHeader}, func(pos db.Pos, rec []string) (db.BlockRow, string) {
		blocker, blocked, at, reason := parseEdge(rec, blocksHeader)
		if reason != "" {
			return db.BlockRow{}, reason
		}
		return db.BlockRow{Pos: pos, Blocker: blocker, Blocked: blocked, At: at}, ""
	})
}

// parseEdge reads the first three fields of a follow or a block: the two
// users' ids and when, or says which is not right, by its header's name.
func parseEdge(rec, header []string) (from, to int64, at time.Time, reason string) {
	from, ok1 := parseUserID(rec[0])
	to, ok2 := parseUserID(rec[1])
	at, err3 := parseTime(rec[2])
	switch {
	case !ok1:
		return 0, 0, at, fmt.Sprintf("%s %s is not %s", header[0], shown(rec[0]), userIDRule)
	case !ok2:
		return 0, 0, at, fmt.Sprintf("%s %s is not %s", header[1], shown(rec[1]), userIDRule)
	case err3 != nil:
		return 0, 0, at, fmt.Sprintf("%s %s is not YYYY-MM-DD HH:MM:SS[.ffffff]", header[2], shown(rec[2]))
	}
	return from, to, at, ""
}

// read yields the rows of a CSV file after checking its header, one of
// headers: parse makes a row of a record's trimmed fields, as many as the
// header has, or says why it cannot. A record that cannot be read at all,
// or is over MaxRecord, ends the file (see records).
func read[T any](name string, r io.Reader, headers [][]string, parse func(pos db.Pos, rec []string) (T, string)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		bad := func(line int, reason string) bool {
			return yield(zero, &db.RowError{Pos: db.Pos{File: name, Line: line}, Reason: reason})
		}
		rs := newRecords(r)
		rec, _, err := rs.read()
		var header []string
		var spelled []string
		for _, h := range headers {
			if err == nil && strings.EqualFold(strings.Join(trimAll(rec), ","), strings.Join(h, ",")) {
				header = h
			}
			spelled = append(spelled, strings.Join(h, ","))
		}
		if header == nil {
			reason := "the header must be " + strings.Join(spelled, " or ")
			if errors.Is(err, errTooLong) {
				reason = err.Error()
			}
			bad(1, reason)
			return
		}
		for {
			rec, line, err := rs.read()
			if err == io.EOF {
				return
			}
			if err != nil {
				bad(line, err.Error())
				return
			}
			if len(rec) != len(header) {
				if !bad(line, fmt.Sprintf("%d fields, want %d", len(rec), len(header))) {
					return
				}
				continue
			}
			row, reason := parse(db.Pos{File: name, Line: line}, trimAll(rec))
			if reason != "" {
				if !bad(line, reason) {
					return
				}
				continue
			}
			if !yield(row, nil) {
				return
			}
		}
	}
}

func trimAll(rec []string) []string {
	for i := range rec {
		rec[i] = strings.TrimSpace(rec[i])
	}
	return rec
}

// WriteUsers writes users.csv, as ReadUsers reads it, to w: the header,
// then a user a line, an active one's DeactivatedAt empty, as is the
// ExternalId of one without. It returns how many users it wrote.
func WriteUsers(w io.Writer, users iter.Seq2[db.UserRow, error]) (int, error) {
	return write(w, usersHeader, users, func(u db.UserRow) []string {
		deactivated := ""
		if !u.DeactivatedAt.IsZero() {
			deactivated = formatTime(u.DeactivatedAt)
		}
		return []string{strconv.FormatInt(u.ID, 10), u.Name, u.SecurityStamp, deactivated, u.ExternalID}
	})
}

func formatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// flags are how a setting is written.
var flags = map[bool]string{false: "0", true: "1"}

// SequencePath is where the sequence file of a users.csv goes by default:
// beside it, users.sequence.csv for users.csv.
func SequencePath(usersPath string) string {
	return strings.TrimSuffix(usersPath, ".csv") + ".sequence.csv"
}

// WriteSequence writes the sequence file, as ReadSequence reads it, to w:
// the header and the highest user id ever given out.
func WriteSequence(w io.Writer, lastUserID int64) error {
	cw := csv.NewWriter(w)
	cw.Write(sequenceHeader)
	cw.Write([]string{strconv.FormatInt(lastUserID, 10)})
	cw.Flush()
	return cw.Error()
}

// ReadSequence reads the sequence file from r, called name in errors: the
// highest user id ever given out.
func ReadSequence(name string, r io.Reader) (int64, error) {
	var last int64
	n := 0
	for v, err := range read(name, r, [][]string{sequenceHeader}, func(pos db.Pos, rec []string) (int64, string) {
		id, ok := parseLastUserID(rec[0])
		if !ok {
			return 0, fmt.Sprintf("LastUserId %s is not %s", shown(rec[0]), lastUserIDRule)
		}
		return id, ""
	}) {
		if err != nil {
			return 0, err
		}
		last = v
		n++
	}
	if n != 1 {
		return 0, &db.RowError{Pos: db.Pos{File: name, Line: 2}, Reason: fmt.Sprintf("want one LastUserId, not %d", n)}
	}
	return last, nil
}

// WriteFollows writes follows.csv, as ReadFollows reads it, to w: the
// header, then a follow a line, its time in TimeLayout and its settings as
// 0 or 1. It returns how many follows it wrote.
func WriteFollows(w io.Writer, follows iter.Seq2[db.FollowRow, error]) (int, error) {
	return write(w, followsHeader, follows, func(f db.FollowRow) []string {
		return []string{strconv.FormatInt(f.Follower, 10), strconv.FormatInt(f.Followee, 10), formatTime(f.At), flags[f.Muted], flags[!f.NotificationsOff]}
	})
}

// WriteBlocks writes blocks.csv, as ReadBlocks reads it, to w: the header,
// then a block a line. It returns how many blocks it wrote.
func WriteBlocks(w io.Writer, blocks iter.Seq2[db.BlockRow, error]) (int, error) {
	return write(w, blocksHeader, blocks, func(b db.BlockRow) []string {
		return []string{strconv.FormatInt(b.Blocker, 10), strconv.FormatInt(b.Blocked, 10), formatTime(b.At)}
	})
}

// write writes the header and then each row as record makes it; the
// first error, of the rows or of w, ends it.
func write[T any](w io.Writer, header []string, rows iter.Seq2[T, error], record func(T) []string) (int, error) {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return 0, err
	}
	n := 0
	for row, err := range rows {
		if err != nil {
			return n, err
		}
		if err := cw.Write(record(row)); err != nil {
			return n, err
		}
		n++
	}
	cw.Flush()
	return n, cw.Error()
}
