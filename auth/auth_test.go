package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestVerify(t *testing.T) {
	tokens := NewTokens([]byte("secret"), time.Hour)
	good := tokens.Mint(42)
	other := NewTokens([]byte("other secret"), time.Hour).Mint(42)
	expired := NewTokens([]byte("secret"), -time.Second).Mint(42)
	payload, sig, _ := strings.Cut(good, ".")
	forged := b64.EncodeToString([]byte("v1:1:99999999999")) + "." + sig

	tests := []struct {
		name    string
		token   string
		wantID  int64
		wantErr error
	}{
		{"minted here", good, 42, nil},
		{"other secret", other, 0, ErrInvalidToken},
		{"expired", expired, 0, ErrExpiredToken},
		{"payload swapped", forged, 0, ErrInvalidToken},
		{"signature cut", payload + "." + sig[:len(sig)-2], 0, ErrInvalidToken},
		{"no signature", payload, 0, ErrInvalidToken},
		{"empty", "", 0, ErrInvalidToken},
		{"garbage", "%%%.###", 0, ErrInvalidToken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := tokens.Verify(tc.token)
			if id != tc.wantID || !errors.Is(err, tc.wantErr) {
				t.Errorf("Verify = %d, %v; want %d, %v", id, err, tc.wantID, tc.wantErr)
			}
		})
	}
}

func TestMiddleware(t *testing.T) {
	tokens := NewTokens([]byte("secret"), time.Hour)
	tests := []struct {
		header  string
		wantID  int64
		wantErr error
	}{
		{"", 0, ErrNoToken},
		{"Bearer " + tokens.Mint(7), 7, nil},
		{"bearer " + tokens.Mint(7), 7, nil},
		{"Basic dXNlcjpwYXNz", 0, ErrInvalidToken},
		{"Bearer nonsense", 0, ErrInvalidToken},
	}
	for _, tc := range tests {
		var id int64
		var err error
		h := tokens.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, err = Viewer(r.Context())
		}))
		r := httptest.NewRequest("POST", "/graphql", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if id != tc.wantID || !errors.Is(err, tc.wantErr) {
			t.Errorf("header %q: viewer %d, %v; want %d, %v", tc.header, id, err, tc.wantID, tc.wantErr)
		}
	}
}
