package api

import (
	"context"
	"time"

	"follows/db"

	"github.com/99designs/gqlgen/graphql"
)

// responseStats is where what a GraphQL response did is recorded, once:
// its operation's name (refused, for a request refused before it ran) and
// latency and its errors' codes go to the metrics, the name to the request log, and with Debug the request's SQL
// statistics (counted by db since logRequests began them) to
// extensions.debug.
type responseStats struct {
	metrics *Metrics
	debug   bool
}

var _ interface {
	graphql.HandlerExtension
	graphql.ResponseInterceptor
} = responseStats{}

func (responseStats) ExtensionName() string                   { return "ResponseStats" }
func (responseStats) Validate(graphql.ExecutableSchema) error { return nil }

func (x responseStats) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	start := time.Now()
	resp := next(ctx)
	if resp == nil {
		return resp
	}
	op := anonymousLabel
	if graphql.HasOperationContext(ctx) {
		if oc := graphql.GetOperationContext(ctx); oc.Operation != nil && oc.Operation.Name != "" {
			op = oc.Operation.Name
		}
	}
	// Clients choose operation names, and the metrics keep a bounded set
	// of them: only requests that passed every limit may take one, so
	// that documents refused for their shape cannot fill it.
	label := refusedLabel
	if accepted(ctx) {
		label = op
	}
	if doc := trustedDocument(ctx); doc != nil && accepted(ctx) {
		x.metrics.trustedOperation(doc.Name, time.Since(start))
	} else {
		x.metrics.operation(label, time.Since(start))
	}
	for _, e := range resp.Errors {
		code, _ := e.Extensions["code"].(string)
		x.metrics.error(code)
	}
	if info := requestInfoFrom(ctx); info != nil {
		// A name can be as long as the body; the log line gets as much of
		// it as a label does.
		info.setOp(capLabel(op))
	}
	if st := db.StatsFrom(ctx); x.debug && st != nil {
		if resp.Extensions == nil {
			resp.Extensions = map[string]any{}
		}
		resp.Extensions["debug"] = map[string]any{
			"sqlQueries": st.Queries(),
			"sqlMillis":  float64(st.Duration().Microseconds()) / 1000,
		}
	}
	return resp
}
