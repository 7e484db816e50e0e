package api

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
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

	// Checked on the text before gqlgen parses and validates it
	// (documentLimits).
	CodeTokenLimit     = "TOKEN_LIMIT_EXCEEDED"
	CodeSelectionLimit = "SELECTION_LIMIT_EXCEEDED"
	CodeBreadthLimit   = "BREADTH_LIMIT_EXCEEDED"
	CodeOverlapLimit   = "OVERLAP_LIMIT_EXCEEDED"
)

// The limits refuse a request, as a document that does not parse or
// validate is refused, rather than fail in its execution: gqlgen answers
// each with GraphQL over HTTP's status for that, 400 to a client that
// accepts application/graphql-response+json (and 422, which
// httpConventions makes 200, to one that accepts only application/json).
func init() {
	for _, code := range []string{
		CodeComplexityLimit, CodeDepthLimit, CodeAliasLimit, CodeOperationLimit,
		CodeTokenLimit, CodeSelectionLimit, CodeBreadthLimit, CodeOverlapLimit,
	} {
		errcode.RegisterErrorType(code, errcode.KindProtocol)
	}
}

// Limits refuses operations nested deeper than MaxDepth, using more than
// MaxAliases aliases, or sent in a document of more than MaxOperations
// operations. The complexity limit bounds the work, and documentLimits
// what a document costs to parse and validate; these bound the shape of
// what one operation asks.
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
	w := walker{doc: oc.Doc, fragments: map[fragmentWalk]shape{}}
	got := w.walk(oc.Operation.SelectionSet, true)
	if got.depth > l.MaxDepth {
		return limitError(CodeDepthLimit, "the operation is nested %d deep; at most %d is allowed", got.depth, l.MaxDepth)
	}
	if got.aliases > l.MaxAliases {
		return limitError(CodeAliasLimit, "the operation uses %d aliases; at most %d are allowed", got.aliases, l.MaxAliases)
	}
	return nil
}

func limitError(code, format string, args ...any) *gqlerror.Error {
	e := gqlerror.Errorf(format, args...)
	e.Extensions = map[string]any{"code": code}
	return e
}

// walker measures an operation's depth and counts its aliases. Each
// fragment is walked once (for each way of counting depth), however often
// it is spread.
type walker struct {
	doc       *ast.QueryDocument
	fragments map[fragmentWalk]shape
}

type fragmentWalk struct {
	name       string
	countDepth bool
}

// shape is what walker measures of a selection set: how deep its fields
// nest, and how many aliases it uses.
type shape struct{ depth, aliases int }

// walk measures set. Introspection's nesting (__schema, __type and below)
// is as deep as the schema's type references and the schema bounds it, so
// it does not count toward depth; its aliases count.
func (w *walker) walk(set ast.SelectionSet, countDepth bool) shape {
	var got shape
	for _, sel := range set {
		var sub shape
		switch s := sel.(type) {
		case *ast.Field:
			introspection := s.Name == "__schema" || s.Name == "__type"
			sub = w.walk(s.SelectionSet, countDepth && !introspection)
			if countDepth && !introspection {
				sub.depth++
			}
			if s.Alias != "" && s.Alias != s.Name {
				sub.aliases = satAdd(sub.aliases, 1)
			}
		case *ast.InlineFragment:
			sub = w.walk(s.SelectionSet, countDepth)
		case *ast.FragmentSpread:
			k := fragmentWalk{s.Name, countDepth}
			var ok bool
			if sub, ok = w.fragments[k]; !ok {
				w.fragments[k] = shape{} // validation refused cycles; this ends one anyway
				if def := w.doc.Fragments.ForName(s.Name); def != nil {
					sub = w.walk(def.SelectionSet, countDepth)
				}
				w.fragments[k] = sub
			}
		}
		got.depth = max(got.depth, sub.depth)
		got.aliases = satAdd(got.aliases, sub.aliases)
	}
	return got
}

// satAdd adds counts that a client chooses, which can double with each
// level of fragments, without overflowing.
func satAdd(a, b int) int {
	const ceiling = 1 << 50
	return min(a+b, ceiling)
}
