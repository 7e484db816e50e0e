package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"follows/api"
	"follows/api/apitest"
)

// The attacks of issue 12 on what a GraphQL document costs, each over HTTP
// against a real server with a bounded number of requests: each is refused
// with a code, and while it runs a profile query keeps answering and the
// process's peak RSS stays under 300 MB (apitest.UnderAttack).

// post is a request carrying body as JSON to /graphql.
func post(s *apitest.Server, body []byte) *http.Request {
	req, _ := http.NewRequest("POST", s.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return req
}

// refused fails the test unless r is a short answer (under 64 KB), an
// error with the code want, and no server error.
func refused(t *testing.T, r apitest.RawResponse, want string) {
	t.Helper()
	if len(r.Body) > 64<<10 {
		t.Fatalf("a refusal of %d KB", len(r.Body)>>10)
	}
	if r.Status >= 500 || r.Parsed.Code() != want {
		t.Fatalf("status %d, code %q, want %q: %.300s", r.Status, r.Parsed.Code(), want, r.Body)
	}
}

// repeatAttack posts body n times to s while UnderAttack watches, each
// refused with the code want.
func repeatAttack(t *testing.T, s *apitest.Server, n int, body []byte, want string) {
	t.Helper()
	s.UnderAttack(func() {
		for range n {
			refused(t, s.Send(post(s, body)), want)
		}
	})
}

// refusedWithCode fails the test unless r is an error with a code and no
// server error.
func refusedWithCode(t *testing.T, r apitest.RawResponse) {
	t.Helper()
	if r.Status >= 500 || r.Parsed.Code() == "" {
		t.Fatalf("status %d, no code: %.300s", r.Status, r.Body)
	}
}

// heapGrowth is how much live heap doing f left behind, in bytes.
func heapGrowth(f func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// GraphiQL's own introspection query passes every limit at the defaults.
// testdata/graphiql-introspection.json is the body GraphiQL 4 (graphiql/)
// posts when its page loads, as captured from headless Chromium: graphql-js's
// getIntrospectionQuery with GraphiQL's options.
func TestGraphiQLIntrospectionPasses(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	body, err := os.ReadFile("testdata/graphiql-introspection.json")
	if err != nil {
		t.Fatal(err)
	}
	r := s.Send(post(s, body))
	if r.Status != 200 || len(r.Parsed.Errors) > 0 || !bytes.Contains(r.Parsed.Data, []byte(`"__schema":{"queryType":{"name":"Query"`)) {
		t.Fatalf("status %d: %.500s", r.Status, r.Body)
	}
}

// A thousand aliased __schema (a 209 KB body) answered 165 MB: introspection
// escaped both the alias limit and complexity.
func TestAttackAliasedSchema(t *testing.T) {
	s := apitest.Start(t)
	s.Sample()
	var q strings.Builder
	q.WriteString("query {")
	for i := range 1000 {
		fmt.Fprintf(&q, " a%d: __schema { queryType { name } types { kind name description fields { name description args { name type { name } } type { kind name ofType { kind name } } } enumValues { name } interfaces { name } } }", i)
	}
	q.WriteString(" }")
	body := apitest.Body(q.String(), nil)
	t.Logf("body %d KB", len(body)>>10)
	repeatAttack(t, s, 10, body, "TOKEN_LIMIT_EXCEEDED")

	// Within the token limit, introspection counts toward aliases and
	// complexity as any field does.
	aliases := "{"
	for i := range 51 {
		aliases += fmt.Sprintf(" a%d: __schema { queryType { name } }", i)
	}
	refused(t, s.Send(post(s, apitest.Body(aliases+" }", nil))), "ALIAS_LIMIT_EXCEEDED")
	cheap := apitest.Start(t, func(c *api.Config) { c.MaxComplexity = 100 })
	costly := "{"
	for i := range 30 {
		costly += fmt.Sprintf(" a%d: __schema { queryType { name } types { name fields { name } } }", i)
	}
	refused(t, cheap.Send(post(cheap, apitest.Body(costly+" }", nil))), "COMPLEXITY_LIMIT_EXCEEDED")
}

// Sixty distinct documents of 889 KB of aliased __typename, each refused,
// left 1.26 GB in the parsed-query cache.
func TestAttackLargeDocumentsNotRetained(t *testing.T) {
	s := apitest.Start(t)
	s.Sample()
	// Built by hand, cheaply, so that the client's work does not slow
	// the profile queries down; the text needs no JSON escaping.
	doc := func(n int) []byte {
		b := []byte(`{"query":"{`)
		for i := 0; len(b) < 889<<10; i++ {
			b = fmt.Appendf(b, " d%d_", n)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, ": __typename"...)
		}
		return append(b, ` }"}`...)
	}
	var grew int64
	var last apitest.RawResponse
	s.UnderAttack(func() {
		grew = heapGrowth(func() {
			for n := range 60 {
				last = s.Send(post(s, doc(n)))
				refusedWithCode(t, last)
			}
		})
	})
	if grew > 50<<20 {
		t.Errorf("60 refused documents left %d MB of live heap, want under 50", grew>>20)
	}
	refused(t, last, "TOKEN_LIMIT_EXCEEDED")
}

// fragmentBomb is 1 KB of fragments that each spread the one before twice,
// levels deep: 2^levels fields once expanded.
func fragmentBomb(levels int) string {
	var q strings.Builder
	fmt.Fprintf(&q, "query { ...F%d }\nfragment F0 on Query { __typename }\n", levels)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&q, "fragment F%d on Query { ...F%d ...F%d }\n", i, i-1, i-1)
	}
	return q.String()
}

// Nested fragments 25 levels deep took 5.7 s of CPU, doubling per level,
// before complexity refused them.
func TestAttackNestedFragments(t *testing.T) {
	s := apitest.Start(t)
	s.Sample()
	repeatAttack(t, s, 20, apitest.Body(fragmentBomb(25), nil), "SELECTION_LIMIT_EXCEEDED")
}

// 20,000 repeated __typename (220 KB) took 25 s of CPU in validation,
// which compares pairwise the fields sharing a response name.
func TestAttackRepeatedTypename(t *testing.T) {
	s := apitest.Start(t)
	s.Sample()
	repeatAttack(t, s, 20, apitest.Body("{"+strings.Repeat(" __typename", 20000)+" }", nil), "TOKEN_LIMIT_EXCEEDED")
}

// A 300 KB request of 100,000 unknown directives answered 29.6 MB of
// errors.
func TestAttackUnknownDirectives(t *testing.T) {
	s := apitest.Start(t)
	s.Sample()
	repeatAttack(t, s, 10, apitest.Body("{ __typename"+strings.Repeat(" @a", 100000)+" }", nil), "TOKEN_LIMIT_EXCEEDED")
}

// A 700 KB query string passed with -max-body 10000.
func TestAttackLongQueryString(t *testing.T) {
	s := apitest.Start(t, func(c *api.Config) { c.MaxBody = 10000 })
	s.Sample()
	query := "{" + strings.Repeat(" __typename", 700<<10/11) + " }"
	target := s.URL + "/graphql?query=" + url.QueryEscape(query)
	s.UnderAttack(func() {
		for range 20 {
			req, _ := http.NewRequest("GET", target, nil)
			r := s.Send(req)
			if (r.Status != 413 && r.Status != 414) || r.Parsed.Code() != "BAD_REQUEST" {
				t.Fatalf("status %d, code %q, want 413 or 414 with BAD_REQUEST: %.300s", r.Status, r.Parsed.Code(), r.Body)
			}
		}
	})
	req, _ := http.NewRequest("GET", s.URL+"/graphql?query="+url.QueryEscape(apitest.ProfileQuery), nil)
	if r := s.Send(req); r.Status != 200 || !bytes.Contains(r.Parsed.Data, []byte("alice")) {
		t.Errorf("a short GET: %d %.300s", r.Status, r.Body)
	}
}

// 200 junk operation names took every metrics label, and real operations
// were then counted as other.
func TestAttackJunkOperationNames(t *testing.T) {
	s := apitest.Start(t)
	s.Sample()
	s.UnderAttack(func() {
		for i := range 200 {
			q := fmt.Sprintf("query Junk%d {", i)
			for a := range 51 {
				q += fmt.Sprintf(" a%d: __typename", a)
			}
			refused(t, s.Send(post(s, apitest.Body(q+" }", nil))), "ALIAS_LIMIT_EXCEEDED")
		}
	})
	s.Data("", "query Profile "+apitest.ProfileQuery, nil, &struct{}{})
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	if !bytes.Contains(metrics, []byte(`follows_graphql_requests_total{operation="Profile"} 1`)) {
		t.Errorf("/metrics does not count Profile under its name:\n%s", grep(metrics, "follows_graphql_requests_total"))
	}
	if bytes.Contains(metrics, []byte(`operation="Junk`)) {
		t.Errorf("/metrics labels refused operations:\n%.500s", grep(metrics, "Junk"))
	}
}

// grep is the lines of b that contain s.
func grep(b []byte, s string) string {
	var out strings.Builder
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, s) {
			out.WriteString(line)
		}
	}
	return out.String()
}

// Automatic persisted queries stored any string of up to 1 MB before
// parsing it: 100 junk entries held 100 MB.
func TestAttackPersistedQueryJunk(t *testing.T) {
	s := apitest.Start(t)
	s.Sample()
	// Built by hand, cheaply, so that the client's work does not slow
	// the profile queries down; the junk needs no JSON escaping.
	apq := func(query, hash string) []byte {
		b := []byte(`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hash + `"}}`)
		if query != "" {
			b = append(append(append(b, `,"query":"`...), query...), '"')
		}
		return append(b, '}')
	}
	junk := strings.Repeat("junk ", 900<<10/5)
	var hashes []string
	var grew int64
	var last apitest.RawResponse
	s.UnderAttack(func() {
		grew = heapGrowth(func() {
			for i := range 100 {
				query := strconv.Itoa(i) + junk
				sum := sha256.Sum256([]byte(query))
				hashes = append(hashes, hex.EncodeToString(sum[:]))
				last = s.Send(post(s, apq(query, hashes[i])))
				refusedWithCode(t, last)
			}
		})
	})
	if grew > 50<<20 {
		t.Errorf("100 junk persisted queries left %d MB of live heap, want under 50", grew>>20)
	}
	refused(t, last, "TOKEN_LIMIT_EXCEEDED")
	for _, h := range []string{hashes[0], hashes[99]} {
		refused(t, s.Send(post(s, apq("", h))), "PERSISTED_QUERY_NOT_FOUND")
	}
}
