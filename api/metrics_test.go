package api_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"follows/api/apitest"
)

// /metrics counts operations by name, SQL statements, loader batches and
// errors by code; /readyz answers while the database does; the request log
// names the operation.
func TestOperationsEndpoints(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	users := s.Sample()
	s.Data("", `query Profile { users(first: 4) { nodes { name followers { nodes { name } } } } }`, nil, &struct{}{})
	// alice's suggestions need bob's and carol's lists: read the first
	// time, held the second.
	for range 2 {
		s.Data(users["alice"].Token, `query Suggest($id: ID!) { user(id: $id) { suggestions(first: 5) { via user { name } } } }`,
			map[string]any{"id": users["alice"].ID}, &struct{}{})
	}
	s.Do("", `query Broken { user(id: "x") { id } }`, nil)
	s.Raw("POST", "/graphql", "text/plain", []byte("hi"), nil)

	get := func(path string) (int, string) {
		resp, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := get("/metrics")
	if status != 200 {
		t.Fatalf("/metrics: %d", status)
	}
	for _, want := range []string{
		`follows_graphql_requests_total{operation="Profile"} 1`,
		`follows_graphql_requests_total{operation="Suggest"} 2`,
		`follows_graphql_request_duration_seconds_count{operation="Profile"} 1`,
		`follows_graphql_errors_total{code="BAD_USER_INPUT"} 1`,
		`follows_graphql_errors_total{code="BAD_REQUEST"} 1`,
		`follows_loader_batch_size_count{loader="followers"}`,
		`follows_suggestion_lists_total{result="hit"} 2`,
		`follows_suggestion_lists_total{result="miss"} 2`,
		`follows_suggestion_lists_held 2`,
		`follows_suggestion_names_total{result="hit"} 1`,
		`follows_suggestion_names_held 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if m := regexp.MustCompile(`follows_sql_statement_duration_seconds_count (\d+)`).FindStringSubmatch(body); m == nil || m[1] == "0" {
		t.Errorf("/metrics counts no SQL statements")
	}
	if status, body := get("/readyz"); status != 200 || body != "ready\n" {
		t.Errorf("/readyz = %d %q", status, body)
	}
	if !strings.Contains(s.Logs(), "operation=Profile") {
		t.Errorf("the request log does not name the operation:\n%s", s.Logs())
	}
	s.Store.Close()
	if status, _ := get("/readyz"); status != 503 {
		t.Errorf("/readyz with the database closed = %d, want 503", status)
	}
}

// Automatic persisted queries: a hash alone is refused until the query has
// been sent once with it, then the hash alone runs it.
func TestPersistedQueries(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	s.Sample()
	query := `{ user(name: "alice") { followerCount } }`
	sum := sha256.Sum256([]byte(query))
	ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
	send := func(q string) apitest.RawResponse {
		body := map[string]any{"extensions": ext}
		if q != "" {
			body["query"] = q
		}
		b, _ := json.Marshal(body)
		return s.Raw("POST", "/graphql", "application/json", b, nil)
	}
	if r := send(""); !strings.Contains(string(r.Body), "PersistedQueryNotFound") {
		t.Errorf("an unknown hash: %s", r.Body)
	}
	if r := send(query); string(r.Parsed.Data) != `{"user":{"followerCount":1}}` {
		t.Errorf("query with its hash: %s", r.Body)
	}
	if r := send(""); string(r.Parsed.Data) != `{"user":{"followerCount":1}}` {
		t.Errorf("the hash alone after: %s", r.Body)
	}
}

// An operation's name can be as long as the body: a 200 KB name is
// answered, and its label and its request's log line carry 100 bytes of
// it, not 200 KB each.
func TestLongOperationName(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	name := "Long" + strings.Repeat("x", 200<<10)
	var out struct {
		Typename string `json:"__typename"`
	}
	s.Data("", "query "+name+" { __typename }", nil, &out)
	metrics := string(s.Raw("GET", "/metrics", "", nil, nil).Body)
	if !strings.Contains(metrics, `follows_graphql_requests_total{operation="`+name[:100]+`"} 1`) || len(metrics) > 100<<10 {
		t.Errorf("/metrics is %d KB; want the name's first 100 bytes as its label, once", len(metrics)>>10)
	}
	logs := s.Logs()
	if !strings.Contains(logs, "operation="+name[:100]+" ") || len(logs) > 10<<10 {
		t.Errorf("the log is %d KB; want one line with the name's first 100 bytes", len(logs)>>10)
	}
}

// The request log gives a method as much as a label gives a name: net/http
// takes a method of any length the request line allows (a megabyte), and
// a 100 KB one is refused, in one short log line.
func TestLongMethod(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	method := strings.Repeat("X", 100<<10)
	c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "%s /graphql HTTP/1.1\r\nHost: follows\r\nConnection: close\r\n\r\n", method)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("status %d; want 405", resp.StatusCode)
	}
	logs := s.Logs()
	if !strings.Contains(logs, "method="+method[:100]+" ") || len(logs) > 10<<10 {
		t.Errorf("the log is %d KB; want one line with the method's first 100 bytes", len(logs)>>10)
	}
}
