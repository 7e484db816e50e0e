package resolvers

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"follows/db"
)

// A cursor is opaque to clients: base64 of "list|seconds.nanos|id". Naming
// its list lets a cursor from one list be refused by another rather than
// silently paging from a wrong place.
const (
	listFollowers = "followers"
	listFollowing = "following"
	listMutual    = "mutual"
	listUsers     = "users"
)

var errBadCursor = errors.New("not a cursor of this list")

func encodeCursor(list string, c db.Cursor) string {
	s := list + "|" + strconv.FormatInt(c.At.Unix(), 10) + "." + strconv.Itoa(c.At.Nanosecond()) +
		"|" + strconv.FormatInt(c.ID, 10)
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func decodeCursor(list, s string) (db.Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return db.Cursor{}, errBadCursor
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 || parts[0] != list {
		return db.Cursor{}, errBadCursor
	}
	secs, nanos, ok := strings.Cut(parts[1], ".")
	if !ok {
		return db.Cursor{}, errBadCursor
	}
	sec, err1 := strconv.ParseInt(secs, 10, 64)
	nsec, err2 := strconv.ParseInt(nanos, 10, 64)
	id, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || nsec < 0 || nsec > 999_999_999 || id <= 0 {
		return db.Cursor{}, errBadCursor
	}
	at := time.Unix(sec, nsec).UTC()
	if at.Year() < 1 || at.Year() > 9999 {
		return db.Cursor{}, errBadCursor
	}
	return db.Cursor{At: at, ID: id}, nil
}
