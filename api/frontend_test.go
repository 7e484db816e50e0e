package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"follows/api"
	"follows/api/apitest"
)

// goDetail is text of Go's that an error message must not show a client:
// type names from failed decoding.
var goDetail = []string{"map[", "interface {}", "graphql.", "json:", "Go value", "Go struct", "[]", "RawParams"}

// Every refusal, at whatever layer, carries extensions.code and a message
// that names no Go type and does not echo the request.
func TestEveryErrorIsCoded(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	s.Sample()
	get := func(query string, extra url.Values) func() apitest.RawResponse {
		return func() apitest.RawResponse {
			v := url.Values{"query": {query}}
			for k, vs := range extra {
				v[k] = vs
			}
			return s.Raw("GET", "/graphql?"+v.Encode(), "", nil, nil)
		}
	}
	post := func(body string) func() apitest.RawResponse {
		return func() apitest.RawResponse { return s.Raw("POST", "/graphql", "application/json", []byte(body), nil) }
	}
	tests := []struct {
		name   string
		send   func() apitest.RawResponse
		status int
		code   string
		echo   string // what of the request must not come back
	}{
		{"a batch (a JSON array), as Apollo's BatchHttpLink sends", post(`[{"query":"{ viewer { id } }"},{"query":"{ users { totalCount } }"}]`), 400, "BAD_REQUEST", "totalCount"},
		{"a JSON string", post(`"{ users { totalCount } }"`), 400, "BAD_REQUEST", "totalCount"},
		{"null", post(`null`), 400, "BAD_REQUEST", ""},
		{"a query that is a number", post(`{"query": 12345}`), 400, "BAD_REQUEST", "12345"},
		{"variables that are a list", post(`{"query": "query($n: String) { user(name: $n) { id } }", "variables": ["alice"]}`), 400, "BAD_REQUEST", "alice"},
		{"an operation name that is an object", post(`{"query": "{ viewer { id } }", "operationName": {"n": "zzz"}}`), 400, "BAD_REQUEST", "zzz"},
		{"extensions that are a string", post(`{"query": "{ viewer { id } }", "extensions": "zzz"}`), 400, "BAD_REQUEST", "zzz"},
		{"a mutation over GET", get(`mutation { createUser(input: {name: "zzz"}) { token } }`, nil), 405, "METHOD_NOT_ALLOWED", "zzz"},
		{"GET variables that are not JSON", get(`query($n: String) { user(name: $n) { id } }`, url.Values{"variables": {"{zzz"}}), 400, "BAD_REQUEST", "zzz"},
		{"GET extensions that are not JSON", get(`{ viewer { id } }`, url.Values{"extensions": {"[zzz"}}), 400, "BAD_REQUEST", "zzz"},
		{"a query string that does not decode", func() apitest.RawResponse {
			return s.Raw("GET", "/graphql?query=%zz", "", nil, nil)
		}, 400, "BAD_REQUEST", "%zz"},
		{"PUT", func() apitest.RawResponse {
			return s.Raw("PUT", "/graphql", "application/json", apitest.Body("{ viewer { id } }", nil), nil)
		}, 405, "METHOD_NOT_ALLOWED", ""},
		{"no query", post(`{"variables": {}}`), 200, "GRAPHQL_VALIDATION_FAILED", ""},
		{"a syntax error", post(`{"query": "{ viewer { id }"}`), 200, "GRAPHQL_PARSE_FAILED", ""},
		{"an unknown field", post(`{"query": "{ viewer { zzz } }"}`), 200, "GRAPHQL_VALIDATION_FAILED", ""},
		{"a variable of the wrong type", post(`{"query": "query($id: ID) { user(id: $id) { id } }", "variables": {"id": {"zzz": 1}}}`), 200, "GRAPHQL_VALIDATION_FAILED", ""},
		{"an unknown operation name", post(`{"query": "query A { viewer { id } }", "operationName": "zzz"}`), 200, "GRAPHQL_VALIDATION_FAILED", ""},
		{"a persisted query the server does not have", post(`{"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "` + strings.Repeat("ab", 32) + `"}}}`), 200, "PERSISTED_QUERY_NOT_FOUND", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.send()
			if r.Status != tc.status {
				t.Errorf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			if len(r.Parsed.Errors) == 0 {
				t.Fatalf("no errors: %s", r.Body)
			}
			for _, e := range r.Parsed.Errors {
				if code, _ := e.Extensions["code"].(string); code != tc.code {
					t.Errorf("code %q, want %q: %s", code, tc.code, r.Body)
				}
				for _, d := range goDetail {
					if strings.Contains(e.Message, d) {
						t.Errorf("the message shows %q: %s", d, e.Message)
					}
				}
				if tc.echo != "" && strings.Contains(e.Message, tc.echo) {
					t.Errorf("the message echoes the request (%q): %s", tc.echo, e.Message)
				}
			}
			if tc.status == 405 && r.Header.Get("Allow") == "" {
				t.Errorf("405 without Allow: %v", r.Header)
			}
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

// With Accept: application/graphql-response+json every refusal of a
// request, for its syntax, its validity or any limit, is 400, as GraphQL
// over HTTP asks; with application/json, 200. Errors in execution are 200
// with either.
func TestRefusalStatusByMediaType(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, func(c *api.Config) { c.MaxTokens, c.MaxBreadth, c.MaxOverlaps = 400, 20, 50 })
	narrow := apitest.Start(t, func(c *api.Config) { c.MaxSelections = 10 })
	plain := apitest.Start(t)
	many := func(n int, field string) string {
		return "{" + strings.Repeat(" "+field, n) + " }"
	}
	var aliases, ops strings.Builder
	aliases.WriteString("{")
	for i := range 51 {
		fmt.Fprintf(&aliases, " a%d: __typename", i)
	}
	aliases.WriteString(" }")
	for i := range 21 {
		fmt.Fprintf(&ops, "query Q%d { __typename } ", i)
	}
	body := func(query string) []byte { return apitest.Body(query, nil) }
	withOp, _ := json.Marshal(map[string]any{"query": ops.String(), "operationName": "Q0"})
	tests := []struct {
		name   string
		server *apitest.Server
		body   []byte
		code   string
		status int // with application/graphql-response+json
	}{
		{"parse", s, body("{ viewer"), "GRAPHQL_PARSE_FAILED", 400},
		{"validation", s, body("{ nope }"), "GRAPHQL_VALIDATION_FAILED", 400},
		{"complexity", s, body(nested(2, 100)), "COMPLEXITY_LIMIT_EXCEEDED", 400},
		{"depth", s, body(nested(13, 1)), "DEPTH_LIMIT_EXCEEDED", 400},
		{"aliases", plain, body(aliases.String()), "ALIAS_LIMIT_EXCEEDED", 400},
		{"operations", s, withOp, "OPERATION_LIMIT_EXCEEDED", 400},
		{"tokens", s, body(many(401, "__typename")), "TOKEN_LIMIT_EXCEEDED", 400},
		{"selections", narrow, body(many(11, "__typename")), "SELECTION_LIMIT_EXCEEDED", 400},
		{"breadth", s, body(many(21, "__typename")), "BREADTH_LIMIT_EXCEEDED", 400},
		{"overlaps", s, body(`{ __type(name: "User") { ` + strings.Repeat("ofType { name } ", 15) + `} }`), "OVERLAP_LIMIT_EXCEEDED", 400},
		{"an execution error", s, body(`mutation { follow(input: {userId: "1"}) { alreadyFollowing } }`), "UNAUTHENTICATED", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, accept := range []string{"application/graphql-response+json", "application/json"} {
				r := tc.server.Raw("POST", "/graphql", "application/json", tc.body, map[string]string{"Accept": accept})
				want := tc.status
				if accept == "application/json" {
					want = 200
				}
				if r.Status != want || r.Parsed.Code() != tc.code {
					t.Errorf("Accept %s: %d %q, want %d %q: %.200s", accept, r.Status, r.Parsed.Code(), want, tc.code, r.Body)
				}
			}
		})
	}
}

// The request headers that browser clients send: Apollo Client's, and
// tracing libraries' (Sentry, OpenTelemetry's W3C trace context).
var browserHeaders = []string{
	"authorization", "content-type",
	"apollographql-client-name", "apollographql-client-version", "apollo-require-preflight",
	"sentry-trace", "baggage", "traceparent", "tracestate",
}

// allows reports whether a preflight's answer lets a browser send each of
// the headers.
func allows(allowHeaders string, headers []string) []string {
	var listed []string
	for h := range strings.SplitSeq(allowHeaders, ",") {
		listed = append(listed, strings.ToLower(strings.TrimSpace(h)))
	}
	var missing []string
	for _, h := range headers {
		if !slices.Contains(listed, h) && !slices.Contains(listed, "*") {
			missing = append(missing, h)
		}
	}
	return missing
}

// A browser app on another origin (a Vite dev server) passes the preflight
// with what Apollo Client and tracing libraries send, and every answer of
// /graphql varies on Origin while CORS is on, refusals included, so that
// a cache never serves one origin's answer to another.
func TestCORSForBrowserApps(t *testing.T) {
	t.Parallel()
	const app = "http://localhost:5173"
	s := apitest.Start(t, func(c *api.Config) { c.CORSOrigins = app; c.MaxBody = 1000 })
	pre := s.Raw("OPTIONS", "/graphql", "", nil, map[string]string{
		"Origin": app, "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": strings.Join(browserHeaders, ","),
	})
	if pre.Status != 204 || pre.Header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("preflight: %d %v", pre.Status, pre.Header)
	}
	if missing := allows(pre.Header.Get("Access-Control-Allow-Headers"), browserHeaders); len(missing) > 0 {
		t.Errorf("the preflight does not allow %v: Access-Control-Allow-Headers %q", missing, pre.Header.Get("Access-Control-Allow-Headers"))
	}

	query := apitest.Body("{ users { totalCount } }", nil)
	for _, tc := range []struct {
		name        string
		method, ct  string
		body        []byte
		origin      string
		status      int
		allowOrigin string
	}{
		{"a query from the app", "POST", "application/json", query, app, 200, app},
		{"a query from another origin", "POST", "application/json", query, "https://elsewhere.example", 200, ""},
		{"a query without Origin", "POST", "application/json", query, "", 200, ""},
		{"a preflight from another origin", "OPTIONS", "", nil, "https://elsewhere.example", 0, ""},
		{"a body that is not JSON", "POST", "application/json", []byte("{"), app, 400, app},
		{"text/plain", "POST", "text/plain", query, app, 415, app},
		{"a body too large", "POST", "application/json", apitest.Body("{ users { totalCount } }", map[string]any{"pad": strings.Repeat("x", 2000)}), app, 413, app},
		{"a mutation over GET", "GET", "", nil, app, 405, app},
		{"a validation error", "POST", "application/json", apitest.Body("{ nope }", nil), app, 200, app},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/graphql"
			if tc.method == "GET" {
				path += "?query=" + url.QueryEscape(`mutation { unfollow(input: {userId: "1"}) { wasFollowing } }`)
			}
			h := map[string]string{}
			if tc.origin != "" {
				h["Origin"] = tc.origin
			}
			if tc.method == "OPTIONS" {
				h["Access-Control-Request-Method"] = "POST"
			}
			r := s.Raw(tc.method, path, tc.ct, tc.body, h)
			if tc.status != 0 && r.Status != tc.status {
				t.Errorf("status %d, want %d", r.Status, tc.status)
			}
			if !slices.Contains(varies(r.Header), "origin") {
				t.Errorf("no Vary: Origin: %v", r.Header)
			}
			if got := r.Header.Get("Access-Control-Allow-Origin"); got != tc.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.allowOrigin)
			}
		})
	}
}

// varies is what a response's Vary headers list, in lower case.
func varies(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Vary") {
		for f := range strings.SplitSeq(v, ",") {
			out = append(out, strings.ToLower(strings.TrimSpace(f)))
		}
	}
	return out
}

// @defer is not served (see docs/clients.md), so it is not advertised either: a
// document that uses it is refused as invalid rather than answered
// without the deferred fields.
func TestDeferIsNotAdvertised(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	s.Sample()
	var schema struct {
		Schema struct{ Directives []struct{ Name string } } `json:"__schema"`
	}
	s.Data("", `{ __schema { directives { name } } }`, nil, &schema)
	for _, d := range schema.Schema.Directives {
		if d.Name == "defer" || d.Name == "stream" {
			t.Errorf("introspection advertises @%s", d.Name)
		}
	}
	r := s.Raw("POST", "/graphql", "application/json",
		apitest.Body(`{ user(name: "alice") { name ... @defer { followers { totalCount } } } }`, nil),
		map[string]string{"Accept": "multipart/mixed, application/json"})
	if r.Parsed.Code() != "GRAPHQL_VALIDATION_FAILED" {
		t.Errorf("a document with @defer: %d %s", r.Status, r.Body)
	}
}

// -cors-headers replaces the default list; * lets a page send whatever
// its preflight asks for, Authorization included.
func TestCORSHeadersSetting(t *testing.T) {
	t.Parallel()
	const app = "http://localhost:5173"
	preflight := func(s *apitest.Server, headers string) apitest.RawResponse {
		return s.Raw("OPTIONS", "/graphql", "", nil, map[string]string{
			"Origin": app, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": headers,
		})
	}
	listed := apitest.Start(t, func(c *api.Config) { c.CORSOrigins, c.CORSHeaders = app, "Content-Type, X-Request-Id" })
	r := preflight(listed, "content-type,x-request-id")
	if missing := allows(r.Header.Get("Access-Control-Allow-Headers"), []string{"content-type", "x-request-id"}); len(missing) > 0 {
		t.Errorf("listed headers: %v not allowed: %v", missing, r.Header)
	}
	if missing := allows(r.Header.Get("Access-Control-Allow-Headers"), []string{"sentry-trace"}); len(missing) == 0 {
		t.Errorf("a header not listed is allowed: %v", r.Header)
	}

	anyHeader := apitest.Start(t, func(c *api.Config) { c.CORSOrigins, c.CORSHeaders = app, "*" })
	r = preflight(anyHeader, "authorization,x-anything")
	if got := r.Header.Get("Access-Control-Allow-Headers"); got != "authorization,x-anything" || !slices.Contains(varies(r.Header), "access-control-request-headers") {
		t.Errorf("with *: Access-Control-Allow-Headers %q, Vary %v", got, r.Header.Values("Vary"))
	}
}
