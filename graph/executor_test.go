package graph

import (
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// A list is marshaled without a goroutine per element exactly when
// nothing selected under its elements, through fragments too, is resolved
// concurrently: there nothing can wait on a loader, whose batch the other
// elements would otherwise join.
func TestMayWait(t *testing.T) {
	for _, c := range []struct {
		query string
		path  []string // to the list whose elements' selection is asked about
		want  bool
	}{
		{`{ users { nodes { id name followerCount } } }`, []string{"users", "nodes"}, false},
		{`{ users { nodes { name followers { nodes { name } } } } }`, []string{"users", "nodes"}, true},
		{`{ users { nodes { name followers { nodes { name } } } } }`, []string{"users", "nodes", "followers", "nodes"}, false},
		{`{ users { edges { cursor node { id } } } }`, []string{"users", "edges"}, false},
		{`{ users { nodes { viewerFollows } } }`, []string{"users", "nodes"}, true},
		{`{ users { nodes { ...F } } } fragment F on User { name blocksViewer }`, []string{"users", "nodes"}, true},
		{`{ users { nodes { ...F } } } fragment F on User { name }`, []string{"users", "nodes"}, false},
		{`{ users { nodes { ... on User { following { totalCount } } } } }`, []string{"users", "nodes"}, true},
		{`{ user(id: "1") { followers { edges { followedAt muted } } } }`, []string{"user", "followers", "edges"}, true},
		{`{ user(id: "1") { followers { edges { followedAt node { id } } } } }`, []string{"user", "followers", "edges"}, false},
		{`{ nodes(ids: ["1", "2"]) { id __typename } }`, []string{"nodes"}, false},
		{`{ nodes(ids: ["1", "2"]) { ... on User { mutualFollows { nodes { id } } } } }`, []string{"nodes"}, true},
	} {
		doc, err := gqlparser.LoadQueryWithRules(Schema(), c.query, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		sel := doc.Operations[0].SelectionSet
		for _, name := range c.path {
			sel = fieldNamed(sel, name).SelectionSet
		}
		if got := mayWait(sel); got != c.want {
			t.Errorf("%s: mayWait under %v = %v, want %v", c.query, c.path, got, c.want)
		}
	}
}

func fieldNamed(sel ast.SelectionSet, name string) *ast.Field {
	for _, s := range sel {
		if f, ok := s.(*ast.Field); ok && f.Name == name {
			return f
		}
	}
	return nil
}

// An object allocates a group for deferred fields only when it has one;
// gqlgen's group then holds them as it would without deferredGroup.
func TestDeferredGroup(t *testing.T) {
	ctx := t.Context()
	plain := []graphql.CollectedField{{Field: &ast.Field{Name: "name"}}}
	if g := deferredGroup(ctx, plain); g.FieldSet != nil || len(g.Defers) != 0 || g.Context != ctx {
		t.Errorf("no deferred field: %+v, want an empty group in ctx", g)
	}
	deferred := append(plain, graphql.CollectedField{Field: &ast.Field{Name: "followers"}, Deferrables: []*graphql.Deferrable{{Label: "later"}}})
	if g := deferredGroup(ctx, deferred); g.FieldSet == nil || g.Defers == nil {
		t.Errorf("a deferred field: %+v, want gqlgen's group", g)
	}
}
