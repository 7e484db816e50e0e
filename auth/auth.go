// Package auth mints and checks the bearer tokens that say which user a
// request comes from. A token is the user's id and an expiry, signed with
// HMAC-SHA256 under a secret that every server instance shares, so any
// instance can verify any token without shared state.
package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Errors that say why a request has no viewer.
var (
	ErrNoToken      = errors.New("no bearer token")
	ErrInvalidToken = errors.New("invalid bearer token")
	ErrExpiredToken = errors.New("expired bearer token")
)

// tokenVersion prefixes the signed text so that the format can change
// without old tokens being read the new way.
const tokenVersion = "v1"

// Strict, so that each token has one spelling.
var b64 = base64.RawURLEncoding.Strict()

// Tokens mints and verifies tokens under one secret.
type Tokens struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time
}

// NewTokens returns Tokens signing with secret; minted tokens last ttl.
func NewTokens(secret []byte, ttl time.Duration) *Tokens {
	return &Tokens{secret: secret, ttl: ttl, now: time.Now}
}

// RandomSecret returns a new 32-byte secret.
func RandomSecret() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}

// Mint returns a token for the user.
func (t *Tokens) Mint(userID int64) string {
	payload := fmt.Sprintf("%s:%d:%d", tokenVersion, userID, t.now().Add(t.ttl).Unix())
	return b64.EncodeToString([]byte(payload)) + "." + b64.EncodeToString(t.sign(payload))
}

func (t *Tokens) sign(payload string) []byte {
	m := hmac.New(sha256.New, t.secret)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Verify returns the user id a token was minted for.
func (t *Tokens) Verify(token string) (int64, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok {
		return 0, ErrInvalidToken
	}
	payload, err := b64.DecodeString(p)
	if err != nil {
		return 0, ErrInvalidToken
	}
	mac, err := b64.DecodeString(sig)
	if err != nil {
		return 0, ErrInvalidToken
	}
	// hmac.Equal takes the same time wherever the first difference is.
	if !hmac.Equal(mac, t.sign(string(payload))) {
		return 0, ErrInvalidToken
	}
	fields := strings.Split(string(payload), ":")
	if len(fields) != 3 || fields[0] != tokenVersion {
		return 0, ErrInvalidToken
	}
	id, err1 := strconv.ParseInt(fields[1], 10, 64)
	exp, err2 := strconv.ParseInt(fields[2], 10, 64)
	if err1 != nil || err2 != nil || id <= 0 {
		return 0, ErrInvalidToken
	}
	if t.now().Unix() >= exp {
		return 0, ErrExpiredToken
	}
	return id, nil
}

type viewerKey struct{}

type viewer struct {
	id  int64
	err error
}

// Middleware reads the Authorization header and records in the request's
// context who the viewer is, or why there is none. A bad token does not
// fail the request: queries still answer anonymously, and what needs a
// viewer says why it has none.
func (t *Tokens) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := viewer{err: ErrNoToken}
		if h := r.Header.Get("Authorization"); h != "" {
			scheme, token, ok := strings.Cut(h, " ")
			if ok && strings.EqualFold(scheme, "Bearer") {
				v.id, v.err = t.Verify(strings.TrimSpace(token))
			} else {
				v.err = ErrInvalidToken
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, v)))
	})
}

// Viewer returns the id of the user the request's token names, or why
// there is none. It does not check that the user still exists.
func Viewer(ctx context.Context) (int64, error) {
	v, ok := ctx.Value(viewerKey{}).(viewer)
	if !ok {
		return 0, ErrNoToken
	}
	return v.id, v.err
}
