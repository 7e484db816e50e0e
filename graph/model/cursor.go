package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"follows/db"
)

// List names the list a cursor belongs to. A cursor is opaque to clients:
// base64 of "list|seconds.nanos|id" and a four-byte checksum. Naming its
// list lets a cursor from one list be refused by another rather than
// silently paging from a wrong place; the checksum refuses a cursor that
// was edited or cut. It is an integrity check, not a signature: a cursor
// holds nothing secret, and one forged with care would only choose where a
// page starts. As the name is in every cursor handed out, a list's name
// never changes: the cursors clients hold must keep decoding.
type List string

// The lists that page with cursors.
const (
	ListFollowers List = "followers"
	ListFollowing List = "following"
	ListMutual    List = "mutual"
	ListUsers     List = "users"
	ListBlocked   List = "blocked"
	// ListFollowEvents is Subscription.followEvents. Its cursors are
	// signed and bound to their viewer (eventcursor.go); this list's
	// unsigned form is only recognised, to be refused as expired.
	ListFollowEvents List = "followEvents"
)

// ErrBadCursor is what DecodeCursor returns for anything but a cursor of
// its list.
var ErrBadCursor = errors.New("not a cursor of this list")

// EncodeCursor makes the opaque cursor of a position in a list.
func EncodeCursor(list List, c db.Cursor) string {
	s := string(list) + "|" + strconv.FormatInt(c.At.Unix(), 10) + "." + strconv.Itoa(c.At.Nanosecond()) +
		"|" + strconv.FormatInt(c.ID, 10)
	return base64.RawURLEncoding.EncodeToString(append([]byte(s), checksum(s)...))
}

func checksum(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:4]
}

// DecodeCursor reads a cursor of the list, refusing one of another list
// and anything that is not a cursor.
func DecodeCursor(list List, s string) (db.Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 5 {
		return db.Cursor{}, ErrBadCursor
	}
	payload, sum := string(raw[:len(raw)-4]), raw[len(raw)-4:]
	if !bytes.Equal(sum, checksum(payload)) {
		return db.Cursor{}, ErrBadCursor
	}
	parts := strings.Split(payload, "|")
	if len(parts) != 3 || parts[0] != string(list) {
		return db.Cursor{}, ErrBadCursor
	}
	secs, nanos, ok := strings.Cut(parts[1], ".")
	if !ok {
		return db.Cursor{}, ErrBadCursor
	}
	sec, err1 := strconv.ParseInt(secs, 10, 64)
	nsec, err2 := strconv.ParseInt(nanos, 10, 64)
	id, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || nsec < 0 || nsec > 999_999_999 || id <= 0 {
		return db.Cursor{}, ErrBadCursor
	}
	at := time.Unix(sec, nsec).UTC()
	if at.Year() < 1 || at.Year() > 9999 {
		return db.Cursor{}, ErrBadCursor
	}
	return db.Cursor{At: at, ID: id}, nil
}
