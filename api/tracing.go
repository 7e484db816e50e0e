package api

import (
	"context"
	"net/http"
	"strconv"

	"follows/auth"

	"github.com/99designs/gqlgen/graphql"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names the spans this package starts.
const instrumentation = "follows/api"

// traceRequests gives each request to /graphql an HTTP server span,
// continuing the trace of its traceparent and tracestate headers (W3C
// Trace Context) when it has them; without a tracer provider it is next
// itself, so that a server without a collector pays nothing.
// A websocket's or event stream's span lasts as long as the stream, and
// each of its responses gets an operation span beneath it.
func traceRequests(tp trace.TracerProvider, next http.Handler) http.Handler {
	if tp == nil {
		return next
	}
	return otelhttp.NewHandler(next, "graphql",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " /graphql" }),
	)
}

// operationTracing gives each GraphQL operation its span: the
// operation's type, name and complexity, the codes of its responses'
// errors, and with viewerID the id of the user its token claims. It never
// records the document, its variables or arguments, or the token: they
// hold what users typed and what authenticates them, and traces go to
// collectors that many people read (docs/tracing.md). The loaders'
// batches and the store's statements, run beneath it, start their spans
// from its context.
//
// The span is the operation's, not each response's: a subscription
// resolves every event in the context its operation began with, so its
// span lasts until its stream ends and holds the statements of all its
// events.
type operationTracing struct {
	tracer   trace.Tracer
	viewerID bool
	es       graphql.ExecutableSchema
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
} = &operationTracing{}

func newOperationTracing(tp trace.TracerProvider, viewerID bool) *operationTracing {
	return &operationTracing{tracer: tp.Tracer(instrumentation), viewerID: viewerID}
}

func (*operationTracing) ExtensionName() string { return "OperationTracing" }

func (t *operationTracing) Validate(es graphql.ExecutableSchema) error {
	t.es = es
	return nil
}

func (t *operationTracing) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	oc := graphql.GetOperationContext(ctx)
	kind, name := "query", ""
	if oc.Operation != nil {
		kind, name = string(oc.Operation.Operation), capLabel(oc.Operation.Name)
	}
	spanName := kind
	if name != "" {
		spanName += " " + name
	}
	ctx, span := t.tracer.Start(ctx, spanName)
	if !span.IsRecording() {
		span.End()
		return next(ctx)
	}
	t.describe(ctx, span, oc, kind, name)
	responses := next(ctx)
	subscription := kind == "subscription"
	return func(ctx context.Context) *graphql.Response {
		resp := responses(ctx)
		if resp != nil && len(resp.Errors) > 0 {
			// The codes only: a message can quote what the user sent.
			var errCodes []string
			for _, e := range resp.Errors {
				if code, ok := e.Extensions["code"].(string); ok {
					errCodes = append(errCodes, code)
				}
			}
			span.SetAttributes(attribute.StringSlice("graphql.error.codes", errCodes))
			span.SetStatus(codes.Error, "the response has errors")
		}
		// A query or mutation has one response; a subscription's stream
		// ends with none.
		if !subscription || resp == nil {
			span.End()
		}
		return resp
	}
}

// describe sets the attributes of an operation's span.
func (t *operationTracing) describe(ctx context.Context, span trace.Span, oc *graphql.OperationContext, kind, name string) {
	span.SetAttributes(attribute.String("graphql.operation.type", kind))
	if name != "" {
		span.SetAttributes(attribute.String("graphql.operation.name", name))
	}
	if oc.Operation != nil {
		// Priced again, as complexityLimit did, only for a span that is
		// kept: the limit keeps nothing, so that untraced requests
		// allocate nothing for it.
		p := pricer{ctx: ctx, es: t.es, schema: t.es.Schema(), vars: oc.Variables, fragments: map[string]int{}}
		span.SetAttributes(attribute.Int("graphql.operation.complexity", p.selections(oc.Operation.SelectionSet)))
	}
	if t.viewerID {
		if c, err := auth.Viewer(ctx); err == nil {
			span.SetAttributes(attribute.String("enduser.id", strconv.FormatInt(c.UserID, 10)))
		}
	}
}
