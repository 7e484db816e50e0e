package resolvers

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names the spans this package starts.
const instrumentation = "follows/resolvers"

// startBatch starts the span of one loader batch, when ctx (the context
// of the batch's first load) carries a recording span; otherwise it
// returns ctx and nil, so that untraced requests allocate nothing. The
// span says the loader's name and how many keys the batch has, never the
// keys. The store's statements for the batch run beneath it.
func startBatch(ctx context.Context, loader string, keys int) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	return parent.TracerProvider().Tracer(instrumentation).Start(ctx, "batch "+loader,
		trace.WithAttributes(attribute.String("follows.loader", loader), attribute.Int("follows.loader.keys", keys)))
}

// endBatch ends the span startBatch returned, if any, for a batch that
// ended with err.
func endBatch(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, "the batch failed")
	}
	span.End()
}
