package auth

import (
	"strings"
	"testing"
	"time"
)

// Verify never panics, and accepts only what Mint makes: a token that
// verifies is, byte for byte, the one minted for its payload.
func FuzzVerify(f *testing.F) {
	tokens := NewTokens([]byte("fuzz secret"), time.Hour)
	f.Add(tokens.Mint(1))
	f.Add(tokens.Mint(1 << 40))
	f.Add("")
	f.Add(".")
	f.Add("djE6MToxNzk4NjAwOTcy.AAAA")
	f.Add(strings.Repeat("A", 500) + "." + strings.Repeat("B", 43))
	f.Fuzz(func(t *testing.T, token string) {
		id, err := tokens.Verify(token)
		if err != nil {
			return
		}
		payload, _, _ := strings.Cut(token, ".")
		raw, _ := b64.DecodeString(payload)
		if want := b64.EncodeToString(raw) + "." + b64.EncodeToString(tokens.sign(string(raw))); token != want || id <= 0 {
			t.Fatalf("%q verified as user %d but is not a minted token", token, id)
		}
	})
}
