package auth

import (
	"crypto/hmac"
	"crypto/sha256"
)

// cursorKeyLabel derives the key that signs cursors from the token secret.
// A key of their own keeps a cursor's signature from ever serving as a
// token's, whatever the two payloads hold.
const cursorKeyLabel = "follows: cursor signing key v1"

// SignCursor is the HMAC-SHA256 of a cursor's payload under a key derived
// from the token secret: every instance sharing the secret signs and
// checks the same cursors, so a cursor from one resumes on another, and no
// one without the secret can make one.
func (t *Tokens) SignCursor(payload []byte) []byte {
	k := hmac.New(sha256.New, t.secret)
	k.Write([]byte(cursorKeyLabel))
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write(payload)
	return m.Sum(nil)
}
