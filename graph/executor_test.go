package graph

import (
	"bytes"
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

// An object is written as gqlgen's FieldSet writes it: its fields in
// order, each response name once, with the first field's value.
func TestFieldSetMarshal(t *testing.T) {
	fields := []graphql.CollectedField{
		{Field: &ast.Field{Alias: "name"}},
		{Field: &ast.Field{Alias: "n2"}},
		{Field: &ast.Field{Alias: "name"}},
		{Field: &ast.Field{Alias: "__typename"}},
	}
	for _, c := range []struct {
		fields []graphql.CollectedField
		want   string
	}{
		{nil, `{}`},
		{fields[:1], `{"name":"a"}`},
		{fields, `{"name":"a","n2":"b","__typename":"d"}`},
	} {
		fs := newFieldSet(c.fields)
		for i := range fs.Values {
			fs.Values[i] = graphql.MarshalString(string(rune('a' + i)))
		}
		var b bytes.Buffer
		fs.MarshalGQL(&b)
		if b.String() != c.want {
			t.Errorf("got %s, want %s", b.String(), c.want)
		}
		var want bytes.Buffer
		gq := graphql.NewFieldSet(c.fields)
		copy(gq.Values, fs.Values)
		gq.MarshalGQL(&want)
		if b.String() != want.String() {
			t.Errorf("got %s, gqlgen's FieldSet writes %s", b.String(), want.String())
		}
	}
}
