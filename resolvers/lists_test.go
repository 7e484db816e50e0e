package resolvers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"follows/db"
	"follows/graph"
	"follows/graph/model"

	"github.com/99designs/gqlgen/complexity"
	"github.com/vektah/gqlparser/v2"
)

// TestComplexity prices operations as the complexity limit sees them: a
// list field costs 1 plus its `first` or `last` (its default when both are
// absent, clamped to 0..100) times what each item asks for; every other
// field costs 1 plus its children.
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
		// viewer 1 + suggestions 1 + its work 1000 + 10*(user 1 + id 1 + via 1)
		{`{ viewer { suggestions { user { id } via } } }`, nil, 1032},
		{`{ viewer { suggestions(first: 3) { user { id } } } }`, nil, 1008},
		{`{ viewer { suggestions(first: 0) { via } } }`, nil, 1002},
		{`{ users { nodes { id } } }`, nil, 41},
		{`{ users(first: 0) { nodes { id } } }`, nil, 1},
		{`{ users(first: 1000) { nodes { id } } }`, nil, 201},
		{`{ users(first: -5) { nodes { id } } }`, nil, 1},
		{`query($n: Int) { users(first: $n) { nodes { id } } }`, map[string]any{"n": 7}, 15},
		{`query($n: Int) { users(first: $n) { nodes { id } } }`, nil, 41},
		{`{ user(id: "1") { followers(first: 100) { nodes { following(first: 100) { nodes { mutualFollows(first: 100) { totalCount } } } } } } }`, nil, 1020202},
		// last is priced as first is, at any depth.
		{`{ viewer { followers(last: 10) { nodes { followers(last: 5, before: "c") { nodes { id } } } } } }`, nil, 122},
		{`{ users(last: 7) { nodes { id } } }`, nil, 15},
		{`{ users(last: 1000) { nodes { id } } }`, nil, 201},
		{`{ users(before: "c") { nodes { id } } }`, nil, 41},
		{`query($n: Int) { users(last: $n) { nodes { id } } }`, map[string]any{"n": 7}, 15},
		{`{ user(id: "1") { followers(last: 100) { nodes { following(last: 100) { nodes { blocked(last: 100) { totalCount } } } } } } }`, nil, 1020202},
		// Both, which the resolver refuses, at the dearer.
		{`{ users(first: 3, last: 7) { nodes { id } } }`, nil, 15},
	} {
		doc, err := gqlparser.LoadQueryWithRules(es.Schema(), c.query, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		if got := complexity.Calculate(context.Background(), es, doc.Operations[0], c.vars); got != c.want {
			t.Errorf("%s: complexity %d, want %d", c.query, got, c.want)
		}
	}
}

// The table and the schema agree: every field with a `first` argument has
// a row, every row a field, with cursors exactly when the field takes
// `after`. A field that also takes `last` has no schema default on `first`
// (it would turn a request for the last page into one for both ends): its
// description says the row's default; a field without `last` has the
// row's default as the schema's. The description of suggestions states the
// store's bound and the price.
func TestListsMatchSchema(t *testing.T) {
	schema := graph.NewExecutableSchema(graph.Config{}).Schema()
	desc := schema.Types["User"].Fields.ForName("suggestions").Description
	for _, want := range []string{
		fmt.Sprintf("add up to at most %s", thousands(db.SuggestionBudget)),
		"`sampled`",
		fmt.Sprintf("costs %s", thousands(suggestionsWork)),
		"FORBIDDEN",
	} {
		if !strings.Contains(strings.Join(strings.Fields(desc), " "), want) {
			t.Errorf("the description of User.suggestions does not say %q:\n%s", want, desc)
		}
	}
	for _, f := range listFields {
		def := schema.Types[f.object].Fields.ForName(f.field)
		if def == nil {
			t.Errorf("%s.%s: a row without a field in the schema", f.object, f.field)
			continue
		}
		var schemaFirst string
		if first := def.Arguments.ForName("first"); first != nil && first.DefaultValue != nil {
			schemaFirst = first.DefaultValue.Raw
		}
		if def.Arguments.ForName("last") != nil {
			if schemaFirst != "" {
				t.Errorf("%s.%s: first defaults to %s in the schema, so that last asks for both ends", f.object, f.field, schemaFirst)
			}
			desc := strings.Join(strings.Fields(def.Description), " ")
			if says := fmt.Sprintf("%d when neither is given", f.first); !strings.Contains(desc, says) {
				t.Errorf("%s.%s: the description does not say %q, the row's default:\n%s", f.object, f.field, says, def.Description)
			}
			if def.Arguments.ForName("before") == nil {
				t.Errorf("%s.%s: takes last but not before", f.object, f.field)
			}
		} else if schemaFirst != strconv.Itoa(f.first) {
			t.Errorf("%s.%s: the schema's first defaults to %q, the row's to %d", f.object, f.field, schemaFirst, f.first)
		}
		if hasAfter := def.Arguments.ForName("after") != nil; hasAfter != (f.cursor != "") {
			t.Errorf("%s.%s: takes after %v, but its cursors name %q", f.object, f.field, hasAfter, f.cursor)
		}
		// Every connection pages both ways.
		if hasLast := def.Arguments.ForName("last") != nil; f.cursor != "" && !hasLast {
			t.Errorf("%s.%s: a connection that does not take last", f.object, f.field)
		}
	}
	for _, typ := range schema.Types {
		if typ.BuiltIn {
			continue
		}
		for _, fd := range typ.Fields {
			if fd.Arguments.ForName("first") != nil && rowOf(typ.Name, fd.Name) == nil {
				t.Errorf("%s.%s takes first but has no row", typ.Name, fd.Name)
			}
		}
	}
}

// thousands writes n with commas, as the schema's descriptions do.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Each list's cursors name it alone, so that one list refuses another's.
func TestListCursorsAreDistinct(t *testing.T) {
	seen := map[model.List]string{}
	for _, f := range listFields {
		if f.cursor == "" {
			continue
		}
		if other, ok := seen[f.cursor]; ok {
			t.Errorf("%s.%s and %s name their cursors %q", f.object, f.field, other, f.cursor)
		}
		seen[f.cursor] = f.object + "." + f.field
	}
}
