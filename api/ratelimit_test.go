package api_test

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
)

const signUp = `mutation($n: String!) { createUser(input: {name: $n}) { token } }`

// signUpFrom sends a sign-up as the proxy in front says the client at
// addr does.
func signUpFrom(s *apitest.Server, addr, name string) apitest.RawResponse {
	return s.Raw("POST", "/graphql", "application/json", apitest.Body(signUp, map[string]any{"n": name}),
		map[string]string{"X-Forwarded-For": addr})
}

// retryAfter is a 429's Retry-After in seconds, failing the test unless
// the answer is a coded 429.
func retryAfter(t *testing.T, r apitest.RawResponse, what string) int {
	t.Helper()
	if r.Status != 429 || r.Parsed.Code() != api.CodeRateLimited {
		t.Fatalf("%s: %d %s, want 429 %s", what, r.Status, r.Body, api.CodeRateLimited)
	}
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || secs < 1 {
		t.Fatalf("%s: Retry-After %q", what, r.Header.Get("Retry-After"))
	}
	return secs
}

// One client creating accounts in a loop is refused with 429 after its
// allowance, before any account is made, while other addresses, and its
// queries, are not.
func TestSignupRateLimit(t *testing.T) {
	s := apitest.Start(t, func(c *api.Config) {
		c.SignupRate = api.Rate{N: 3, Per: time.Hour}
		c.ClientIPHeader = "X-Forwarded-For"
	})
	made := 0
	for i := range 10 {
		r := signUpFrom(s, "198.51.100.7", fmt.Sprintf("loop%d", i))
		if r.Status == 200 && r.Parsed.Code() == "" {
			made++
			continue
		}
		if made != 3 {
			t.Fatalf("sign-up %d refused after %d made (%d %s), want 3 made", i+1, made, r.Status, r.Body)
		}
		// The next token comes in 20 minutes.
		if secs := retryAfter(t, r, "the 4th sign-up"); secs > 1200 {
			t.Errorf("Retry-After %d s, want at most 1200", secs)
		}
		if !strings.Contains(r.Parsed.Errors[0].Message, "try again in") {
			t.Errorf("message %q", r.Parsed.Errors[0].Message)
		}
		break
	}
	if made != 3 {
		t.Fatalf("%d of 10 sign-ups from one address made, want 3", made)
	}
	retryAfter(t, signUpFrom(s, "198.51.100.7", "again"), "a later sign-up")
	var found struct{ User *struct{ ID string } }
	s.Data("", `{ user(name: "loop3") { id } }`, nil, &found)
	if found.User != nil {
		t.Error("a refused sign-up made its account")
	}

	// Others: another address, even one the client put first in the
	// header (the proxy's entry, last, is what counts).
	for i, addr := range []string{"203.0.113.9", "198.51.100.7, 203.0.113.10"} {
		if r := signUpFrom(s, addr, fmt.Sprintf("other%d", i)); r.Status != 200 || r.Parsed.Code() != "" {
			t.Errorf("a sign-up from %s: %d %s", addr, r.Status, r.Body)
		}
	}
	// IPv6 addresses count by their /64.
	for i := range 3 {
		signUpFrom(s, fmt.Sprintf("2001:db8::%x", i+1), fmt.Sprintf("six%d", i))
	}
	retryAfter(t, signUpFrom(s, "2001:db8::ffff", "six3"), "a 4th sign-up from one /64")
	if r := signUpFrom(s, "2001:db8:0:1::1", "six4"); r.Status != 200 || r.Parsed.Code() != "" {
		t.Errorf("a sign-up from the next /64: %d %s", r.Status, r.Body)
	}
	// Queries are not rate limited.
	q := s.Raw("POST", "/graphql", "application/json", apitest.Body(`{ users { totalCount } }`, nil), map[string]string{"X-Forwarded-For": "198.51.100.7"})
	if q.Status != 200 || q.Parsed.Code() != "" {
		t.Errorf("a query from the limited address: %d %s", q.Status, q.Body)
	}
	// One request cannot sign up more than the allowance at once.
	many := s.Raw("POST", "/graphql", "application/json", apitest.Body(
		`mutation { a: createUser(input: {name: "m1"}) { token } b: createUser(input: {name: "m2"}) { token }
		c: createUser(input: {name: "m3"}) { token } d: createUser(input: {name: "m4"}) { token } }`, nil),
		map[string]string{"X-Forwarded-For": "192.0.2.1"})
	if many.Status != 429 || many.Parsed.Code() != api.CodeRateLimited || many.Header.Get("Retry-After") != "" {
		t.Errorf("four sign-ups in one request: %d %v %s, want 429 without Retry-After", many.Status, many.Header, many.Body)
	}
}

// Without -client-ip-header the client is the connection's address,
// whatever headers it sends.
func TestRateLimitIgnoresHeadersByDefault(t *testing.T) {
	s := apitest.Start(t, func(c *api.Config) { c.SignupRate = api.Rate{N: 3, Per: time.Hour} })
	for i := range 3 {
		if r := signUpFrom(s, fmt.Sprintf("203.0.113.%d", i), fmt.Sprintf("u%d", i)); r.Status != 200 {
			t.Fatalf("sign-up %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	retryAfter(t, signUpFrom(s, "203.0.113.99", "u3"), "a 4th sign-up from one connection address")
}

// Mutations of any kind count against their own limit, one per root
// field.
func TestMutationRateLimit(t *testing.T) {
	s := apitest.Start(t, func(c *api.Config) {
		c.MutationRate = api.Rate{N: 10, Per: time.Minute}
		c.ClientIPHeader = "X-Real-IP"
	})
	u := s.Sample() // from 127.0.0.1: 4 sign-ups, 5 follows
	follow := func(from string) apitest.RawResponse {
		return s.Raw("POST", "/graphql", "application/json", apitest.Body(apitest.FollowMutation, map[string]any{"id": u["dave"].ID}),
			map[string]string{"X-Real-IP": from, "Authorization": "Bearer " + u["alice"].Token})
	}
	for i := range 10 {
		if r := follow("192.0.2.50"); r.Status != 200 || r.Parsed.Code() != "" {
			t.Fatalf("follow %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	// A token comes back every 6 s.
	if secs := retryAfter(t, follow("192.0.2.50"), "the 11th follow"); secs > 6 {
		t.Errorf("Retry-After %d, want at most 6", secs)
	}
	if r := follow("192.0.2.51"); r.Status != 200 || r.Parsed.Code() != "" {
		t.Errorf("a follow from another address: %d %s", r.Status, r.Body)
	}
}

// A Rate is a flag: what it is given reads as ParseRate reads it, what it
// prints reads back the same, and a rate that makes no sense is refused by the flag
// set, naming the flag.
func TestRateFlag(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want api.Rate
		err  string
	}{
		{"25/5m", api.Rate{N: 25, Per: 5 * time.Minute}, ""},
		{"20/h", api.Rate{N: 20, Per: time.Hour}, ""},
		{"off", api.Rate{}, ""},
		{"0/m", api.Rate{}, "-rate"},
		{"10/fortnight", api.Rate{}, "-rate"},
		{"lots", api.Rate{}, "-rate"},
	} {
		r := api.Rate{N: 1, Per: time.Second}
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Var(&r, "rate", "a rate")
		err := fs.Parse([]string{"-rate", tc.arg})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("-rate %s: %v, want an error naming %s", tc.arg, err, tc.err)
			}
			continue
		}
		again, _ := api.ParseRate(r.String())
		if err != nil || r != tc.want || again != r {
			t.Errorf("-rate %s: %+v (%s), %v; want %+v", tc.arg, r, r.String(), err, tc.want)
		}
	}
}
