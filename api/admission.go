package api

import (
	"context"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// admission lets a request's document in, in two steps around gqlgen's
// parsing and validation. Before them, documentLimits price the document,
// unless it is in the query cache, where only documents that passed every
// limit are. After every other limit has passed (admission is the last
// extension), the parsed document and the persisted query are cached, and
// the request is marked accepted, which is what the metrics label.
type admission struct {
	limits    documentLimits
	queries   *acceptedCache[*ast.QueryDocument]
	persisted *acceptedCache[string]
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
	graphql.OperationContextMutator
} = admission{}

// Names of what admission records in the operation's statistics.
const (
	checkedStat  = "DocumentTokens" // the tokens of a document it checked
	acceptedStat = "Accepted"
)

// bytesPerToken is what a parsed, validated document holds for each token
// of its text, at most: above what was measured both for GraphiQL's
// introspection query and for a run of __typename, the costliest form
// per token (docs/decisions/hostile-traffic-cost.md); the query cache
// weighs its documents with it.
const bytesPerToken = 512

func (admission) ExtensionName() string                   { return "Admission" }
func (admission) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters runs after the persisted-query extension has
// put the query in params, before gqlgen parses it.
func (a admission) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	if _, ok := a.queries.Get(ctx, params.Query); ok {
		return nil
	}
	tokens, err := a.limits.check(params.Query)
	if err != nil {
		return err
	}
	// The query cache keeps the query and the document parsed from it,
	// whose names and positions point into it; a GET's query is a piece
	// of its URL, which would be kept whole (up to a megabyte for a query
	// of a few bytes, which the cache weighs by its own length). A copy
	// is only what the cache weighs.
	params.Query = strings.Clone(params.Query)
	graphql.GetOperationContext(ctx).Stats.SetExtension(checkedStat, tokens)
	return nil
}

func (a admission) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if tokens, ok := oc.Stats.GetExtension(checkedStat).(int); ok {
		a.queries.accept(oc.RawQuery, oc.Doc, len(oc.RawQuery)+tokens*bytesPerToken)
	}
	if apq := extension.GetApqStats(ctx); apq != nil && apq.SentQuery {
		// A query found in the query cache was not copied when it came
		// in (MutateOperationParameters): it may be a piece of its URL.
		a.persisted.accept(apq.Hash, strings.Clone(oc.RawQuery), len(oc.RawQuery))
	}
	oc.Stats.SetExtension(acceptedStat, true)
	return nil
}

// accepted reports whether the request in ctx passed every limit, and so
// ran.
func accepted(ctx context.Context) bool {
	return graphql.HasOperationContext(ctx) && graphql.GetOperationContext(ctx).Stats.GetExtension(acceptedStat) != nil
}
