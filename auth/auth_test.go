package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testSecret is a secret of the shortest length NewTokens takes.
var testSecret = []byte(strings.Repeat("s", MinSecret))

func mustTokens(t testing.TB, secret []byte, ttl time.Duration) *Tokens {
	t.Helper()
	tokens, err := NewTokens(secret, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// signed makes a token with any payload, signed as Mint signs: what
// someone holding the secret could forge.
func signed(t *Tokens, payload string) string {
	return b64.EncodeToString([]byte(payload)) + "." + b64.EncodeToString(t.sign(payload))
}

func TestVerify(t *testing.T) {
	tokens := mustTokens(t, testSecret, time.Hour)
	good := tokens.Mint(42, "stamp42")
	other := mustTokens(t, []byte(strings.Repeat("o", MinSecret)), time.Hour).Mint(42, "stamp42")
	expired := mustTokens(t, testSecret, -time.Second).Mint(42, "stamp42")
	payload, sig, _ := strings.Cut(good, ".")
	forged := b64.EncodeToString([]byte("v2:1:1:99999999999:stamp42")) + "." + sig
	now := time.Now().Unix()
	at := func(iat, exp int64) string {
		return signed(tokens, "v2:42:"+itoa(iat)+":"+itoa(exp)+":stamp42")
	}

	tests := []struct {
		name      string
		token     string
		wantClaim Claim
		wantErr   error
	}{
		{"minted here", good, Claim{42, "stamp42"}, nil},
		{"other secret", other, Claim{}, ErrInvalidToken},
		{"expired", expired, Claim{}, ErrExpiredToken},
		{"payload swapped", forged, Claim{}, ErrInvalidToken},
		{"signature cut", payload + "." + sig[:len(sig)-2], Claim{}, ErrInvalidToken},
		{"no signature", payload, Claim{}, ErrInvalidToken},
		{"empty", "", Claim{}, ErrInvalidToken},
		{"garbage", "%%%.###", Claim{}, ErrInvalidToken},
		// A token's age is capped by the ttl in force, whatever expiry it
		// carries: a ten-year token issued two hours ago is expired.
		{"older than the ttl, far expiry", at(now-2*3600, now+10*365*24*3600), Claim{}, ErrExpiredToken},
		{"younger than the ttl", at(now-1800, now+1800), Claim{42, "stamp42"}, nil},
		{"issued in the future", at(now+3600, now+7200), Claim{}, ErrInvalidToken},
		// Tokens of the old format carry no stamp and are refused, signed
		// or not; so is a v2 token without a stamp.
		{"v1 token", signed(tokens, "v1:42:"+itoa(now+3600)), Claim{}, ErrInvalidToken},
		{"no stamp", signed(tokens, "v2:42:"+itoa(now)+":"+itoa(now+3600)+":"), Claim{}, ErrInvalidToken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tokens.Verify(tc.token)
			if c != tc.wantClaim || !errors.Is(err, tc.wantErr) {
				t.Errorf("Verify = %+v, %v; want %+v, %v", c, err, tc.wantClaim, tc.wantErr)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A stamp may hold any text, a colon included, and still comes back whole.
func TestStampWithAColon(t *testing.T) {
	tokens := mustTokens(t, testSecret, time.Hour)
	c, err := tokens.Verify(tokens.Mint(7, "a:b:c"))
	if err != nil || c != (Claim{7, "a:b:c"}) {
		t.Errorf("Verify = %+v, %v", c, err)
	}
}

func TestMinimumSecret(t *testing.T) {
	for _, n := range []int{0, 3, MinSecret - 1} {
		if _, err := NewTokens([]byte(strings.Repeat("x", n)), time.Hour); !errors.Is(err, ErrShortSecret) {
			t.Errorf("a %d-byte secret: %v, want ErrShortSecret", n, err)
		}
	}
	if _, err := NewTokens(RandomSecret(), time.Hour); err != nil {
		t.Errorf("RandomSecret refused: %v", err)
	}
}

func TestClaimHolds(t *testing.T) {
	c := Claim{UserID: 5, Stamp: "abc"}
	tests := []struct {
		id    int64
		stamp string
		want  bool
	}{
		{5, "abc", true},
		{5, "abd", false}, // the account was deleted and its id given again
		{6, "abc", false},
		{5, "", false},
	}
	for _, tc := range tests {
		if got := c.Holds(tc.id, tc.stamp); got != tc.want {
			t.Errorf("Holds(%d, %q) = %v, want %v", tc.id, tc.stamp, got, tc.want)
		}
	}
	if (Claim{UserID: 5}).Holds(5, "") {
		t.Error("an empty claim stamp holds for an empty row stamp")
	}
}

func TestMiddleware(t *testing.T) {
	tokens := mustTokens(t, testSecret, time.Hour)
	tests := []struct {
		header    string
		wantClaim Claim
		wantErr   error
	}{
		{"", Claim{}, ErrNoToken},
		{"Bearer " + tokens.Mint(7, "s7"), Claim{7, "s7"}, nil},
		{"bearer " + tokens.Mint(7, "s7"), Claim{7, "s7"}, nil},
		{"Basic dXNlcjpwYXNz", Claim{}, ErrInvalidToken},
		{"Bearer nonsense", Claim{}, ErrInvalidToken},
	}
	for _, tc := range tests {
		var c Claim
		var err error
		h := tokens.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err = Viewer(r.Context())
		}))
		r := httptest.NewRequest("POST", "/graphql", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if c != tc.wantClaim || !errors.Is(err, tc.wantErr) {
			t.Errorf("header %q: claim %+v, %v; want %+v, %v", tc.header, c, err, tc.wantClaim, tc.wantErr)
		}
	}
}
