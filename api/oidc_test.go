package api_test

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"follows/api/apitest"
	"follows/auth"
	"follows/auth/oidctest"
)

// oidcServer serves dsn as the server does given -oidc-issuer,
// -oidc-audience and -oidc-jwks: it takes the provider's tokens with its
// keys from jwks (a URL or a file), making accounts for new subjects if
// provision is set.
func oidcServer(t *testing.T, dsn string, p *oidctest.Provider, jwks string, provision bool) string {
	t.Helper()
	return newReplica(t, dsn, &auth.OIDCConfig{Issuer: p.Issuer, Audience: oidctest.Audience, JWKS: jwks, Provision: provision}).URL
}

// gqlResult is what a test reads of a response: the data, or the first
// error's code and message.
type gqlResult struct {
	data          map[string]any
	code, message string
}

func ask(t *testing.T, url, token, query string) gqlResult {
	t.Helper()
	var out apitest.Response
	apitest.PostTo(t, url, token, query, nil, &out)
	r := gqlResult{code: out.Code()}
	json.Unmarshal(out.Data, &r.data)
	if len(out.Errors) > 0 {
		r.message = out.Errors[0].Message
	}
	return r
}

// whoAmI is the viewer's id and name as the viewer field answers, and ""
// for no viewer.
func whoAmI(t *testing.T, url, token string) (id, name string) {
	t.Helper()
	r := ask(t, url, token, `{ viewer { id name } }`)
	v, _ := r.data["viewer"].(map[string]any)
	if v == nil {
		return "", ""
	}
	return v["id"].(string), v["name"].(string)
}

// needsViewer runs a mutation that needs a viewer and does nothing to an
// active one, returning its error code and message (none when the token
// signs someone in).
func needsViewer(t *testing.T, url, token string) gqlResult {
	t.Helper()
	return ask(t, url, token, `mutation { reactivateAccount { user { id } } }`)
}

// Sign-in through a provider, on each database: an account is provisioned
// on the first token of a subject, named from the name claim (made unique,
// or the subject without one), and found again by the subject afterwards;
// tokens the provider did not issue for this app, or that ended, are
// refused as UNAUTHENTICATED; a deactivated account may only read itself
// and reactivate; a deleted account's subject gets a new account. A
// second instance on the same database that does not provision takes the
// subjects that have accounts, with the key set from a file, and refuses
// the others.
func TestOIDCSignIn(t *testing.T) {
	apitest.Each(t, func(t *testing.T, d apitest.Database) {
		key := oidctest.NewKey(t, "k1", "RSA")
		p := oidctest.New(t, key)
		dsn := d.NewDSN(t)
		url := oidcServer(t, dsn, p, p.JWKSURL, true)
		jwksFile := filepath.Join(t.TempDir(), "jwks.json")
		p.WriteJWKS(t, jwksFile)
		strict := oidcServer(t, dsn, p, jwksFile, false)

		now := time.Now()
		token := func(sub, name string) string {
			c := p.Claims(sub, now)
			if name != "" {
				c["preferred_username"] = name
			}
			return oidctest.Sign(t, key, c)
		}
		alice, bob, carol := token("auth0|alice", "alice"), token("auth0|bob", "alice"), token("carol-subject", "")

		aliceID, name := whoAmI(t, url, alice)
		if aliceID == "" || name != "alice" {
			t.Fatalf("alice's first sign-in: viewer %q %q; want a new account named alice", aliceID, name)
		}
		if id, _ := whoAmI(t, url, alice); id != aliceID {
			t.Errorf("alice's second sign-in: viewer %q; want her account %s", id, aliceID)
		}
		bobID, name := whoAmI(t, url, bob)
		if bobID == "" || bobID == aliceID || name != "alice2" {
			t.Errorf("bob, whose name claim is alice's: viewer %q %q; want a new account named alice2", bobID, name)
		}
		if _, name := whoAmI(t, url, carol); name != "carol-subject" {
			t.Errorf("carol, without a name claim: named %q; want her subject", name)
		}
		if r := ask(t, url, alice, fmt.Sprintf(`mutation { follow(input: {userId: %q}) { followee { name } } }`, bobID)); r.code != "" {
			t.Errorf("alice follows bob: %s %s", r.code, r.message)
		}

		// The instance that does not provision takes subjects with an
		// account and refuses the others, with a message that says why.
		if id, _ := whoAmI(t, strict, alice); id != aliceID {
			t.Errorf("alice on the instance that does not provision: viewer %q; want %s", id, aliceID)
		}
		dave := token("dave", "dave")
		if r := needsViewer(t, strict, dave); r.code != "UNAUTHENTICATED" || !strings.Contains(r.message, "no account") {
			t.Errorf("an unknown subject where accounts are not provisioned: %s %q; want UNAUTHENTICATED, no account", r.code, r.message)
		}
		if id, _ := whoAmI(t, strict, dave); id != "" {
			t.Errorf("an unknown subject where accounts are not provisioned is viewer %s", id)
		}

		// Tokens that are not good for this server.
		der, _ := x509.MarshalPKIXPublicKey(key.Private.Public())
		claims := func(edit func(map[string]any)) map[string]any {
			c := p.Claims("auth0|alice", now)
			edit(c)
			return c
		}
		stranger := oidctest.NewKey(t, "not-in-the-set", "RSA")
		for _, tc := range []struct{ name, token, message string }{
			{"expired", oidctest.Sign(t, key, claims(func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() })), "expired"},
			{"wrong issuer", oidctest.Sign(t, key, claims(func(c map[string]any) { c["iss"] = "https://elsewhere.example/" })), "not valid"},
			{"wrong audience", oidctest.Sign(t, key, claims(func(c map[string]any) { c["aud"] = "another-app" })), "not valid"},
			{"HS256 under the public key", oidctest.SignHMAC(t, "k1", der, claims(func(map[string]any) {})), "not valid"},
			{"alg none", oidctest.Unsigned(claims(func(map[string]any) {})), "not valid"},
			{"unknown kid", oidctest.Sign(t, stranger, claims(func(map[string]any) {})), "not valid"},
		} {
			for _, server := range []string{url, strict} {
				if r := needsViewer(t, server, tc.token); r.code != "UNAUTHENTICATED" || !strings.Contains(r.message, tc.message) {
					t.Errorf("%s: %s %q; want UNAUTHENTICATED, %s", tc.name, r.code, r.message, tc.message)
				}
			}
		}

		// Deactivated: alice reads herself and reactivates, and may do
		// nothing else, as with the server's own tokens.
		if r := ask(t, url, alice, `mutation { deactivateAccount { deactivated } }`); r.code != "" {
			t.Fatalf("deactivate: %s %s", r.code, r.message)
		}
		if id, _ := whoAmI(t, url, alice); id != aliceID {
			t.Errorf("deactivated alice reads herself: viewer %q; want %s", id, aliceID)
		}
		if r := ask(t, url, alice, fmt.Sprintf(`mutation { unfollow(input: {userId: %q}) { followee { name } } }`, bobID)); r.code != "FORBIDDEN" {
			t.Errorf("deactivated alice unfollows: %s %q; want FORBIDDEN", r.code, r.message)
		}
		if r := needsViewer(t, strict, alice); r.code != "" {
			t.Errorf("deactivated alice reactivates: %s %s", r.code, r.message)
		}

		// Deleted: bob's token names no account; where accounts are
		// provisioned his subject gets a new one, never the old.
		if r := ask(t, url, bob, fmt.Sprintf(`mutation { deleteUser(input: {userId: %q}) { deletedFollows } }`, bobID)); r.code != "" {
			t.Fatalf("bob deletes himself: %s %s", r.code, r.message)
		}
		if r := needsViewer(t, strict, bob); r.code != "UNAUTHENTICATED" {
			t.Errorf("deleted bob where accounts are not provisioned: %s %q; want UNAUTHENTICATED", r.code, r.message)
		}
		newID, name := whoAmI(t, url, bob)
		if newID == "" || newID == bobID || name != "alice2" {
			t.Errorf("deleted bob signing in again: viewer %q %q; want a new account, not %s", newID, name, bobID)
		}
		r := ask(t, url, alice, fmt.Sprintf(`{ user(id: %q) { followerCount } }`, newID))
		if u, _ := r.data["user"].(map[string]any); u == nil || u["followerCount"] != 0.0 {
			t.Errorf("bob's new account: %v; want no followers of the old one", r.data)
		}
	})
}
