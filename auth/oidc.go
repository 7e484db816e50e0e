package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Sign-in through an OpenID Connect provider: the app signs its users in
// with the provider (Auth0, Keycloak, Cognito, Entra ID, ...) and sends
// the provider's JWT as the bearer token. The server checks it against the
// provider's published keys (its JWKS) and finds the account that the
// token's subject is kept with, making it on first use when told to.
//
// The JOSE work is go-jose's (github.com/go-jose/go-jose/v4, the library
// under coreos/go-oidc): its parser takes the list of algorithms a caller
// allows and refuses every other, "none" included, before any key is
// looked at, and it has no dependencies of its own.

// ErrUnknownSubject is why a valid provider token has no viewer when its
// subject has no account and accounts are not provisioned.
var ErrUnknownSubject = errors.New("no account for the provider's subject")

// ErrAccountLookup wraps a failure to look a provider token's account up
// (a store error): the token may be good, the server could not tell whose
// it is.
var ErrAccountLookup = errors.New("looking up the token's account failed")

// Leeway is how far the clocks of the provider and the server may differ:
// a token is good from a minute before its nbf and iat until a minute
// after its exp.
const Leeway = time.Minute

// RefetchEvery is the least time between two fetches of the key set that
// tokens with an unknown key id cause: a key the provider rotated in is
// found within it, and tokens with made-up key ids cannot make the server
// fetch more often.
const RefetchEvery = 10 * time.Second

// keysMaxAge is how long a fetched key set is used before it is fetched
// again, so that keys the provider retired stop being accepted.
const keysMaxAge = time.Hour

// maxJWKS bounds the key set document read, in bytes.
const maxJWKS = 1 << 20

// MaxSubject is OpenID Connect's longest subject, 255 ASCII characters;
// longer ones are refused rather than cut, which could merge two.
const MaxSubject = 255

// SubjectRule says in words what ValidSubject accepts.
var SubjectRule = fmt.Sprintf("1 to %d characters", MaxSubject)

// ValidSubject reports whether s is a subject an account can be known by:
// the rule for a provider token's subject, and for one that travels with
// an account in an export (see graphcsv).
func ValidSubject(s string) bool { return s != "" && len(s) <= MaxSubject }

// asymmetric are the signature algorithms a provider token may use: the
// public-key ones go-jose has. Never "none", never an HMAC: a verifier
// that took HS256 could be handed a token "signed" with the public key.
var asymmetric = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// OIDCConfig says which provider's tokens to accept and how accounts are
// found for them.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL, which a token's iss must equal
	// (a trailing slash on either aside).
	Issuer string
	// Audience must be one of a token's aud values: the app's client id
	// or the API's identifier at the provider.
	Audience string
	// JWKS is where the provider's keys are: an http(s) URL, fetched and
	// cached, or the path of a file holding the key set.
	JWKS string
	// UserClaim is the claim naming the account ("sub" when empty);
	// NameClaim the one a new account's name comes from
	// ("preferred_username" when empty; the subject when a token lacks it).
	UserClaim, NameClaim string
	// Provision makes an account for a subject that has none; without
	// it, such tokens are refused with ErrUnknownSubject.
	Provision bool
	// Accounts finds (or makes) the account of a subject.
	Accounts Accounts

	// Client fetches the key set (http.DefaultClient when nil); Log, if
	// not nil, hears of fetches that failed; Now is the clock (time.Now
	// when nil).
	Client *http.Client
	Log    *slog.Logger
	Now    func() time.Time
}

// Accounts is where the accounts of a provider's subjects are kept
// (db.Store).
type Accounts interface {
	// AccountFor returns the id and security stamp of subject's account,
	// making it, named after name, when create is set; id 0 when there is
	// none.
	AccountFor(ctx context.Context, subject, name string, create bool) (id int64, stamp string, err error)
}

// OIDC verifies one provider's tokens.
type OIDC struct {
	cfg  OIDCConfig
	keys keySet
}

// NewOIDC checks cfg and returns its verifier. A key set in a file is
// read at once, so that a wrong path stops the server at start; one at a
// URL is fetched when first needed (see Refresh).
func NewOIDC(cfg OIDCConfig) (*OIDC, error) {
	if cfg.Issuer == "" || cfg.Audience == "" || cfg.JWKS == "" {
		return nil, errors.New("OpenID Connect sign-in needs the issuer, the audience and the JWKS")
	}
	if cfg.Accounts == nil {
		return nil, errors.New("OpenID Connect sign-in needs a store of accounts")
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	if cfg.NameClaim == "" {
		cfg.NameClaim = "preferred_username"
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	o := &OIDC{cfg: cfg}
	o.keys.fetch = o.fetchFile
	if strings.HasPrefix(cfg.JWKS, "https://") || strings.HasPrefix(cfg.JWKS, "http://") {
		o.keys.fetch = o.fetchURL
		return o, nil
	}
	if err := o.Refresh(context.Background()); err != nil {
		return nil, err
	}
	return o, nil
}

// AcceptProvider has t take the JWTs of the provider cfg names, besides
// its own tokens. The provider's keys are fetched once now, so that a
// provider out of reach shows in cfg.Log at start; t takes its tokens
// anyway, fetching the keys again when one comes.
func (t *Tokens) AcceptProvider(ctx context.Context, cfg OIDCConfig) error {
	o, err := NewOIDC(cfg)
	if err != nil {
		return fmt.Errorf("OpenID Connect sign-in: %w", err)
	}
	if err := o.Refresh(ctx); err != nil && cfg.Log != nil {
		cfg.Log.Warn("the OpenID Connect provider's keys could not be fetched; tokens are refused until they are", "jwks", cfg.JWKS, "err", err)
	}
	t.AcceptOIDC(o)
	if cfg.Log != nil {
		cfg.Log.Info("accepting tokens of an OpenID Connect provider", "issuer", cfg.Issuer, "audience", cfg.Audience, "provision", cfg.Provision)
	}
	return nil
}

// Refresh fetches the key set now; a server calls it at start to learn
// early that the provider cannot be reached.
func (o *OIDC) Refresh(ctx context.Context) error {
	return o.keys.refresh(ctx, o.cfg.Now())
}

// An Identity is what a verified provider token says: the subject its
// account is kept by, and the name a new account would take.
type Identity struct {
	Subject, Name string
}

// claims are the registered claims and the rest, by name.
type claims struct {
	jwt.Claims
	extra map[string]any
}

// Verify checks a provider token: its signature under a key of the set,
// with the algorithm that key is for; its issuer, audience and times. It
// returns ErrInvalidToken, or ErrExpiredToken, wrapped with why.
func (o *OIDC) Verify(ctx context.Context, token string) (Identity, error) {
	id, _, err := o.verify(ctx, token)
	return id, err
}

// verify is Verify, also telling when the token stops being accepted: a
// Leeway after its exp.
func (o *OIDC) verify(ctx context.Context, token string) (Identity, time.Time, error) {
	tok, err := jwt.ParseSigned(token, asymmetric)
	if err != nil || len(tok.Headers) != 1 {
		return Identity{}, time.Time{}, fmt.Errorf("%w: not a JWT signed with a public-key algorithm", ErrInvalidToken)
	}
	h := tok.Headers[0]
	alg := jose.SignatureAlgorithm(h.Algorithm)
	var c claims
	verified := false
	for _, k := range o.keys.candidates(ctx, o.cfg.Now(), h.KeyID, alg) {
		if tok.Claims(k.Key, &c.Claims, &c.extra) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return Identity{}, time.Time{}, fmt.Errorf("%w: no key of the provider's set (kid %q, %s) verifies it", ErrInvalidToken, h.KeyID, alg)
	}
	id, err := o.check(c)
	if err != nil {
		return Identity{}, time.Time{}, err
	}
	// check refuses a token without exp.
	return id, c.Expiry.Time().Add(Leeway), nil
}

// check reads a verified token's claims.
func (o *OIDC) check(c claims) (Identity, error) {
	if strings.TrimSuffix(c.Issuer, "/") != strings.TrimSuffix(o.cfg.Issuer, "/") {
		return Identity{}, fmt.Errorf("%w: issued by %q, not %q", ErrInvalidToken, c.Issuer, o.cfg.Issuer)
	}
	if c.Expiry == nil {
		return Identity{}, fmt.Errorf("%w: it has no expiry (exp)", ErrInvalidToken)
	}
	err := c.ValidateWithLeeway(jwt.Expected{AnyAudience: jwt.Audience{o.cfg.Audience}, Time: o.cfg.Now()}, Leeway)
	if errors.Is(err, jwt.ErrExpired) {
		return Identity{}, fmt.Errorf("%w: %v", ErrExpiredToken, err)
	}
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	sub, _ := c.extra[o.cfg.UserClaim].(string)
	if !ValidSubject(sub) {
		return Identity{}, fmt.Errorf("%w: its %s claim is not a subject of %s", ErrInvalidToken, o.cfg.UserClaim, SubjectRule)
	}
	name, _ := c.extra[o.cfg.NameClaim].(string)
	if name == "" {
		name = sub
	}
	return Identity{Subject: sub, Name: name}, nil
}

// account is the claim of a provider token's subject: its account's id
// and stamp, found when first asked for (see pending).
func (o *OIDC) account(ctx context.Context, id Identity) (Claim, error) {
	uid, stamp, err := o.cfg.Accounts.AccountFor(ctx, id.Subject, id.Name, o.cfg.Provision)
	if err != nil {
		return Claim{}, fmt.Errorf("%w: %w", ErrAccountLookup, err)
	}
	if uid == 0 {
		return Claim{}, ErrUnknownSubject
	}
	return Claim{UserID: uid, Stamp: stamp}, nil
}

// pending is a provider token's claim until its account is looked up,
// which happens once for the request (or connection) the token came with,
// and only if something asks who the viewer is. A lookup that failed is
// tried again by the next one to ask.
type pending struct {
	o  *OIDC
	id Identity

	mu    sync.Mutex
	done  bool
	claim Claim
	err   error
}

func (p *pending) resolve(ctx context.Context) (Claim, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		claim, err := p.o.account(ctx, p.id)
		if errors.Is(err, ErrAccountLookup) {
			return claim, err
		}
		p.claim, p.err, p.done = claim, err, true
	}
	return p.claim, p.err
}

// keySet is the provider's keys as last fetched.
type keySet struct {
	fetch func(context.Context) ([]byte, error)

	mu       sync.Mutex
	keys     []jose.JSONWebKey // public keys, each with its Algorithm
	fetched  time.Time         // when keys were fetched
	tried    time.Time         // when a fetch was last started
	inflight chan struct{}     // closed when the fetch under way ends
}

// candidates are the keys that may have signed a token with the key id
// and algorithm: the key with that id, or every key when the token names
// none, and only if the key is for that algorithm. An unknown id, or a
// set older than keysMaxAge, starts a fetch of the set, at most one every
// RefetchEvery; a token whose key is not known yet waits for it.
func (s *keySet) candidates(ctx context.Context, now time.Time, kid string, alg jose.SignatureAlgorithm) []jose.JSONWebKey {
	s.mu.Lock()
	found := s.match(kid, alg)
	stale := s.fetched.IsZero() || now.Sub(s.fetched) >= keysMaxAge
	wait := s.inflight
	if wait == nil && (len(found) == 0 || stale) && now.Sub(s.tried) >= RefetchEvery {
		wait = s.start(ctx, now)
	}
	s.mu.Unlock()
	if len(found) > 0 || wait == nil {
		return found
	}
	select {
	case <-wait:
	case <-ctx.Done():
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.match(kid, alg)
}

func (s *keySet) match(kid string, alg jose.SignatureAlgorithm) (out []jose.JSONWebKey) {
	for _, k := range s.keys {
		if (kid == "" || k.KeyID == kid) && k.Algorithm == string(alg) {
			out = append(out, k)
		}
	}
	return out
}

// start fetches the set in the background, for every request that waits
// for it: one request giving up does not end the fetch. s.mu is held.
func (s *keySet) start(ctx context.Context, now time.Time) chan struct{} {
	done := make(chan struct{})
	s.tried, s.inflight = now, done
	go func() {
		defer close(done)
		// A failed fetch keeps the keys there were: a provider that is
		// down for a while does not sign everyone out.
		keys, err := s.read(context.WithoutCancel(ctx))
		s.mu.Lock()
		defer s.mu.Unlock()
		if err == nil {
			s.keys, s.fetched = keys, now
		}
		s.inflight = nil
	}()
	return done
}

// refresh fetches the set and waits for it.
func (s *keySet) refresh(ctx context.Context, now time.Time) error {
	s.mu.Lock()
	s.tried = now
	s.mu.Unlock()
	keys, err := s.read(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys, s.fetched = keys, now
	return nil
}

func (s *keySet) read(ctx context.Context) ([]jose.JSONWebKey, error) {
	b, err := s.fetch(ctx)
	if err != nil {
		return nil, err
	}
	return readKeys(b)
}

// readKeys reads a JWKS document, keeping the public signing keys of the
// kinds go-jose verifies, each with the algorithm it is for: its alg, or
// its kind's usual one. Others (HMAC keys, encryption keys, kinds it does
// not know) are passed over, so that one odd key does not lose the rest.
func readKeys(b []byte) ([]jose.JSONWebKey, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("read the JWKS: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range doc.Keys {
		var k jose.JSONWebKey
		if json.Unmarshal(raw, &k) != nil || (k.Use != "" && k.Use != "sig") {
			continue
		}
		k = k.Public()
		usual := usualAlgorithm(k.Key)
		if usual == "" {
			continue // not a public key: an HMAC secret, say
		}
		if k.Algorithm == "" {
			k.Algorithm = string(usual)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("the JWKS holds no public signing key")
	}
	return keys, nil
}

// usualAlgorithm is the algorithm a key of its kind is for when its JWK
// names none; empty for a key that is not a public key.
func usualAlgorithm(key any) jose.SignatureAlgorithm {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return jose.RS256
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256
		case elliptic.P384():
			return jose.ES384
		case elliptic.P521():
			return jose.ES512
		}
	case ed25519.PublicKey:
		return jose.EdDSA
	}
	return ""
}

func (o *OIDC) fetchFile(context.Context) ([]byte, error) {
	b, err := os.ReadFile(o.cfg.JWKS)
	if err != nil {
		return nil, fmt.Errorf("read the JWKS file: %w", err)
	}
	return b, nil
}

func (o *OIDC) fetchURL(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, RefetchEvery)
	defer cancel()
	b, err := o.get(ctx)
	if err != nil && o.cfg.Log != nil {
		o.cfg.Log.WarnContext(ctx, "fetching the OpenID Connect provider's keys failed", "jwks", o.cfg.JWKS, "err", err)
	}
	return b, err
}

func (o *OIDC) get(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.cfg.JWKS, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch the JWKS: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := o.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the JWKS: %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS))
	if err != nil {
		return nil, fmt.Errorf("fetch the JWKS: %w", err)
	}
	return b, nil
}
