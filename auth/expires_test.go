package auth

import (
	"context"
	"testing"
	"time"
)

// Expires is when a token stops being accepted: its own expiry, or once
// it is as old as the ttl, whichever is first; zero without a valid one.
func TestExpires(t *testing.T) {
	tokens := mustTokens(t, testSecret, time.Hour)
	now := time.Now().Unix()
	at := func(iat, exp int64) string {
		return "Bearer " + signed(tokens, "v2:42:"+itoa(iat)+":"+itoa(exp)+":stamp42")
	}
	for _, tc := range []struct {
		name, authorization string
		want                time.Time
	}{
		{"its own expiry first", at(now-60, now+60), time.Unix(now+60, 0)},
		{"the ttl first", at(now-1800, now+7200), time.Unix(now-1800, 0).Add(time.Hour)},
		{"expired", at(now-60, now-1), time.Time{}},
		{"no token", "", time.Time{}},
		{"not a token", "Bearer nonsense", time.Time{}},
	} {
		if got := Expires(tokens.Authenticate(context.Background(), tc.authorization)); !got.Equal(tc.want) {
			t.Errorf("%s: expires %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := Expires(context.Background()); !got.IsZero() {
		t.Errorf("a context without a credential: expires %v", got)
	}
}
