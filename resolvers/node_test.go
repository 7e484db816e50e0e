package resolvers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"follows/api/apitest"
	"follows/resolvers"
)

// node and nodes find users by the ids the schema hands out; an id that
// names no one, names a deactivated user, or is not an id at all answers
// null without an error, as Relay expects of a refetch.
func TestNodeIDs(t *testing.T) {
	a := apitest.Start(t)
	u := a.Sample()
	alice, bob := u["alice"], u["bob"]

	var one struct {
		Node *struct{ Typename, ID, Name string }
	}
	a.Data("", `query($id: ID!) { node(id: $id) { typename: __typename id ... on User { name } } }`,
		map[string]any{"id": alice.ID}, &one)
	if one.Node == nil || one.Node.Typename != "User" || one.Node.ID != alice.ID || one.Node.Name != "alice" {
		t.Errorf("node(id: alice's id) = %+v, want alice", one.Node)
	}

	for _, id := range []string{"999999", "0", "-1", "abc", "", "User:1", "1 OR 1=1", "99999999999999999999999"} {
		r := a.Do("", `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": id})
		if len(r.Errors) > 0 || string(r.Data) != `{"node":null}` {
			t.Errorf("node(id: %q) = %s %+v, want null without an error", id, r.Data, r.Errors)
		}
	}

	var many struct {
		Nodes []*struct{ ID, Name string }
	}
	r := a.Data("", `query($ids: [ID!]!) { nodes(ids: $ids) { id ... on User { name } } }`,
		map[string]any{"ids": []string{bob.ID, "999999", alice.ID, "abc", bob.ID}}, &many)
	got := []string{}
	for _, n := range many.Nodes {
		if n == nil {
			got = append(got, "null")
			continue
		}
		got = append(got, n.Name)
	}
	if strings.Join(got, ",") != "bob,null,alice,null,bob" {
		t.Errorf("nodes = %v, want [bob null alice null bob]", got)
	}
	if r.Extensions.Debug.SQLQueries != 1 {
		t.Errorf("nodes of 5 ids ran %d statements, want 1", r.Extensions.Debug.SQLQueries)
	}

	// Deactivated, alice is null to others, as for user(id:), and herself
	// to herself.
	if _, _, err := a.Store.SetDeactivated(context.Background(), mustID(t, alice.ID), true); err != nil {
		t.Fatal(err)
	}
	q := `query($id: ID!) { node(id: $id) { id } nodes(ids: [$id]) { id } }`
	if r := a.Do(bob.Token, q, map[string]any{"id": alice.ID}); len(r.Errors) > 0 || string(r.Data) != `{"node":null,"nodes":[null]}` {
		t.Errorf("a deactivated user to another: %s %+v", r.Data, r.Errors)
	}
	if r := a.Do(alice.Token, q, map[string]any{"id": alice.ID}); len(r.Errors) > 0 ||
		string(r.Data) != fmt.Sprintf(`{"node":{"id":"%s"},"nodes":[{"id":"%s"}]}`, alice.ID, alice.ID) {
		t.Errorf("a deactivated user to itself: %s %+v", r.Data, r.Errors)
	}
}

// ids makes n ids, the given ones first and then ids that name no one.
func ids(n int, known ...string) []string {
	out := append([]string{}, known...)
	for i := len(out); i < n; i++ {
		out = append(out, strconv.Itoa(100000+i))
	}
	return out
}

// nodes takes at most 100 ids, one statement for them all, and is priced
// for each id it asks for.
func TestNodesBounds(t *testing.T) {
	a := apitest.Start(t)
	u := a.Sample()

	var out struct{ Nodes []*struct{ ID string } }
	r := a.Data("", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`,
		map[string]any{"ids": ids(100, u["alice"].ID, u["dave"].ID)}, &out)
	if len(out.Nodes) != 100 || out.Nodes[0] == nil || out.Nodes[1] == nil || out.Nodes[2] != nil {
		t.Errorf("100 ids: %d nodes, first three %v %v %v", len(out.Nodes), out.Nodes[0], out.Nodes[1], out.Nodes[2])
	}
	if r.Extensions.Debug.SQLQueries != 1 {
		t.Errorf("nodes of 100 ids ran %d statements, want 1", r.Extensions.Debug.SQLQueries)
	}

	r = a.Do("", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": ids(101)})
	if r.Code() != resolvers.CodeBadUserInput || r.Errors[0].Extensions["argument"] != "ids" || r.Extensions.Debug.SQLQueries != 0 {
		t.Errorf("101 ids: %+v after %d statements, want BAD_USER_INPUT naming ids before any", r.Errors, r.Extensions.Debug.SQLQueries)
	}

	// followers(first: 100) { totalCount } costs 101 for each user: 40
	// ids are within the default limit of 5000, 50 are not.
	q := `query($ids: [ID!]!) { nodes(ids: $ids) { ... on User { followers(first: 100) { totalCount } } } }`
	if r := a.Do("", q, map[string]any{"ids": ids(40)}); len(r.Errors) > 0 {
		t.Errorf("40 ids: %+v", r.Errors)
	}
	if r := a.Do("", q, map[string]any{"ids": ids(50)}); r.Code() != "COMPLEXITY_LIMIT_EXCEEDED" {
		t.Errorf("50 ids: code %q, want COMPLEXITY_LIMIT_EXCEEDED", r.Code())
	}
}

// Root fields that find users by id share one batch, however many of
// them a query holds, and the lookups under them batch too: fifty aliased
// user(id:) cost what one does.
func TestRootUserFieldsBatch(t *testing.T) {
	a := apitest.Start(t, steadyBatches)
	u := a.Sample()
	order := []string{u["alice"].ID, u["bob"].ID, u["carol"].ID, u["dave"].ID}
	const fields = `name followerCount viewerFollows followers(first: 2) { nodes { name } }`
	query := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, " u%d: user(id: %q) { %s }", i, order[i%len(order)], fields)
		}
		return b.String() + " }"
	}
	var one map[string]json.RawMessage
	r1 := a.Data(u["dave"].Token, query(1), nil, &one)
	var fifty map[string]*struct{ Name string }
	r50 := a.Data(u["dave"].Token, query(50), nil, &fifty)
	if len(fifty) != 50 || fifty["u49"] == nil || fifty["u49"].Name != "bob" {
		t.Fatalf("fifty user fields answered %d, u49 %+v", len(fifty), fifty["u49"])
	}
	// users, followers pages, the viewer's follows: one statement each.
	if r1.Extensions.Debug.SQLQueries != 3 || r50.Extensions.Debug.SQLQueries != 3 {
		t.Errorf("one user field ran %d statements, fifty ran %d; want 3 and 3",
			r1.Extensions.Debug.SQLQueries, r50.Extensions.Debug.SQLQueries)
	}

	// user, node and nodes beside one another: one statement.
	r := a.Do("", fmt.Sprintf(`{ a: user(id: %q) { name } b: node(id: %q) { id } c: nodes(ids: [%q, %q]) { id } d: user(id: %q) { name } }`,
		order[0], order[1], order[2], order[3], order[3]), nil)
	if len(r.Errors) > 0 || r.Extensions.Debug.SQLQueries != 1 {
		t.Errorf("user, node and nodes side by side: %d statements, errors %+v; want 1", r.Extensions.Debug.SQLQueries, r.Errors)
	}
}

// A root field's user comes with the first lists its selection asks
// (db.Along): on PostgreSQL in their statement, so that a profile, a
// user's mutual follows and a viewer's suggestions each cost one
// statement; elsewhere in a statement of its own. The root user's row is
// the one it answers with (counts included) and checks the token
// against: another viewer's suggestions are refused; a deactivated user
// answers null, and a deactivated viewer sees its account and no
// suggestions, as before.
func TestRootUsersComeWithTheirLists(t *testing.T) {
	apitest.Each(t, func(t *testing.T, d apitest.Database) {
		t.Parallel()
		s := d.Start(t, steadyBatches)
		viewer, a, b, x := s.CreateUser("viewer"), s.CreateUser("a"), s.CreateUser("b"), s.CreateUser("x")
		s.Follow(viewer, a)
		s.Follow(viewer, b)
		s.Follow(a, viewer)
		s.Follow(a, x)
		s.Follow(b, x)
		// The user's own statement, on a database that reads it apart.
		own := 1
		if d == apitest.Postgres {
			own = 0
		}
		vars := map[string]any{"id": viewer.ID}
		for _, c := range []struct {
			name, token, query string
			want               string
			statements         int
		}{
			{"profile", "", `query($id: ID!) { user(id: $id) { name followerCount followingCount followers(first: 20) { edges { node { name } } } } }`,
				`{"user":{"name":"viewer","followerCount":1,"followingCount":2,"followers":{"edges":[{"node":{"name":"a"}}]}}}`, 1},
			{"mutual follows", "", `query($id: ID!) { user(id: $id) { name mutualFollows(first: 20) { nodes { name } } } }`,
				`{"user":{"name":"viewer","mutualFollows":{"nodes":[{"name":"a"}]}}}`, 1},
			{"suggestions", viewer.Token, `query($id: ID!) { user(id: $id) { name suggestions(first: 10) { via user { name } } } }`,
				`{"user":{"name":"viewer","suggestions":[{"via":2,"user":{"name":"x"}}]}}`, 1},
			{"the viewer's suggestions", viewer.Token, `{ viewer { name suggestions { via user { name } } } }`,
				`{"viewer":{"name":"viewer","suggestions":[{"via":2,"user":{"name":"x"}}]}}`, 1},
			{"two users' followers", "", `query($id: ID!) { v: user(id: $id) { name followers { nodes { name } } } n: nodes(ids: ["` + a.ID + `", "VXNlcjo5OTk5OTk="]) { ... on User { name followers { nodes { name } } } } }`,
				`{"v":{"name":"viewer","followers":{"nodes":[{"name":"a"}]}},"n":[{"name":"a","followers":{"nodes":[{"name":"viewer"}]}},null]}`, 1},
		} {
			r := s.Do(c.token, c.query, vars)
			if len(r.Errors) > 0 || string(r.Data) != c.want {
				t.Errorf("%s = %s %+v, want %s", c.name, r.Data, r.Errors, c.want)
			}
			// Asked again: suggestions read their users' names the first
			// time only.
			if r := s.Do(c.token, c.query, vars); r.Extensions.Debug.SQLQueries != c.statements+own {
				t.Errorf("%s: %d statements, want %d", c.name, r.Extensions.Debug.SQLQueries, c.statements+own)
			}
		}

		// Only its owner may read a user's suggestions: the token's row,
		// read along, says who that is.
		r := s.Do(a.Token, `query($id: ID!) { user(id: $id) { name suggestions { via } } }`, vars)
		if r.Code() != resolvers.CodeForbidden {
			t.Errorf("a asking the viewer's suggestions: %s %+v, want FORBIDDEN", r.Data, r.Errors)
		}
		var out struct{ DeactivateAccount struct{ Deactivated bool } }
		s.Data(b.Token, `mutation { deactivateAccount { deactivated } }`, nil, &out)
		r = s.Do("", `query($id: ID!) { user(id: $id) { name followers { nodes { name } } } }`, map[string]any{"id": b.ID})
		if len(r.Errors) > 0 || string(r.Data) != `{"user":null}` {
			t.Errorf("a deactivated user's followers = %s %+v, want user null", r.Data, r.Errors)
		}
		r = s.Do(b.Token, `{ viewer { name suggestions { via } } }`, nil)
		if len(r.Errors) > 0 || string(r.Data) != `{"viewer":{"name":"b","suggestions":[]}}` {
			t.Errorf("a deactivated viewer's suggestions = %s %+v, want its account and none", r.Data, r.Errors)
		}
	})
}
