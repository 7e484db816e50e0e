package auth

import (
	"strings"
	"testing"
	"time"
)

// Verify never panics, and accepts only what Mint makes: a token that
// verifies is, byte for byte, the one minted for its payload, and its
// claim names a user and a stamp.
func FuzzVerify(f *testing.F) {
	tokens, err := NewTokens([]byte(strings.Repeat("fuzz secret ", 3)), time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tokens.Mint(1, "0123456789abcdef0123456789abcdef"))
	f.Add(tokens.Mint(1<<40, "a:b"))
	f.Add("")
	f.Add(".")
	f.Add("djE6MToxNzk4NjAwOTcy.AAAA")
	f.Add(strings.Repeat("A", 500) + "." + strings.Repeat("B", 43))
	f.Fuzz(func(t *testing.T, token string) {
		c, err := tokens.Verify(token)
		if err != nil {
			return
		}
		payload, _, _ := strings.Cut(token, ".")
		raw, _ := b64.DecodeString(payload)
		if want := b64.EncodeToString(raw) + "." + b64.EncodeToString(tokens.sign(string(raw))); token != want || c.UserID <= 0 || c.Stamp == "" {
			t.Fatalf("%q verified as %+v but is not a minted token", token, c)
		}
	})
}
