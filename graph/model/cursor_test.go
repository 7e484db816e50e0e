package model

import (
	"encoding/base64"
	"testing"
	"time"

	"follows/db"
)

func TestCursorRoundTrip(t *testing.T) {
	for _, c := range []db.Cursor{
		{At: time.Date(2026, 11, 30, 3, 15, 15, 123456700, time.UTC), ID: 7},
		{At: time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), ID: 1},
		{At: time.Date(1901, 1, 1, 0, 0, 0, 100, time.UTC), ID: 1 << 40},
	} {
		got, err := DecodeCursor(ListFollowers, EncodeCursor(ListFollowers, c))
		if err != nil || !got.At.Equal(c.At) || got.ID != c.ID {
			t.Errorf("round trip of %+v gave %+v, %v", c, got, err)
		}
	}
}

// Cursors that clients hold keep decoding: the encoded form of each list's
// cursors, as released, stays byte for byte.
func TestCursorEncodingIsStable(t *testing.T) {
	c := db.Cursor{At: time.Date(2026, 11, 30, 3, 15, 15, 123456700, time.UTC), ID: 42}
	for _, want := range []struct {
		list List
		enc  string
	}{
		{ListFollowers, "Zm9sbG93ZXJzfDE3OTYwMDg1MTUuMTIzNDU2NzAwfDQye4k-9Q"},
		{ListFollowing, "Zm9sbG93aW5nfDE3OTYwMDg1MTUuMTIzNDU2NzAwfDQy4anr9g"},
		{ListMutual, "bXV0dWFsfDE3OTYwMDg1MTUuMTIzNDU2NzAwfDQy3f5Rng"},
		{ListUsers, "dXNlcnN8MTc5NjAwODUxNS4xMjM0NTY3MDB8NDJ_ek2a"},
		{ListBlocked, "YmxvY2tlZHwxNzk2MDA4NTE1LjEyMzQ1NjcwMHw0MkShfgg"},
	} {
		if got := EncodeCursor(want.list, c); got != want.enc {
			t.Errorf("%s: cursor %q, released as %q", want.list, got, want.enc)
		}
		if got, err := DecodeCursor(want.list, want.enc); err != nil || !got.At.Equal(c.At) || got.ID != c.ID {
			t.Errorf("%s: released cursor decodes to %+v, %v", want.list, got, err)
		}
	}
	// The users list orders by id alone; its cursors carry the zero time.
	if got, want := EncodeCursor(ListUsers, db.Cursor{ID: 7}), "dXNlcnN8LTYyMTM1NTk2ODAwLjB8N7Upiqo"; got != want {
		t.Errorf("users: cursor %q, released as %q", got, want)
	}
}

func TestCursorRefused(t *testing.T) {
	// Well-formed but for the one fault each names, checksum included.
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString(append([]byte(s), checksum(s)...)) }
	good := EncodeCursor(ListFollowers, db.Cursor{At: time.Unix(5, 0), ID: 3})
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	for name, s := range map[string]string{
		"other list":    EncodeCursor(ListFollowing, db.Cursor{At: time.Unix(5, 0), ID: 3}),
		"not base64":    "!!!",
		"empty":         "",
		"two parts":     enc("followers|5.0"),
		"no nanos":      enc("followers|5|3"),
		"bad id":        enc("followers|5.0|x"),
		"zero id":       enc("followers|5.0|0"),
		"nanos too big": enc("followers|5.1000000000|3"),
		"year 10000":    enc("followers|253402300800.0|3"),
		"edited":        base64.RawURLEncoding.EncodeToString(append([]byte("followers|6.0|3"), raw[len(raw)-4:]...)),
		"cut short":     good[:len(good)-2],
		"no checksum":   base64.RawURLEncoding.EncodeToString([]byte("followers|5.0|3")),
	} {
		if _, err := DecodeCursor(ListFollowers, s); err == nil {
			t.Errorf("%s: cursor %q accepted", name, s)
		}
	}
}
