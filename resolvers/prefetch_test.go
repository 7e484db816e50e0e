package resolvers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"follows/api/apitest"
	"follows/resolvers"
)

// A list argument that is out of bounds or not a cursor is reported by the
// field's own resolver, for each user of the list above it, with
// BAD_USER_INPUT naming the argument; prefetch, which reads the same
// arguments first, neither reports it nor fails.
func TestMalformedListArgumentIsTheFieldsToReport(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testMalformedListArgumentIsTheFieldsToReport)
}

func testMalformedListArgumentIsTheFieldsToReport(t *testing.T, on apitest.Database) {
	a := on.Start(t)
	if _, err := a.Store.LoadSample(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query    string
		vars     map[string]any
		argument string
	}{
		{`{ users { nodes { followers(first: 500) { totalCount } } } }`, nil, "first"},
		{`{ users { nodes { following(first: -1) { totalCount } } } }`, nil, "first"},
		{`query($n: Int) { users { nodes { mutualFollows(first: $n) { totalCount } } } }`, map[string]any{"n": 101}, "first"},
		{`{ users { nodes { followers(after: "not a cursor") { totalCount } } } }`, nil, "after"},
		{`query($c: String) { users { nodes { following(after: $c) { totalCount } } } }`, map[string]any{"c": 5}, "after"},
		{`{ users { nodes { followers(last: 500) { totalCount } } } }`, nil, "last"},
		{`{ users { nodes { followers(first: 1, last: 1) { totalCount } } } }`, nil, "last"},
		{`{ users { nodes { mutualFollows(before: "not a cursor") { totalCount } } } }`, nil, "before"},
	} {
		r := a.Do("", c.query, c.vars)
		if len(r.Errors) != 4 {
			t.Errorf("%s: %d errors, want one for each of the 4 users: %+v", c.query, len(r.Errors), r.Errors)
			continue
		}
		for _, e := range r.Errors {
			if e.Extensions["code"] != resolvers.CodeBadUserInput || e.Extensions["argument"] != c.argument ||
				!strings.HasPrefix(e.Message, c.argument+": ") || len(e.Path) != 4 {
				t.Errorf("%s: error %+v, want BAD_USER_INPUT for %s at users.nodes.N.field", c.query, e, c.argument)
			}
		}
	}
	if logs := a.Logs(); strings.Contains(logs, "prefetch") {
		t.Errorf("prefetch logged a malformed argument:\n%s", logs)
	}
	// Suggestions are the viewer's own; their argument is checked then.
	token := a.CreateUser("erin").Token
	r := a.Do(token, `{ viewer { suggestions(first: 101) { via } } }`, nil)
	if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != resolvers.CodeBadUserInput || r.Errors[0].Extensions["argument"] != "first" {
		t.Errorf("viewer.suggestions(first: 101): %+v, want BAD_USER_INPUT for first", r.Errors)
	}
}

// Prefetch reads a list's arguments as gqlgen hands them to the list's
// resolver, an Int variable sent as a string included, so that the
// resolvers find their pages loaded: one batch for the whole list.
func TestPrefetchReadsArgumentsAsTheResolver(t *testing.T) {
	apitest.Each(t, testPrefetchReadsArgumentsAsTheResolver)
}

func testPrefetchReadsArgumentsAsTheResolver(t *testing.T, on apitest.Database) {
	a := on.Start(t, steadyBatches)
	if _, err := a.Store.LoadSample(context.Background()); err != nil {
		t.Fatal(err)
	}
	query := `query($n: Int) { users { nodes { followers(first: $n) { nodes { name } } } } }`
	for _, vars := range []map[string]any{{"n": 1}, {"n": "1"}, {}, {"n": nil}} {
		batches, keys := a.LoaderBatches("followers")
		r := a.Do("", query, vars)
		if len(r.Errors) > 0 {
			t.Fatalf("%v: %+v", vars, r.Errors)
		}
		b, k := a.LoaderBatches("followers")
		if b-batches != 1 || k-keys != 4 {
			t.Errorf("%v: %d followers batches of %d keys in all, want one of all 4 users", vars, b-batches, k-keys)
		}
	}
	var page struct {
		Users struct {
			Nodes []struct {
				Followers struct{ Nodes []struct{ Name string } }
			}
		}
	}
	if err := json.Unmarshal(a.Do("", query, map[string]any{"n": "1"}).Data, &page); err != nil {
		t.Fatal(err)
	}
	for _, u := range page.Users.Nodes {
		if len(u.Followers.Nodes) > 1 {
			t.Errorf("first: \"1\" gave %d followers", len(u.Followers.Nodes))
		}
	}
}

// gqlgen lets through, and then panics on, an @skip whose `if` is a
// variable with a default sent as null. Prefetch meets it first: it logs
// that it skipped, and leaves the error to gqlgen's own execution of the
// selection rather than failing the list's resolver.
func TestPrefetchSkipsWhatGqlgenCannotCollect(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testPrefetchSkipsWhatGqlgenCannotCollect)
}

func testPrefetchSkipsWhatGqlgenCannotCollect(t *testing.T, on apitest.Database) {
	a := on.Start(t)
	if _, err := a.Store.LoadSample(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := a.Do("", `query($s: Boolean = false) { users { nodes { name followers @skip(if: $s) { totalCount } } } }`, map[string]any{"s": nil})
	if len(r.Errors) == 0 {
		t.Fatalf("no error: %s", r.Data)
	}
	for _, e := range r.Errors {
		if len(e.Path) == 1 {
			t.Errorf("the users resolver failed: %+v", e)
		}
	}
	if logs := a.Logs(); !strings.Contains(logs, "prefetch skipped") || !strings.Contains(logs, "not a boolean") {
		t.Errorf("prefetch did not log what it skipped:\n%s", logs)
	}
}
