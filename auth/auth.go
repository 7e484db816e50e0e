// Package auth mints and checks the bearer tokens that say which user a
// request comes from. A token is the user's id, its security stamp, when
// it was issued and when it expires, signed with HMAC-SHA256 under a
// secret that every server instance shares, so any instance can verify any
// token without shared state.
//
// The stamp is a random value kept on the user's row: it dies with the
// account, so a token never outlives its user nor passes to a later user
// given the same id. Checking it against the row is the caller's part (see
// Claim); this package only proves that the server minted the token.
package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
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

// MinSecret is the shortest secret NewTokens takes, in bytes: HMAC-SHA256
// under a shorter (or guessable) secret can be searched offline from any
// one token, and then tokens forged for anyone.
const MinSecret = 32

// ErrShortSecret is NewTokens' refusal of a secret under MinSecret bytes.
var ErrShortSecret = fmt.Errorf("the token secret must be at least %d bytes", MinSecret)

// tokenVersion prefixes the signed text so that the format can change
// without old tokens being read the new way. v1 tokens (id and expiry
// only) carried no stamp and are refused.
const tokenVersion = "v2"

// clockSkew is how far in the future a token's issue time may be: the
// clocks of the instances sharing a secret differ a little.
const clockSkew = time.Minute

// Strict, so that each token has one spelling.
var b64 = base64.RawURLEncoding.Strict()

// Tokens mints and verifies tokens under one secret, and, when told to
// (AcceptOIDC), verifies an OpenID Connect provider's tokens too.
type Tokens struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time
	oidc   *OIDC
}

// AcceptOIDC has Authenticate take the tokens of the provider o verifies
// besides the server's own. Call it before serving.
func (t *Tokens) AcceptOIDC(o *OIDC) { t.oidc = o }

// NewTokens returns Tokens signing with secret, which must be at least
// MinSecret bytes. ttl is both how long a minted token lasts and the
// oldest a token may be when verified, whatever expiry it carries.
func NewTokens(secret []byte, ttl time.Duration) (*Tokens, error) {
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("%w, not %d", ErrShortSecret, len(secret))
	}
	return &Tokens{secret: secret, ttl: ttl, now: time.Now}, nil
}

// RandomSecret returns a new secret of MinSecret random bytes.
func RandomSecret() []byte {
	b := make([]byte, MinSecret)
	rand.Read(b)
	return b
}

// A Claim is what a verified token says: the user it was minted for and
// that user's security stamp at the time. The token is the server's, but
// the claim holds only while the user's row still has that stamp.
//
// A provider's token (see OIDC) becomes the same claim, of the account its
// subject is kept with, as the account was when looked up: the user's
// row is then checked the same way whichever kind of token named it.
type Claim struct {
	UserID int64
	Stamp  string
}

// Holds reports whether the claim names the user whose row has this
// stamp. An empty stamp matches nothing. The comparison takes the same
// time wherever the stamps differ.
func (c Claim) Holds(userID int64, stamp string) bool {
	return c.UserID == userID && stamp != "" && subtle.ConstantTimeCompare([]byte(c.Stamp), []byte(stamp)) == 1
}

// Mint returns a token for the user whose row has the stamp.
func (t *Tokens) Mint(userID int64, stamp string) string {
	now := t.now()
	// The stamp goes last: it is the row's text, and whatever it holds
	// cannot shift the fields before it.
	payload := fmt.Sprintf("%s:%d:%d:%d:%s", tokenVersion, userID, now.Unix(), now.Add(t.ttl).Unix(), stamp)
	return b64.EncodeToString([]byte(payload)) + "." + b64.EncodeToString(t.sign(payload))
}

func (t *Tokens) sign(payload string) []byte {
	m := hmac.New(sha256.New, t.secret)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Verify returns what a token minted by these Tokens claims. A token older
// than the ttl is expired even when its own expiry is later: a token
// minted under a longer ttl, or forged with a far expiry by someone who
// once had the secret, lasts no longer than the ttl in force.
func (t *Tokens) Verify(token string) (Claim, error) {
	c, _, err := t.verify(token)
	return c, err
}

// verify is Verify, also telling when the token stops being accepted:
// at its own expiry, or once it is as old as the ttl, whichever is first.
func (t *Tokens) verify(token string) (Claim, time.Time, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok {
		return Claim{}, time.Time{}, ErrInvalidToken
	}
	payload, err := b64.DecodeString(p)
	if err != nil {
		return Claim{}, time.Time{}, ErrInvalidToken
	}
	mac, err := b64.DecodeString(sig)
	if err != nil {
		return Claim{}, time.Time{}, ErrInvalidToken
	}
	// hmac.Equal takes the same time wherever the first difference is.
	if !hmac.Equal(mac, t.sign(string(payload))) {
		return Claim{}, time.Time{}, ErrInvalidToken
	}
	fields := strings.SplitN(string(payload), ":", 5)
	if len(fields) != 5 || fields[0] != tokenVersion || fields[4] == "" {
		return Claim{}, time.Time{}, ErrInvalidToken
	}
	id, err1 := strconv.ParseInt(fields[1], 10, 64)
	iat, err2 := strconv.ParseInt(fields[2], 10, 64)
	exp, err3 := strconv.ParseInt(fields[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || id <= 0 {
		return Claim{}, time.Time{}, ErrInvalidToken
	}
	now := t.now()
	issued := time.Unix(iat, 0)
	if issued.After(now.Add(clockSkew)) {
		return Claim{}, time.Time{}, ErrInvalidToken
	}
	if now.Unix() >= exp || now.Sub(issued) >= t.ttl {
		return Claim{}, time.Time{}, ErrExpiredToken
	}
	expires := time.Unix(exp, 0)
	if old := issued.Add(t.ttl); old.Before(expires) {
		expires = old
	}
	return Claim{UserID: id, Stamp: fields[4]}, expires, nil
}

type viewerKey struct{}

type viewer struct {
	claim Claim
	err   error
	// pending, if not nil, is a provider token's claim, looked up when
	// first asked for.
	pending *pending
	// expires is when the token stops being accepted (zero without one).
	expires time.Time
}

// Middleware reads the Authorization header and records in the request's
// context what its token claims, or why there is no claim. A bad token
// does not fail the request: queries still answer anonymously, and what
// needs a viewer says why it has none.
func (t *Tokens) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(t.Authenticate(r.Context(), r.Header.Get("Authorization"))))
	})
}

// Authenticate records in ctx what the value of an Authorization header
// ("Bearer <token>", or empty) claims, or why it claims nothing. It is the
// one place a credential becomes a viewer: HTTP requests reach it through
// Middleware, and transports without headers per operation (a websocket's
// connection_init payload) call it directly.
//
// A JWT (three dot-separated parts; the server's own tokens have two) is
// the provider's when AcceptOIDC was called: it is verified here, and its
// subject's account looked up when Viewer is first asked.
func (t *Tokens) Authenticate(ctx context.Context, authorization string) context.Context {
	v := viewer{err: ErrNoToken}
	if authorization != "" {
		scheme, token, ok := strings.Cut(authorization, " ")
		token = strings.TrimSpace(token)
		switch {
		case !ok || !strings.EqualFold(scheme, "Bearer"):
			v.err = ErrInvalidToken
		case t.oidc != nil && strings.Count(token, ".") == 2:
			var id Identity
			if id, v.expires, v.err = t.oidc.verify(ctx, token); v.err == nil {
				v.pending = &pending{o: t.oidc, id: id}
			}
		default:
			v.claim, v.expires, v.err = t.verify(token)
		}
	}
	return context.WithValue(ctx, viewerKey{}, v)
}

// Viewer returns what the request's token claims, or why there is no
// claim: one of this package's errors, or ErrAccountLookup wrapping why a
// provider token's account could not be looked up. It does not check the
// claim against the user's row: see Claim.Holds.
func Viewer(ctx context.Context) (Claim, error) {
	v, ok := ctx.Value(viewerKey{}).(viewer)
	if !ok {
		return Claim{}, ErrNoToken
	}
	if v.pending != nil {
		return v.pending.resolve(ctx)
	}
	return v.claim, v.err
}

// Expires is when the credential ctx was authenticated with stops being
// accepted, as Authenticate would judge it then; zero when there is no
// valid one. A request checks its token once, as it arrives; a
// connection that outlives it (a websocket) must end by this time.
func Expires(ctx context.Context) time.Time {
	v, ok := ctx.Value(viewerKey{}).(viewer)
	if !ok || v.err != nil {
		return time.Time{}
	}
	return v.expires
}
