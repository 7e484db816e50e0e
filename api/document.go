package api

import (
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/lexer"
	"github.com/vektah/gqlparser/v2/parser"
)

// documentLimits bound what a document can make the server parse and
// validate. They are checked before gqlgen parses and validates it, because
// that work is where the cost lies: validation walks every fragment
// definition through every fragment it reaches, and compares pairwise the
// fields that share a response name (OverlappingFieldsCanBeMerged), so that
// 20,000 repeated __typename took 25 s; the complexity walk and execution
// expand a fragment at each of its spreads, so that 1 KB of fragments each
// spreading the one before twice took 5.7 s at 25 levels, doubling with
// each. The check lexes and parses the document once more, then walks it
// once, counting each fragment once, so that its own cost is about linear
// in the document's size; the count of comparisons stops at its limit.
type documentLimits struct {
	// MaxTokens bounds the tokens (names, punctuation, values, comments)
	// parsed, and so the memory of a parsed document, about 100 to 400
	// bytes a token.
	MaxTokens int
	// MaxSelections bounds the selections (fields, fragment spreads,
	// inline fragments) of the operations and fragments, each spread
	// counted with the selections of the fragment it brings in.
	MaxSelections int
	// MaxBreadth bounds the fields of one selection set, with those its
	// fragments bring in.
	MaxBreadth int
	// MaxOverlaps bounds the comparisons validation makes to check that
	// fields sharing a response name can merge: of each pair of them, and
	// of their selections in turn.
	MaxOverlaps int
}

// check parses query and measures it against the limits. It returns the
// number of tokens, or an error with a code: a limit's, or
// GRAPHQL_PARSE_FAILED for a document that does not parse.
func (l documentLimits) check(query string) (tokens int, _ *gqlerror.Error) {
	src := &ast.Source{Input: query}
	// Counted apart from the parser, whose error does not say which limit
	// it hit; lexing stops at the limit.
	lex := lexer.New(src)
	for {
		tok, err := lex.ReadToken()
		if err != nil || tok.Kind == lexer.EOF {
			break // the parser reports a lexing error
		}
		if tokens++; tokens > l.MaxTokens {
			return tokens, limitError(CodeTokenLimit, "the document has more than %d tokens, the most a document may have", l.MaxTokens)
		}
	}
	doc, err := parser.ParseQueryWithTokenLimit(src, l.MaxTokens)
	if err != nil {
		gqlErr, ok := err.(*gqlerror.Error)
		if !ok {
			gqlErr = gqlerror.Wrap(err)
		}
		errcode.Set(gqlErr, errcode.ParseFailed)
		return tokens, gqlErr
	}

	m := newMeasure(doc)
	selections := 0
	for _, op := range doc.Operations {
		selections = satAdd(selections, m.expanded(op.SelectionSet))
	}
	for _, f := range doc.Fragments {
		selections = satAdd(selections, m.expanded(f.SelectionSet))
	}
	if selections > l.MaxSelections {
		return tokens, limitError(CodeSelectionLimit, "the document holds %d selections, counting at each fragment spread the selections of its fragment; at most %d are allowed", selections, l.MaxSelections)
	}
	if m.breadth > l.MaxBreadth {
		return tokens, limitError(CodeBreadthLimit, "a selection set holds %d fields, counting those its fragments bring in; at most %d are allowed", m.breadth, l.MaxBreadth)
	}
	if m.cycle {
		return tokens, nil // validation refuses the cycle and says where
	}
	m.budget = l.MaxOverlaps
	for _, set := range m.sets {
		if m.fieldsOf(set) > 1 && !m.within(set) {
			return tokens, limitError(CodeOverlapLimit, "the document selects fields under one response name so often that checking they can merge would take more than %d comparisons: select each field once, or alias the copies apart", l.MaxOverlaps)
		}
	}
	return tokens, nil
}

// measure walks a document that has been parsed but not validated: its
// fragment spreads may name fragments that do not exist or spread
// themselves, which count as empty here and which validation refuses.
type measure struct {
	fragments map[string]*ast.FragmentDefinition
	// expandedOf memoizes each fragment's expanded size, fieldsOfSet and
	// collectedOf each selection set's fields; onStack marks the
	// fragments being measured, to find cycles.
	expandedOf  map[string]int
	onStack     map[string]bool
	fieldsOfSet map[setKey]int
	collectedOf map[setKey]map[string][]*ast.Field
	// sets is every selection set of the document, each once, in the
	// operations, the fields, the inline fragments and the fragments.
	sets    []ast.SelectionSet
	breadth int // the most fields of one selection set
	cycle   bool
	budget  int // comparisons still allowed
}

// setKey identifies a selection set: its first element and length, as
// gqlparser's validator does, since a slice cannot be a map key.
type setKey struct {
	first *ast.Selection
	n     int
}

func keyOf(set ast.SelectionSet) setKey {
	if len(set) == 0 {
		return setKey{}
	}
	return setKey{&set[0], len(set)}
}

func newMeasure(doc *ast.QueryDocument) *measure {
	m := &measure{
		fragments:   make(map[string]*ast.FragmentDefinition, len(doc.Fragments)),
		expandedOf:  map[string]int{},
		onStack:     map[string]bool{},
		fieldsOfSet: map[setKey]int{},
		collectedOf: map[setKey]map[string][]*ast.Field{},
	}
	for _, f := range doc.Fragments {
		if _, dup := m.fragments[f.Name]; !dup {
			m.fragments[f.Name] = f
		}
	}
	return m
}

// expanded counts the selections of set with each fragment spread counted
// with those of its fragment, measures the breadth of set and of every set
// below it, and records each set in m.sets. A fragment is walked once;
// later spreads of it use its count.
func (m *measure) expanded(set ast.SelectionSet) int {
	m.sets = append(m.sets, set)
	m.breadth = max(m.breadth, m.fieldsOf(set))
	n := 0
	for _, sel := range set {
		n = satAdd(n, 1)
		switch s := sel.(type) {
		case *ast.Field:
			if len(s.SelectionSet) > 0 {
				n = satAdd(n, m.expanded(s.SelectionSet))
			}
		case *ast.InlineFragment:
			n = satAdd(n, m.expanded(s.SelectionSet))
		case *ast.FragmentSpread:
			n = satAdd(n, m.fragment(s.Name))
		}
	}
	return n
}

// fragment is the expanded size of the fragment name, walked the first
// time it is asked for. Its sets are recorded when the fragment itself is
// measured (check measures every fragment), not at each spread.
func (m *measure) fragment(name string) int {
	if n, ok := m.expandedOf[name]; ok {
		return n
	}
	f := m.fragments[name]
	if f == nil {
		return 0
	}
	if m.onStack[name] {
		m.cycle = true
		return 0
	}
	m.onStack[name] = true
	sets := len(m.sets)
	n := m.expanded(f.SelectionSet)
	m.sets = m.sets[:sets]
	m.onStack[name] = false
	m.expandedOf[name] = n
	return n
}

// fieldsOf counts the fields of set with those of its inline fragments and
// of the fragments it spreads: the fields that validation collects for it.
func (m *measure) fieldsOf(set ast.SelectionSet) int {
	k := keyOf(set)
	if n, ok := m.fieldsOfSet[k]; ok {
		return n
	}
	m.fieldsOfSet[k] = 0 // while it is counted, for a fragment that spreads itself
	n := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			n = satAdd(n, 1)
		case *ast.InlineFragment:
			n = satAdd(n, m.fieldsOf(s.SelectionSet))
		case *ast.FragmentSpread:
			if f := m.fragments[s.Name]; f != nil {
				n = satAdd(n, m.fieldsOf(f.SelectionSet))
			}
		}
	}
	m.fieldsOfSet[k] = n
	return n
}

// collected is the fields of set by response name, with those of its
// inline fragments and spread fragments, as validation collects them. It
// is called once breadth is within its limit and the document has no
// cycle, so each result is small and the recursion ends.
func (m *measure) collected(set ast.SelectionSet) map[string][]*ast.Field {
	k := keyOf(set)
	if c, ok := m.collectedOf[k]; ok {
		return c
	}
	c := map[string][]*ast.Field{}
	var collect func(ast.SelectionSet)
	collect = func(set ast.SelectionSet) {
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				name := s.Alias
				if name == "" {
					name = s.Name
				}
				c[name] = append(c[name], s)
			case *ast.InlineFragment:
				collect(s.SelectionSet)
			case *ast.FragmentSpread:
				if f := m.fragments[s.Name]; f != nil {
					collect(f.SelectionSet)
				}
			}
		}
	}
	collect(set)
	m.collectedOf[k] = c
	return c
}

// within counts, against the budget, the comparisons validation makes of
// the fields of set that share a response name, and of their selection
// sets in turn. It reports false once the budget is spent, so that its own
// work is bounded by the budget.
func (m *measure) within(set ast.SelectionSet) bool {
	for _, fields := range m.collected(set) {
		for i, a := range fields {
			for _, b := range fields[i+1:] {
				if !m.pair(a, b) {
					return false
				}
			}
		}
	}
	return true
}

// pair counts the comparison of fields a and b and, if both have
// selections, the lookup of each response name of one in the other and
// the comparisons of the fields that share one.
func (m *measure) pair(a, b *ast.Field) bool {
	if a == b {
		// One fragment spread twice: validation does not compare a
		// fragment with itself.
		return true
	}
	if m.budget--; m.budget < 0 {
		return false
	}
	if len(a.SelectionSet) == 0 || len(b.SelectionSet) == 0 {
		return true
	}
	ca, cb := m.collected(a.SelectionSet), m.collected(b.SelectionSet)
	if len(cb) < len(ca) {
		ca, cb = cb, ca
	}
	for name, as := range ca {
		// Looking a response name up in the other set is work too, which
		// sets of distinct names would otherwise make free.
		if m.budget--; m.budget < 0 {
			return false
		}
		for _, x := range as {
			for _, y := range cb[name] {
				if !m.pair(x, y) {
					return false
				}
			}
		}
	}
	return true
}
