package resolvers

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A list argument that is out of bounds or not a cursor is reported by the
// field's own resolver, for each user of the list above it, with
// BAD_USER_INPUT naming the argument; prefetch, which reads the same
// arguments first, neither reports it nor fails.
func TestMalformedListArgumentIsTheFieldsToReport(t *testing.T) {
	a := newTestAPI(t)
	if _, err := a.store.LoadSample(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query, vars, argument string
	}{
		{`{ users { nodes { followers(first: 500) { totalCount } } } }`, ``, "first"},
		{`{ users { nodes { following(first: -1) { totalCount } } } }`, ``, "first"},
		{`query($n: Int) { users { nodes { mutualFollows(first: $n) { totalCount } } } }`, `{"n": 101}`, "first"},
		{`{ users { nodes { followers(after: "not a cursor") { totalCount } } } }`, ``, "after"},
		{`query($c: String) { users { nodes { following(after: $c) { totalCount } } } }`, `{"c": 5}`, "after"},
	} {
		r := a.do("", c.query, c.vars)
		if len(r.Errors) != 4 {
			t.Errorf("%s: %d errors, want one for each of the 4 users: %+v", c.query, len(r.Errors), r.Errors)
			continue
		}
		for _, e := range r.Errors {
			if e.Extensions["code"] != CodeBadUserInput || e.Extensions["argument"] != c.argument ||
				!strings.HasPrefix(e.Message, c.argument+": ") || len(e.Path) != 4 {
				t.Errorf("%s: error %+v, want BAD_USER_INPUT for %s at users.nodes.N.field", c.query, e, c.argument)
			}
		}
	}
	if strings.Contains(a.logs.String(), "prefetch") {
		t.Errorf("prefetch logged a malformed argument:\n%s", a.logs)
	}
	// Suggestions are the viewer's own; their argument is checked then.
	_, token := a.user("erin")
	r := a.do(token, `{ viewer { suggestions(first: 101) { via } } }`, "")
	if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != CodeBadUserInput || r.Errors[0].Extensions["argument"] != "first" {
		t.Errorf("viewer.suggestions(first: 101): %+v, want BAD_USER_INPUT for first", r.Errors)
	}
}

// Prefetch reads a list's arguments as gqlgen hands them to the list's
// resolver, an Int variable sent as a string included, so that the
// resolvers find their pages loaded: one batch for the whole list.
func TestPrefetchReadsArgumentsAsTheResolver(t *testing.T) {
	a := newTestAPI(t)
	if _, err := a.store.LoadSample(context.Background()); err != nil {
		t.Fatal(err)
	}
	query := `query($n: Int) { users { nodes { followers(first: $n) { nodes { name } } } } }`
	for _, vars := range []string{`{"n": 1}`, `{"n": "1"}`, `{}`, `{"n": null}`} {
		r := a.do("", query, vars)
		if len(r.Errors) > 0 {
			t.Fatalf("%s: %+v", vars, r.Errors)
		}
		if got := a.batchesOf("followers"); !slices.Equal(got, []int{4}) {
			t.Errorf("%s: followers batches %v, want one of all 4 users", vars, got)
		}
	}
	var page struct {
		Users struct {
			Nodes []struct {
				Followers struct{ Nodes []struct{ Name string } }
			}
		}
	}
	if err := json.Unmarshal(a.do("", query, `{"n": "1"}`).Data, &page); err != nil {
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
	a := newTestAPI(t)
	if _, err := a.store.LoadSample(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := a.do("", `query($s: Boolean = false) { users { nodes { name followers @skip(if: $s) { totalCount } } } }`, `{"s": null}`)
	if len(r.Errors) == 0 {
		t.Fatalf("no error: %s", r.Data)
	}
	for _, e := range r.Errors {
		if len(e.Path) == 1 {
			t.Errorf("the users resolver failed: %+v", e)
		}
	}
	if logs := a.logs.String(); !strings.Contains(logs, "prefetch skipped") || !strings.Contains(logs, "not a boolean") {
		t.Errorf("prefetch did not log what it skipped:\n%s", logs)
	}
}
