// Package oidctest is an OpenID Connect provider for tests: it makes
// signing keys, serves their key set (JWKS) over HTTP as a provider does,
// and signs tokens with them, good or made wrong on purpose.
package oidctest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Audience is the audience the provider's tokens are for.
const Audience = "follows-test-app"

// A Key is a signing key of the provider.
type Key struct {
	ID      string
	Alg     jose.SignatureAlgorithm
	Private crypto.Signer
	// NoAlg leaves alg out of the key's JWK, as many providers do: the
	// verifier then takes its kind's usual algorithm.
	NoAlg bool
}

// NewKey makes a key of a kind: "RSA", "P-256" or "Ed25519", for its
// kind's usual algorithm.
func NewKey(t testing.TB, id, kind string) Key {
	t.Helper()
	var k Key
	var err error
	switch kind {
	case "RSA":
		k.Private, err = rsa.GenerateKey(rand.Reader, 2048)
		k.Alg = jose.RS256
	case "P-256":
		k.Private, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		k.Alg = jose.ES256
	case "Ed25519":
		_, k.Private, err = ed25519.GenerateKey(rand.Reader)
		k.Alg = jose.EdDSA
	default:
		t.Fatalf("no key kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	k.ID = id
	return k
}

// JWK is the key's public half as its key set lists it.
func (k Key) JWK() jose.JSONWebKey {
	j := jose.JSONWebKey{Key: k.Private.Public(), KeyID: k.ID, Use: "sig", Algorithm: string(k.Alg)}
	if k.NoAlg {
		j.Algorithm = ""
	}
	return j
}

// Provider serves a key set at JWKSURL and signs tokens as Issuer.
type Provider struct {
	Issuer  string
	JWKSURL string
	// Fetches counts the key set's fetches.
	Fetches atomic.Int64

	mu   sync.Mutex
	keys []Key
}

// New starts a provider whose key set holds keys; it stops when the test
// ends.
func New(t testing.TB, keys ...Key) *Provider {
	p := &Provider{keys: keys}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/jwks.json" {
			http.NotFound(w, r)
			return
		}
		p.Fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(p.JWKS())
	}))
	t.Cleanup(srv.Close)
	p.Issuer = srv.URL + "/"
	p.JWKSURL = srv.URL + "/jwks.json"
	return p
}

// Rotate replaces the keys the key set lists.
func (p *Provider) Rotate(keys ...Key) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = keys
}

// JWKS is the key set document.
func (p *Provider) JWKS() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, k := range p.keys {
		set.Keys = append(set.Keys, k.JWK())
	}
	b, _ := json.Marshal(set)
	return b
}

// WriteJWKS writes the key set document to a file, for a server that
// reads it from there.
func (p *Provider) WriteJWKS(t testing.TB, path string) {
	t.Helper()
	if err := os.WriteFile(path, p.JWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Claims are a good token's claims for subject at now: this issuer, the
// audience, issued now and expiring in an hour.
func (p *Provider) Claims(subject string, now time.Time) map[string]any {
	return map[string]any{
		"iss": p.Issuer,
		"aud": Audience,
		"sub": subject,
		"iat": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
}

// Sign signs claims with key, naming the key's id in the header.
func Sign(t testing.TB, key Key, claims map[string]any) string {
	t.Helper()
	return sign(t, jose.SigningKey{Algorithm: key.Alg, Key: key.Private}, key.ID, claims)
}

// SignHMAC signs claims with HS256 under secret, naming kid: the forgery
// of a verifier that would take a public key as an HMAC secret.
func SignHMAC(t testing.TB, kid string, secret []byte, claims map[string]any) string {
	t.Helper()
	return sign(t, jose.SigningKey{Algorithm: jose.HS256, Key: secret}, kid, claims)
}

func sign(t testing.TB, key jose.SigningKey, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), kid)
	}
	sig, err := jose.NewSigner(key, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Unsigned is the token with alg "none" and no signature.
func Unsigned(claims map[string]any) string {
	b64 := func(v any) string {
		b, _ := json.Marshal(v)
		return base64URL(b)
	}
	return b64(map[string]any{"alg": "none", "typ": "JWT"}) + "." + b64(claims) + "."
}

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
