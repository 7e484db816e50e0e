package model

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"follows/db"
)

// testSigner signs as auth.Tokens does, under a key of its own.
type testSigner string

func (k testSigner) SignCursor(p []byte) []byte {
	m := hmac.New(sha256.New, []byte(k))
	m.Write(p)
	return m.Sum(nil)
}

// An event cursor resumes its own viewer's stream at its position, under
// the secret that signed it, and nothing else: edited, cut, signed under
// another secret, of another viewer, or of the unsigned earlier form.
func TestEventCursorsAreSignedForTheirViewer(t *testing.T) {
	k := testSigner("the secret")
	c := EncodeEventCursor(k, 7, 1<<40)
	if id, err := DecodeEventCursor(k, 7, c); err != nil || id != 1<<40 {
		t.Fatalf("round trip: %d, %v", id, err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(c)
	edited := append([]byte(nil), raw...)
	edited[len(eventCursorPrefix)] = '8' // viewer 8
	for name, tc := range map[string]struct {
		cursor string
		want   error
	}{
		"edited":               {base64.RawURLEncoding.EncodeToString(edited), ErrBadCursor},
		"cut":                  {base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1]), ErrBadCursor},
		"of another secret":    {EncodeEventCursor(testSigner("another"), 7, 1<<40), ErrBadCursor},
		"of another viewer":    {EncodeEventCursor(k, 8, 1<<40), ErrOtherViewersCursor},
		"of the unsigned form": {EncodeCursor(ListFollowEvents, db.Cursor{At: time.Unix(0, 0), ID: 1}), ErrOldEventCursor},
		"of another list":      {EncodeCursor(ListFollowers, db.Cursor{At: time.Unix(0, 0), ID: 1}), ErrBadCursor},
		"not base64":           {"!!", ErrBadCursor},
		"shorter than a MAC":   {"YWJj", ErrBadCursor},
	} {
		if _, err := DecodeEventCursor(k, 7, tc.cursor); !errors.Is(err, tc.want) {
			t.Errorf("a cursor %s: %v, want %v", name, err, tc.want)
		}
	}
}
