package model

import (
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// CursorSigner signs cursors under the server's secret (auth.Tokens).
type CursorSigner interface {
	SignCursor(payload []byte) []byte
}

// An event cursor (Subscription.followEvents) says where a viewer's stream
// of events resumes. Unlike a list cursor it decides what is read, and a
// resume costs the server work, so it is signed: base64 of
// "followEvents|v2|viewer|id" and the first 16 bytes of its signature
// (CursorSigner). Only the server makes one, and only for the viewer it
// was sent to.
const eventCursorPrefix = string(ListFollowEvents) + "|v2|"

// eventCursorMAC is how many bytes of the signature a cursor carries:
// 128 bits, beyond any online guessing.
const eventCursorMAC = 16

// Why DecodeEventCursor refuses a cursor; ErrBadCursor is anything else.
var (
	// ErrOtherViewersCursor is a cursor the server made for another
	// viewer.
	ErrOtherViewersCursor = errors.New("a cursor of another viewer's events")
	// ErrOldEventCursor is a followEvents cursor of the unsigned form
	// servers sent before cursors were signed: it cannot be told from a
	// forged one, so it resumes nothing.
	ErrOldEventCursor = errors.New("an unsigned followEvents cursor of an earlier version")
)

// EncodeEventCursor is the cursor, for viewer, of the event with outbox Id
// id.
func EncodeEventCursor(k CursorSigner, viewer, id int64) string {
	payload := []byte(eventCursorPrefix + strconv.FormatInt(viewer, 10) + "|" + strconv.FormatInt(id, 10))
	return base64.RawURLEncoding.EncodeToString(append(payload, k.SignCursor(payload)[:eventCursorMAC]...))
}

// DecodeEventCursor returns the outbox Id of a cursor made for viewer by
// EncodeEventCursor under the same secret.
func DecodeEventCursor(k CursorSigner, viewer int64, s string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) <= eventCursorMAC {
		return 0, ErrBadCursor
	}
	payload, mac := raw[:len(raw)-eventCursorMAC], raw[len(raw)-eventCursorMAC:]
	rest, signed := strings.CutPrefix(string(payload), eventCursorPrefix)
	if !signed {
		if _, err := DecodeCursor(ListFollowEvents, s); err == nil {
			return 0, ErrOldEventCursor
		}
		return 0, ErrBadCursor
	}
	// hmac.Equal takes the same time wherever the first difference is.
	if !hmac.Equal(mac, k.SignCursor(payload)[:eventCursorMAC]) {
		return 0, ErrBadCursor
	}
	v, ids, ok := strings.Cut(rest, "|")
	who, err1 := strconv.ParseInt(v, 10, 64)
	id, err2 := strconv.ParseInt(ids, 10, 64)
	if !ok || err1 != nil || err2 != nil || id < 0 {
		return 0, ErrBadCursor
	}
	if who != viewer {
		return 0, ErrOtherViewersCursor
	}
	return id, nil
}
