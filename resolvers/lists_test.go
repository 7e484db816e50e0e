package resolvers

import (
	"context"
	"testing"

	"follows/graph"

	"github.com/99designs/gqlgen/complexity"
	"github.com/vektah/gqlparser/v2"
)

// TestComplexity prices operations as the complexity limit sees them: a
// list field costs 1 plus its `first` (its default when absent, clamped to
// 0..100) times what each item asks for; every other field costs 1 plus
// its children.
func TestComplexity(t *testing.T) {
	es := graph.NewExecutableSchema(graph.Config{Complexity: Complexity()})
	for _, c := range []struct {
		query string
		vars  map[string]any
		want  int
	}{
		// viewer 1 + followers 1 + 10*(nodes 1 + followers 1 + 5*(nodes 1 + id 1))
		{`{ viewer { followers(first: 10) { nodes { followers(first: 5) { nodes { id } } } } } }`, nil, 122},
		{`{ viewer { followers { totalCount } } }`, nil, 22},
		{`{ viewer { following { edges { cursor node { name } } } } }`, nil, 82},
		{`{ viewer { mutualFollows { nodes { id } } } }`, nil, 42},
		{`{ viewer { blocked { nodes { id } } } }`, nil, 42},
		{`{ viewer { suggestions { user { id } via } } }`, nil, 32},
		{`{ viewer { suggestions(first: 3) { user { id } } } }`, nil, 8},
		{`{ users { nodes { id } } }`, nil, 41},
		{`{ users(first: 0) { nodes { id } } }`, nil, 1},
		{`{ users(first: 1000) { nodes { id } } }`, nil, 201},
		{`{ users(first: -5) { nodes { id } } }`, nil, 1},
		{`query($n: Int) { users(first: $n) { nodes { id } } }`, map[string]any{"n": 7}, 15},
		{`query($n: Int) { users(first: $n) { nodes { id } } }`, nil, 41},
		{`{ user(id: "1") { followers(first: 100) { nodes { following(first: 100) { nodes { mutualFollows(first: 100) { totalCount } } } } } } }`, nil, 1020202},
	} {
		doc, err := gqlparser.LoadQuery(es.Schema(), c.query)
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		if got := complexity.Calculate(context.Background(), es, doc.Operations[0], c.vars); got != c.want {
			t.Errorf("%s: complexity %d, want %d", c.query, got, c.want)
		}
	}
}
