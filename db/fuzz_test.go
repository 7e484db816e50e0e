package db

import "testing"

// ValidName never panics and accepts only 1 to 32 characters of
// [A-Za-z0-9_.-]: no spaces, control characters, quotes or non-ASCII.
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"alice", "a", "", "a b", "x'); DROP TABLE Users;--", "bad\x00name", "Zoë", "_.-", "0123456789012345678901234567890123"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !ValidName(s) {
			return
		}
		if len(s) < 1 || len(s) > 32 {
			t.Fatalf("%q accepted with length %d", s, len(s))
		}
		for _, c := range []byte(s) {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
			if !ok {
				t.Fatalf("%q accepted with byte %q", s, c)
			}
		}
	})
}
