package auth

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"follows/auth/oidctest"
)

// clock is a test's settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// noAccounts is an account store for tests that only verify tokens.
type noAccounts struct{}

func (noAccounts) AccountFor(context.Context, string, string, bool) (int64, string, error) {
	return 0, "", nil
}

func newVerifier(t *testing.T, p *oidctest.Provider, jwks string, c *clock) *OIDC {
	t.Helper()
	o, err := NewOIDC(OIDCConfig{Issuer: p.Issuer, Audience: oidctest.Audience, JWKS: jwks, Accounts: noAccounts{}, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOIDCVerify(t *testing.T) {
	rsaKey := oidctest.NewKey(t, "rsa", "RSA")
	ecKey := oidctest.NewKey(t, "ec", "P-256")
	edKey := oidctest.NewKey(t, "ed", "Ed25519")
	bare := oidctest.NewKey(t, "bare", "RSA")
	bare.NoAlg = true
	bareEC := oidctest.NewKey(t, "bare-ec", "P-256")
	bareEC.NoAlg = true
	bareEd := oidctest.NewKey(t, "bare-ed", "Ed25519")
	bareEd.NoAlg = true
	p := oidctest.New(t, rsaKey, ecKey, edKey, bare, bareEC, bareEd)
	c := &clock{t: time.Now()}
	o := newVerifier(t, p, p.JWKSURL, c)

	claims := func(edit func(map[string]any)) map[string]any {
		m := p.Claims("sub-1", c.now())
		m["preferred_username"] = "alice"
		if edit != nil {
			edit(m)
		}
		return m
	}
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	der, _ := x509.MarshalPKIXPublicKey(rsaKey.Private.Public())
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	rs384 := bare
	rs384.Alg = "RS384"
	unknown := oidctest.NewKey(t, "rsa", "RSA") // the same kid, another key
	noKid := rsaKey
	noKid.ID = ""

	for _, tc := range []struct {
		name  string
		token string
		want  error
		id    Identity
	}{
		{"RS256", oidctest.Sign(t, rsaKey, claims(nil)), nil, Identity{"sub-1", "alice"}},
		{"ES256", oidctest.Sign(t, ecKey, claims(nil)), nil, Identity{"sub-1", "alice"}},
		{"EdDSA", oidctest.Sign(t, edKey, claims(nil)), nil, Identity{"sub-1", "alice"}},
		{"no alg on an RSA JWK: RS256", oidctest.Sign(t, bare, claims(nil)), nil, Identity{"sub-1", "alice"}},
		{"no alg on a P-256 JWK: ES256", oidctest.Sign(t, bareEC, claims(nil)), nil, Identity{"sub-1", "alice"}},
		{"no alg on an Ed25519 JWK: EdDSA", oidctest.Sign(t, bareEd, claims(nil)), nil, Identity{"sub-1", "alice"}},
		{"no alg on an RSA JWK, signed RS384", oidctest.Sign(t, rs384, claims(nil)), ErrInvalidToken, Identity{}},
		{"no kid: any key for the algorithm", oidctest.Sign(t, noKid, claims(nil)), nil, Identity{"sub-1", "alice"}},
		{"no name claim: the subject", oidctest.Sign(t, rsaKey, claims(func(m map[string]any) { delete(m, "preferred_username") })), nil, Identity{"sub-1", "sub-1"}},
		{"issuer without the trailing slash", oidctest.Sign(t, rsaKey, claims(set("iss", strings.TrimSuffix(p.Issuer, "/")))), nil, Identity{"sub-1", "alice"}},
		{"expired within the leeway", oidctest.Sign(t, rsaKey, claims(set("exp", c.now().Add(-30*time.Second).Unix()))), nil, Identity{"sub-1", "alice"}},
		{"audience among several", oidctest.Sign(t, rsaKey, claims(set("aud", []string{"other", oidctest.Audience}))), nil, Identity{"sub-1", "alice"}},
		{"expired", oidctest.Sign(t, rsaKey, claims(set("exp", c.now().Add(-2*time.Minute).Unix()))), ErrExpiredToken, Identity{}},
		{"no expiry", oidctest.Sign(t, rsaKey, claims(func(m map[string]any) { delete(m, "exp") })), ErrInvalidToken, Identity{}},
		{"not valid yet", oidctest.Sign(t, rsaKey, claims(set("nbf", c.now().Add(2*time.Minute).Unix()))), ErrInvalidToken, Identity{}},
		{"issued in the future", oidctest.Sign(t, rsaKey, claims(set("iat", c.now().Add(2*time.Minute).Unix()))), ErrInvalidToken, Identity{}},
		{"wrong issuer", oidctest.Sign(t, rsaKey, claims(set("iss", "https://evil.example/"))), ErrInvalidToken, Identity{}},
		{"issuer differing in case", oidctest.Sign(t, rsaKey, claims(set("iss", strings.ToUpper(p.Issuer)))), ErrInvalidToken, Identity{}},
		{"wrong audience", oidctest.Sign(t, rsaKey, claims(set("aud", "another-app"))), ErrInvalidToken, Identity{}},
		{"no subject", oidctest.Sign(t, rsaKey, claims(func(m map[string]any) { delete(m, "sub") })), ErrInvalidToken, Identity{}},
		{"subject too long", oidctest.Sign(t, rsaKey, claims(set("sub", strings.Repeat("s", 256)))), ErrInvalidToken, Identity{}},
		{"HS256 under the public key's PEM", oidctest.SignHMAC(t, "rsa", pemKey, claims(nil)), ErrInvalidToken, Identity{}},
		{"HS256 under the public key's DER", oidctest.SignHMAC(t, "rsa", der, claims(nil)), ErrInvalidToken, Identity{}},
		{"alg none", oidctest.Unsigned(claims(nil)), ErrInvalidToken, Identity{}},
		{"a key the set does not hold, under a kid it does", oidctest.Sign(t, unknown, claims(nil)), ErrInvalidToken, Identity{}},
		{"garbage", "a.b.c", ErrInvalidToken, Identity{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := o.Verify(context.Background(), tc.token)
			if !errors.Is(err, tc.want) || id != tc.id {
				t.Errorf("Verify: %+v, %v; want %+v, %v", id, err, tc.id, tc.want)
			}
		})
	}
}

// A key the provider rotates in is taken once the key set is fetched
// again, which a token with an unknown kid causes at most every
// RefetchEvery; a retired key stops being taken at that fetch.
func TestOIDCKeyRotation(t *testing.T) {
	old := oidctest.NewKey(t, "k1", "RSA")
	p := oidctest.New(t, old)
	c := &clock{t: time.Now()}
	o := newVerifier(t, p, p.JWKSURL, c)
	verify := func(key oidctest.Key) error {
		_, err := o.Verify(context.Background(), oidctest.Sign(t, key, p.Claims("s", c.now())))
		return err
	}
	if err := verify(old); err != nil {
		t.Fatalf("the first key: %v", err)
	}
	if n := p.Fetches.Load(); n != 1 {
		t.Fatalf("%d fetches of the key set; want 1", n)
	}

	// Tokens with unknown kids, however many, fetch the set once every
	// RefetchEvery.
	c.advance(RefetchEvery)
	stranger := oidctest.NewKey(t, "made-up", "RSA")
	for range 5 {
		if err := verify(stranger); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("unknown kid: %v, want ErrInvalidToken", err)
		}
	}
	if n := p.Fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after five tokens with an unknown kid; want 2", n)
	}

	// Rotated within RefetchEvery of the last fetch: the new key is
	// refused until the next fetch may be made, then taken.
	rotated := oidctest.NewKey(t, "k2", "RSA")
	p.Rotate(rotated)
	if err := verify(rotated); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("the new key within %v of the last fetch: %v, want ErrInvalidToken", RefetchEvery, err)
	}
	c.advance(RefetchEvery)
	if err := verify(rotated); err != nil {
		t.Errorf("the new key %v later: %v", RefetchEvery, err)
	}
	if n := p.Fetches.Load(); n != 3 {
		t.Errorf("%d fetches; want 3", n)
	}
	if err := verify(old); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("the retired key: %v, want ErrInvalidToken", err)
	}
}

// A key set kept in a file (an air-gapped deployment) is read at start,
// refused there when missing, and read again as a URL's is fetched.
func TestOIDCKeysFromFile(t *testing.T) {
	k1 := oidctest.NewKey(t, "k1", "P-256")
	p := oidctest.New(t, k1)
	file := filepath.Join(t.TempDir(), "jwks.json")
	if _, err := NewOIDC(OIDCConfig{Issuer: p.Issuer, Audience: oidctest.Audience, JWKS: file, Accounts: noAccounts{}}); err == nil {
		t.Error("NewOIDC took a key set file that is not there")
	}
	p.WriteJWKS(t, file)
	c := &clock{t: time.Now()}
	o := newVerifier(t, p, file, c)
	if _, err := o.Verify(context.Background(), oidctest.Sign(t, k1, p.Claims("s", c.now()))); err != nil {
		t.Fatalf("a key from the file: %v", err)
	}
	k2 := oidctest.NewKey(t, "k2", "Ed25519")
	p.Rotate(k1, k2)
	p.WriteJWKS(t, file)
	c.advance(RefetchEvery)
	if _, err := o.Verify(context.Background(), oidctest.Sign(t, k2, p.Claims("s", c.now()))); err != nil {
		t.Errorf("a key added to the file: %v", err)
	}
	if n := p.Fetches.Load(); n != 0 {
		t.Errorf("the key set's URL was fetched %d times; want none", n)
	}
}

// HMAC keys in a key set are never used: a token signed with one is
// refused, and a set holding nothing else is refused as a whole.
func TestOIDCSymmetricKeysIgnored(t *testing.T) {
	keys, err := readKeys([]byte(`{"keys":[{"kty":"oct","kid":"h","alg":"HS256","k":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA"}]}`))
	if err == nil {
		t.Errorf("read a key set of one HMAC key as %v", keys)
	}
	rsaKey := oidctest.NewKey(t, "r", "RSA")
	keys, err = readKeys([]byte(`{"keys":[{"kty":"oct","kid":"h","k":"c2VjcmV0"},{"kty":"weird"},` + mustJWK(t, rsaKey) + `]}`))
	if err != nil || len(keys) != 1 || keys[0].KeyID != "r" || keys[0].Algorithm != "RS256" {
		t.Errorf("read %v, %v; want the RSA key alone", keys, err)
	}
}

func mustJWK(t *testing.T, k oidctest.Key) string {
	b, err := k.JWK().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A provider token's account is looked up when first asked for, once per
// request; a failed lookup is not kept, an unknown subject is.
func TestOIDCViewer(t *testing.T) {
	k := oidctest.NewKey(t, "k", "RSA")
	p := oidctest.New(t, k)
	accounts := &countingAccounts{ids: map[string]int64{"known": 7}}
	o, err := NewOIDC(OIDCConfig{Issuer: p.Issuer, Audience: oidctest.Audience, JWKS: p.JWKSURL, Accounts: accounts})
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := NewTokens(RandomSecret(), time.Hour)
	tokens.AcceptOIDC(o)
	ctx := tokens.Authenticate(context.Background(), "Bearer "+oidctest.Sign(t, k, p.Claims("known", time.Now())))
	if accounts.calls != 0 {
		t.Errorf("looked the account up before anyone asked")
	}
	for range 3 {
		if claim, err := Viewer(ctx); err != nil || claim.UserID != 7 || claim.Stamp != "stamp-known" {
			t.Errorf("Viewer: %+v, %v", claim, err)
		}
	}
	if accounts.calls != 1 {
		t.Errorf("%d lookups for one request; want 1", accounts.calls)
	}
	ctx = tokens.Authenticate(context.Background(), "Bearer "+oidctest.Sign(t, k, p.Claims("stranger", time.Now())))
	if _, err := Viewer(ctx); !errors.Is(err, ErrUnknownSubject) {
		t.Errorf("unknown subject: %v, want ErrUnknownSubject", err)
	}
	accounts.fail = errors.New("store down")
	ctx = tokens.Authenticate(context.Background(), "Bearer "+oidctest.Sign(t, k, p.Claims("known", time.Now())))
	if _, err := Viewer(ctx); !errors.Is(err, ErrAccountLookup) {
		t.Errorf("failed lookup: %v, want ErrAccountLookup", err)
	}
	accounts.fail = nil
	if claim, err := Viewer(ctx); err != nil || claim.UserID != 7 {
		t.Errorf("after a failed lookup: %+v, %v; want it tried again", claim, err)
	}
	// The server's own tokens still work beside the provider's.
	ctx = tokens.Authenticate(context.Background(), "Bearer "+tokens.Mint(3, "s3"))
	if claim, err := Viewer(ctx); err != nil || claim != (Claim{3, "s3"}) {
		t.Errorf("built-in token: %+v, %v", claim, err)
	}
}

type countingAccounts struct {
	mu    sync.Mutex
	ids   map[string]int64
	calls int
	fail  error
}

func (a *countingAccounts) AccountFor(_ context.Context, subject, _ string, _ bool) (int64, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if a.fail != nil {
		return 0, "", a.fail
	}
	if id := a.ids[subject]; id != 0 {
		return id, "stamp-" + subject, nil
	}
	return 0, "", nil
}
