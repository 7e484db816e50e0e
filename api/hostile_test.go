package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
)

// nested makes followers { nodes { followers { ... name } } } depth deep.
func nested(depth, first int) string {
	q := "name"
	for range depth {
		q = fmt.Sprintf("followers(first: %d) { nodes { %s } }", first, q)
	}
	return `{ user(name: "alice") { ` + q + ` } }`
}

// Hostile and malformed requests get a 4xx or a GraphQL error with a code,
// never a 500, and the limits refuse costly shapes before any SQL runs.
func TestHostileInput(t *testing.T) {
	s := apitest.Start(t)
	u := s.Sample()

	var requests []hostileRequest
	requests = append(requests, malformedRequests(s)...)
	requests = append(requests, badArguments(s, u["alice"])...)
	requests = append(requests, costlyDocuments(s)...)
	for _, tc := range requests {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, tc.send()) })
	}
	injectionsDidNothing(t, s)
}

// hostileRequest is one hostile or malformed request and what it must get.
type hostileRequest struct {
	name       string
	send       func() apitest.RawResponse
	wantStatus int    // 0: any status below 500
	wantCode   string // "": any code, but one there must be
	noSQL      bool
}

// check asserts what every answer to a hostile request must be: no 5xx, a
// code, no SQL run when the request is refused before the resolvers, and
// no SQL detail in the body.
func (tc hostileRequest) check(t *testing.T, r apitest.RawResponse) {
	if r.Status >= 500 || (tc.wantStatus != 0 && r.Status != tc.wantStatus) {
		t.Fatalf("status %d, want %d: %.300s", r.Status, tc.wantStatus, r.Body)
	}
	code := r.Parsed.Code()
	if code == "" || (tc.wantCode != "" && code != tc.wantCode) {
		t.Fatalf("code %q, want %q: %.300s", code, tc.wantCode, r.Body)
	}
	if tc.noSQL && r.Parsed.Extensions.Debug.SQLQueries != 0 {
		t.Errorf("%d SQL statements ran for a refused request", r.Parsed.Extensions.Debug.SQLQueries)
	}
	if bytes.Contains(bytes.ToLower(r.Body), []byte("sqlite")) || bytes.Contains(r.Body, []byte("SELECT")) {
		t.Errorf("SQL detail reached the client: %.300s", r.Body)
	}
}

// poster returns a maker of requests that POST a GraphQL document and its
// variables as JSON, signed in with token unless it is "".
func poster(s *apitest.Server, token string) func(q string, vars map[string]any) func() apitest.RawResponse {
	var header map[string]string
	if token != "" {
		header = map[string]string{"Authorization": "Bearer " + token}
	}
	return func(q string, vars map[string]any) func() apitest.RawResponse {
		return func() apitest.RawResponse {
			return s.Raw("POST", "/graphql", "application/json", apitest.Body(q, vars), header)
		}
	}
}

// malformedRequests are bodies that are not a GraphQL request, or
// documents that do not parse or validate.
func malformedRequests(s *apitest.Server) []hostileRequest {
	post := poster(s, "")
	return []hostileRequest{
		{"malformed JSON", func() apitest.RawResponse {
			return s.Raw("POST", "/graphql", "application/json", []byte(`{"query": "{ viewer { id }`), nil)
		}, 400, "BAD_REQUEST", true},
		{"not JSON at all", func() apitest.RawResponse {
			return s.Raw("POST", "/graphql", "application/json", []byte("\x00\xff\xfe"), nil)
		}, 400, "BAD_REQUEST", true},
		{"text/plain", func() apitest.RawResponse {
			return s.Raw("POST", "/graphql", "text/plain", apitest.Body("{ viewer { id } }", nil), nil)
		}, 415, "BAD_REQUEST", true},
		{"no content type", func() apitest.RawResponse {
			return s.Raw("POST", "/graphql", "", apitest.Body("{ viewer { id } }", nil), nil)
		}, 415, "BAD_REQUEST", true},
		{"10 MB body", func() apitest.RawResponse {
			return s.Raw("POST", "/graphql", "application/json", apitest.Body("{ viewer { id } }", map[string]any{"pad": strings.Repeat("x", 10<<20)}), nil)
		}, 413, "BAD_REQUEST", true},
		{"empty body", func() apitest.RawResponse { return s.Raw("POST", "/graphql", "application/json", nil, nil) }, 400, "BAD_REQUEST", true},
		{"JSON that is not a request", post("", nil), 0, "", true},
		{"unknown field", post(`{ user(name: "alice") { password } }`, nil), 200, "GRAPHQL_VALIDATION_FAILED", true},
		{"syntax error", post(`{ user(name: "alice" { id } }`, nil), 200, "GRAPHQL_PARSE_FAILED", true},
		{"wrong variable type", post(`query($id: ID) { user(id: $id) { id } }`, map[string]any{"id": map[string]any{"a": 1}}), 0, "GRAPHQL_VALIDATION_FAILED", true},
	}
}

// badArguments are valid documents whose ids, page sizes, cursors and
// names the resolvers must refuse with BAD_USER_INPUT, injection strings
// among them.
func badArguments(s *apitest.Server, alice apitest.Account) []hostileRequest {
	followersCursor, followingCursor := bobsCursors(s)
	post, asAlice := poster(s, ""), poster(s, alice.Token)
	follow := `mutation($id: ID!) { follow(input: {userId: $id}) { alreadyFollowing } }`
	create := `mutation($n: String!) { createUser(input: {name: $n}) { token } }`
	followers := `query($after: String, $first: Int) { user(name: "bob") { followers(first: $first, after: $after) { totalCount } } }`
	return []hostileRequest{
		{"id not a number", post(`{ user(id: "abc") { id } }`, nil), 200, "BAD_USER_INPUT", true},
		{"id too large", post(`{ user(id: "99999999999999999999999") { id } }`, nil), 200, "BAD_USER_INPUT", true},
		{"id negative", post(`{ user(id: "-5") { id } }`, nil), 200, "BAD_USER_INPUT", true},
		{"id injection", post(`{ user(id: "1 OR 1=1") { id } }`, nil), 200, "BAD_USER_INPUT", true},
		{"first negative", post(followers, map[string]any{"first": -1}), 200, "BAD_USER_INPUT", false},
		{"first enormous", post(followers, map[string]any{"first": 2147483647}), 200, "BAD_USER_INPUT", false},
		{"first beyond Int", post(`{ users(first: 99999999999999999999) { totalCount } }`, nil), 0, "", true},
		{"garbage cursor", post(followers, map[string]any{"after": "garbage!"}), 200, "BAD_USER_INPUT", false},
		{"tampered cursor", post(followers, map[string]any{"after": tampered(followersCursor)}), 200, "BAD_USER_INPUT", false},
		{"cursor of the other list", post(followers, map[string]any{"after": followingCursor}), 200, "BAD_USER_INPUT", false},
		{"empty name", post(create, map[string]any{"n": ""}), 200, "BAD_USER_INPUT", true},
		{"10,000-character name", post(create, map[string]any{"n": strings.Repeat("a", 10000)}), 200, "BAD_USER_INPUT", true},
		{"control character in name", post(create, map[string]any{"n": "bad\x00name"}), 200, "BAD_USER_INPUT", true},
		{"newline in name", post(create, map[string]any{"n": "bad\nname"}), 200, "BAD_USER_INPUT", true},
		{"injection in name", post(create, map[string]any{"n": "x'); DROP TABLE Users;--"}), 200, "BAD_USER_INPUT", true},
		{"duplicate name", post(create, map[string]any{"n": "Alice"}), 200, "BAD_USER_INPUT", false},
		{"follow id not a number", asAlice(follow, map[string]any{"id": "x"}), 200, "BAD_USER_INPUT", false},
	}
}

// bobsCursors reads the end cursors of bob's first page of followers and
// of following: real cursors, to tamper with and to send to the wrong list.
func bobsCursors(s *apitest.Server) (followers, following string) {
	var page struct {
		User struct {
			Followers struct{ PageInfo struct{ EndCursor string } }
			Following struct{ PageInfo struct{ EndCursor string } }
		}
	}
	s.Data("", `{ user(name: "bob") { followers(first: 1) { pageInfo { endCursor } } following(first: 1) { pageInfo { endCursor } } } }`, nil, &page)
	return page.User.Followers.PageInfo.EndCursor, page.User.Following.PageInfo.EndCursor
}

// tampered returns cursor with a digit slipped in after its first "|":
// still well-formed base64, but not a cursor the server wrote.
func tampered(cursor string) string {
	raw, _ := base64.RawURLEncoding.DecodeString(cursor)
	return base64.RawURLEncoding.EncodeToString(bytes.Replace(raw, []byte("|"), []byte("|9"), 1))
}

// costlyDocuments are documents past a limit (complexity, depth, aliases,
// operations), refused before any SQL runs, and one whose operation name
// names none of its operations.
func costlyDocuments(s *apitest.Server) []hostileRequest {
	post := poster(s, "")
	aliases := "{"
	for i := range 51 {
		aliases += fmt.Sprintf(" a%d: viewer { id }", i)
	}
	aliases += " }"
	operations := ""
	for i := range 21 {
		operations += fmt.Sprintf("query Q%d { viewer { id } } ", i)
	}
	return []hostileRequest{
		{"too complex", post(nested(3, 100), nil), 0, "COMPLEXITY_LIMIT_EXCEEDED", true},
		{"too deep", post(nested(13, 1), nil), 0, "DEPTH_LIMIT_EXCEEDED", true},
		{"too many aliases", post(aliases, nil), 0, "ALIAS_LIMIT_EXCEEDED", true},
		{"too many operations", func() apitest.RawResponse {
			b, _ := json.Marshal(map[string]any{"query": operations, "operationName": "Q0"})
			return s.Raw("POST", "/graphql", "application/json", b, nil)
		}, 0, "OPERATION_LIMIT_EXCEEDED", true},
		{"unknown operation name", func() apitest.RawResponse {
			b, _ := json.Marshal(map[string]any{"query": "query A { viewer { id } }", "operationName": "B"})
			return s.Raw("POST", "/graphql", "application/json", b, nil)
		}, 0, "", true},
	}
}

// injectionsDidNothing checks, after the hostile requests, that every
// table and row is still there and an injection string finds no one.
func injectionsDidNothing(t *testing.T, s *apitest.Server) {
	var users struct{ Users struct{ TotalCount int } }
	s.Data("", `{ users { totalCount } }`, nil, &users)
	if users.Users.TotalCount != 4 {
		t.Errorf("%d users after the hostile requests, want 4", users.Users.TotalCount)
	}
	r := s.Do("", `{ user(name: "' OR '1'='1") { id } }`, nil)
	if string(r.Data) != `{"user":null}` {
		t.Errorf("a name lookup with an injection string found %s", r.Data)
	}
}

// A request that outlives its deadline is cut short with a coded error,
// not a 500 and not a hang.
func TestRequestTimeout(t *testing.T) {
	s := apitest.Start(t, func(c *api.Config) {
		c.RequestTimeout = 20 * time.Millisecond
		c.BatchWait = 200 * time.Millisecond // the loaders outwait the deadline
	})
	s.Store.LoadSample(context.Background())
	start := time.Now()
	r := s.Do("", `{ users { nodes { followers { nodes { name } } } } }`, nil)
	if time.Since(start) > 5*time.Second {
		t.Errorf("the request took %v", time.Since(start))
	}
	if r.Code() != "INTERNAL_SERVER_ERROR" || !strings.Contains(r.Errors[0].Message, "timed out") {
		t.Errorf("errors %+v, want a timed-out error", r.Errors)
	}
}

// GraphiQL, introspection and CORS follow their flags.
func TestProductionFlags(t *testing.T) {
	introspect := apitest.Body(`{ __schema { queryType { name } } }`, nil)

	open := apitest.Start(t)
	if r := open.Raw("GET", "/", "", nil, nil); r.Status != 200 {
		t.Errorf("GraphiQL by default: %d", r.Status)
	}
	if r := open.Raw("POST", "/graphql", "application/json", introspect, nil); r.Parsed.Code() != "" {
		t.Errorf("introspection by default: %s", r.Body)
	}
	if r := open.Raw("OPTIONS", "/graphql", "", nil, map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS is on by default: %v", r.Header)
	}

	closed := apitest.Start(t, func(c *api.Config) {
		c.NoPlayground, c.NoIntrospection = true, true
		c.CORSOrigins = "https://app.example, https://admin.example"
	})
	if r := closed.Raw("GET", "/", "", nil, nil); r.Status != 404 {
		t.Errorf("GraphiQL with -no-playground: %d", r.Status)
	}
	if r := closed.Raw("POST", "/graphql", "application/json", introspect, nil); r.Parsed.Code() == "" {
		t.Errorf("introspection with -no-introspection: %s", r.Body)
	}
	pre := closed.Raw("OPTIONS", "/graphql", "", nil, map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "POST"})
	if pre.Status != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight from a listed origin: %d %v", pre.Status, pre.Header)
	}
	if r := closed.Raw("POST", "/graphql", "application/json", apitest.Body("{ viewer { id } }", nil), map[string]string{"Origin": "https://evil.example"}); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS answered an origin not listed: %v", r.Header)
	}
}
