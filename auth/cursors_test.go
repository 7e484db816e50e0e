package auth

import (
	"bytes"
	"testing"
	"time"
)

// Instances sharing a secret sign a cursor alike, so that one resumes on
// another; another secret signs it otherwise; and a cursor's signature is
// never the token signature of the same text.
func TestSignCursor(t *testing.T) {
	secret := []byte("a secret of thirty-two bytes or more")
	a, _ := NewTokens(secret, time.Hour)
	b, _ := NewTokens(secret, time.Minute)
	c, _ := NewTokens([]byte("another secret of thirty-two bytes"), time.Hour)
	p := []byte("followEvents|v2|7|42")
	if !bytes.Equal(a.SignCursor(p), b.SignCursor(p)) {
		t.Error("two instances with one secret sign a cursor differently")
	}
	if bytes.Equal(a.SignCursor(p), c.SignCursor(p)) {
		t.Error("two secrets sign a cursor alike")
	}
	if bytes.Equal(a.SignCursor(p), a.sign(string(p))) {
		t.Error("a cursor's signature is the token signature of its text")
	}
}
