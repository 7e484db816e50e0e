package resolvers

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Codes of the errors that refuse a request for its shape, before any
// resolver (and so any SQL) runs.
const (
	CodeComplexityLimit = "COMPLEXITY_LIMIT_EXCEEDED" // gqlgen's own code
	CodeDepthLimit      = "DEPTH_LIMIT_EXCEEDED"
	CodeAliasLimit      = "ALIAS_LIMIT_EXCEEDED"
	CodeOperationLimit  = "OPERATION_LIMIT_EXCEEDED"
)

// Limits refuses operations nested deeper than MaxDepth, using more than
// MaxAliases aliases, or sent in a document of more than MaxOperations
// operations. The complexity limit bounds the work; these bound what a
// request can make the server parse and walk.
type Limits struct {
	MaxDepth, MaxAliases, MaxOperations int
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = Limits{}

func (Limits) ExtensionName() string                   { return "OperationLimits" }
func (Limits) Validate(graphql.ExecutableSchema) error { return nil }

func (l Limits) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if n := len(oc.Doc.Operations); n > l.MaxOperations {
		return limitError(CodeOperationLimit, "the document holds %d operations; at most %d are allowed", n, l.MaxOperations)
	}
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil {
		return nil
	}
	w := walker{doc: oc.Doc, visiting: map[string]bool{}}
	w.walk(op.SelectionSet, 1)
	if w.depth > l.MaxDepth {
		return limitError(CodeDepthLimit, "the operation is nested %d deep; at most %d is allowed", w.depth, l.MaxDepth)
	}
	if w.aliases > l.MaxAliases {
		return limitError(CodeAliasLimit, "the operation uses %d aliases; at most %d are allowed", w.aliases, l.MaxAliases)
	}
	return nil
}

func limitError(code, format string, args ...any) *gqlerror.Error {
	e := gqlerror.Errorf(format, args...)
	e.Extensions = map[string]any{"code": code}
	return e
}

// walker measures an operation's depth and counts its aliases, following
// fragment spreads (validation has already refused cycles; visiting guards
// against them anyway).
type walker struct {
	doc            *ast.QueryDocument
	visiting       map[string]bool
	depth, aliases int
}

func (w *walker) walk(set ast.SelectionSet, depth int) {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name == "__schema" || s.Name == "__type" {
				// Introspection is as deep as the schema's type
				// references, and the schema bounds it.
				continue
			}
			w.depth = max(w.depth, depth)
			if s.Alias != "" && s.Alias != s.Name {
				w.aliases++
			}
			w.walk(s.SelectionSet, depth+1)
		case *ast.InlineFragment:
			w.walk(s.SelectionSet, depth)
		case *ast.FragmentSpread:
			if w.visiting[s.Name] {
				continue
			}
			if def := w.doc.Fragments.ForName(s.Name); def != nil {
				w.visiting[s.Name] = true
				w.walk(def.SelectionSet, depth)
				w.visiting[s.Name] = false
			}
		}
	}
}
