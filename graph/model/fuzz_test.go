package model

import (
	"testing"
	"time"

	"follows/db"
)

// DecodeCursor never panics, and what it accepts encodes back to itself.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(EncodeCursor(ListFollowers, db.Cursor{At: time.Date(2026, 11, 30, 3, 15, 15, 123456700, time.UTC), ID: 7}))
	f.Add(EncodeCursor(ListUsers, db.Cursor{ID: 42}))
	f.Add("")
	f.Add("Zm9sbG93ZXJzfDEuMHwx")
	f.Add("!!!!")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeCursor(ListFollowers, s)
		if err != nil {
			return
		}
		if again := EncodeCursor(ListFollowers, c); again != s {
			t.Fatalf("%q decoded to %+v, which encodes as %q", s, c, again)
		}
	})
}
