package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"follows/api"
	"follows/api/apitest"
)

// Each limit on a document refuses with its code before gqlgen parses and
// validates it, and a document within them all still runs.
func TestDocumentLimits(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	s.Sample()
	tree := func(levels int) string { // ofType twice in each ofType: 2^levels pairs to compare
		q := "name"
		for range levels {
			q = "ofType { " + q + " } ofType { " + q + " }"
		}
		return `{ __type(name: "User") { ` + q + ` } }`
	}
	spreads := func(n int) string { // each fragment spreads the next
		q := "{ ...F0 }"
		for i := range n {
			q += fmt.Sprintf(" fragment F%d on Query { ...F%d }", i, i+1)
		}
		return q + fmt.Sprintf(" fragment F%d on Query { __typename }", n)
	}
	tests := []struct {
		name, query, code string
	}{
		{"tokens", "{" + strings.Repeat(" __typename", 15001) + " }", "TOKEN_LIMIT_EXCEEDED"},
		{"selections through nested fragments", fragmentBomb(13), "SELECTION_LIMIT_EXCEEDED"},
		{"selections through a chain of fragments", spreads(100), "SELECTION_LIMIT_EXCEEDED"},
		{"breadth", "{" + strings.Repeat(" __typename", 101) + " }", "BREADTH_LIMIT_EXCEEDED"},
		{"breadth through fragments", fragmentBomb(7), "BREADTH_LIMIT_EXCEEDED"},
		{"overlaps of nested same-named fields", tree(8), "OVERLAP_LIMIT_EXCEEDED"},
		{"a syntax error", "{ __typename", "GRAPHQL_PARSE_FAILED"},
		{"a fragment cycle", "{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }", "GRAPHQL_VALIDATION_FAILED"},
		{"within every limit", "{" + strings.Repeat(" __typename", 99) + " " + tree(5)[1:], ""},
		{"within every limit, through fragments", fragmentBomb(6), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.Do("", tc.query, nil)
			if r.Code() != tc.code {
				t.Fatalf("code %q, want %q: %+v", r.Code(), tc.code, r.Errors)
			}
			if tc.code != "" && r.Extensions.Debug.SQLQueries != 0 {
				t.Errorf("%d SQL statements ran for a refused document", r.Extensions.Debug.SQLQueries)
			}
		})
	}
}

// Raised above the document limits, the attacks of issue 12 meet the next
// defence: 20,000 repeated __typename the selection limit, then the
// breadth limit; 100,000 unknown directives the cap on errors.
func TestDefencesInDepth(t *testing.T) {
	t.Parallel()
	typename := "{" + strings.Repeat(" __typename", 20000) + " }"
	s := apitest.Start(t, func(c *api.Config) { c.MaxTokens = 1 << 20 })
	if r := s.Do("", typename, nil); r.Code() != "SELECTION_LIMIT_EXCEEDED" {
		t.Errorf("20,000 __typename: code %q, want SELECTION_LIMIT_EXCEEDED", r.Code())
	}
	wide := apitest.Start(t, func(c *api.Config) { c.MaxTokens, c.MaxSelections = 1<<20, 1<<20 })
	if r := wide.Do("", typename, nil); r.Code() != "BREADTH_LIMIT_EXCEEDED" {
		t.Errorf("20,000 __typename: code %q, want BREADTH_LIMIT_EXCEEDED", r.Code())
	}

	raw := s.Raw("POST", "/graphql", "application/json", apitest.Body("{ __typename"+strings.Repeat(" @a", 100000)+" }", nil), nil)
	errs := raw.Parsed.Errors
	if len(errs) != 101 || errs[0].Extensions["code"] != "GRAPHQL_VALIDATION_FAILED" || errs[100].Extensions["code"] != "TOO_MANY_ERRORS" {
		t.Fatalf("100,000 unknown directives: %d errors, want 100 and TOO_MANY_ERRORS: %.300s", len(errs), raw.Body)
	}
	if !strings.Contains(errs[100].Message, "more errors were left out") || len(raw.Body) > 64<<10 {
		t.Errorf("%d bytes, the last error %q", len(raw.Body), errs[100].Message)
	}
}

// A response larger than -max-response is replaced by one coded error.
func TestResponseTooLarge(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, func(c *api.Config) { c.MaxResponse = 100 })
	if _, err := s.Store.LoadSample(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := s.Do("", `{ users { nodes { name followers { nodes { name } } } } }`, nil)
	if r.Code() != "RESPONSE_TOO_LARGE" || len(r.Errors) != 1 || string(r.Data) != "null" {
		t.Errorf("code %q, %d errors, data %s", r.Code(), len(r.Errors), r.Data)
	}
	var small struct{ User struct{ Name string } }
	s.Data("", `{ user(name: "alice") { name } }`, nil, &small)
}
