package db

import (
	"context"
	"database/sql"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names the spans the store starts.
const instrumentation = "follows/db"

// statementSpan is the span of one statement run in a traced request, and
// what the pool had counted of its waits for a connection when it began.
type statementSpan struct {
	span   trace.Span
	pool   *sql.DB
	waits  int64
	waited time.Duration
}

// traceStatement starts the span of a statement, when ctx carries a span
// that is recording (a traced request, sampled); otherwise it returns ctx
// and nil, having allocated nothing, so that a server without traces pays
// one context lookup a statement. The span is named for the store method
// that runs the statement (statementName) and says the dialect and the
// statement's verb; never its text or its arguments, which hold what
// users typed.
func (s *Store) traceStatement(ctx context.Context, pool *sql.DB, text string) (context.Context, *statementSpan) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	name := statementName()
	verb, _, _ := strings.Cut(strings.TrimSpace(text), " ")
	ctx, span := parent.TracerProvider().Tracer(instrumentation).Start(ctx, name,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("db.system.name", dbSystems[s.d.name()]),
			attribute.String("db.operation.name", strings.ToUpper(verb)),
			attribute.String("follows.db.statement", name),
		))
	st := pool.Stats()
	return ctx, &statementSpan{span: span, pool: pool, waits: st.WaitCount, waited: st.WaitDuration}
}

// end ends the span of a statement that ended with err; sp may be nil.
//
// database/sql says how long the pool made statements wait for a
// connection only in total (DBStats), not which statement waited, so the
// span says what the pool counted while the statement ran: the waits that
// began (none: this statement did not wait) and the time they and any
// wait that ended meanwhile took, which bounds this statement's own wait
// from above (docs/tracing.md).
func (sp *statementSpan) end(err error) {
	if sp == nil {
		return
	}
	st := sp.pool.Stats()
	sp.span.SetAttributes(
		attribute.Int64("follows.db.pool.waits", st.WaitCount-sp.waits),
		attribute.Float64("follows.db.pool.wait_ms_at_most", float64((st.WaitDuration-sp.waited).Microseconds())/1000),
	)
	if err != nil {
		// Not the driver's message, which can quote the values.
		sp.span.SetStatus(codes.Error, "the statement failed")
	}
	sp.span.End()
}

// dbSystems are the dialects' names as OpenTelemetry's db.system.name
// gives them.
var dbSystems = map[string]string{"sqlite": "sqlite", "postgres": "postgresql", "sqlserver": "microsoft.sql_server"}

// statementNames caches statementName by the call stack it was read from.
var statementNames sync.Map // [statementFrames]uintptr -> string

// statementFrames is how many callers of the runner statementName reads:
// enough to pass the runner's helpers and a transaction's closure and
// reach the store method.
const statementFrames = 8

// statementName names the statement being run for its span: the exported
// store method that runs it ("Store.UsersByID"), followed by the helper
// that ran it when that is another function ("Store.Follow.writeEvent"),
// read from the call stack once per call site and cached. Every statement
// thus has a stable short name without one being given at each of the
// many call sites.
func statementName() string {
	var pcs [statementFrames]uintptr
	// Skip runtime.Callers, statementName, traceStatement.
	n := runtime.Callers(3, pcs[:])
	if name, ok := statementNames.Load(pcs); ok {
		return name.(string)
	}
	name := nameFromStack(pcs[:n])
	statementNames.Store(pcs, name)
	return name
}

// dbPackage is this package's import path and a dot, as function names
// in the call stack begin.
var dbPackage = reflect.TypeFor[runner]().PkgPath() + "."

// plumbing are the functions that run statements for others; a
// statement's name is that of the function that called them.
var plumbing = map[string]bool{
	"runner.query": true, "runner.exec": true, "runner.queryRow": true,
	"lookup": true, "Store.inTx": true, "Store.runTx": true,
}

// nameFromStack names a statement from the functions on its call stack,
// innermost first: see statementName.
func nameFromStack(pcs []uintptr) string {
	frames := runtime.CallersFrames(pcs)
	var helper string
	for {
		f, more := frames.Next()
		fn, ok := strings.CutPrefix(f.Function, dbPackage)
		if !ok {
			break // the store's caller
		}
		fn = shortFunc(fn)
		if plumbing[fn] {
			if !more {
				break
			}
			continue
		}
		if m, ok := strings.CutPrefix(fn, "Store."); ok && m != "" && m[0] >= 'A' && m[0] <= 'Z' {
			if helper != "" && helper != fn {
				return fn + "." + strings.TrimPrefix(strings.TrimPrefix(helper, "Store."), "runner.")
			}
			return fn
		}
		if helper == "" {
			helper = fn
		}
		if !more {
			break
		}
	}
	if helper == "" {
		return "statement"
	}
	return helper
}

// shortFunc is a function's name without its receiver's pointer, its type
// parameters or its closures' suffixes: "(*Store).Follow.func1" is
// "Store.Follow", "lookup[...]" is "lookup".
func shortFunc(fn string) string {
	fn = strings.NewReplacer("(*", "", ")", "", "[...]", "").Replace(fn)
	for {
		i := strings.LastIndexByte(fn, '.')
		if i < 0 || !isClosureSuffix(fn[i+1:]) {
			return fn
		}
		fn = fn[:i]
	}
}

// isClosureSuffix reports whether part is what the compiler names a
// closure or a deferred or go statement's wrapper: func1, gowrap2, 3.
func isClosureSuffix(part string) bool {
	for _, prefix := range []string{"func", "gowrap", "deferwrap"} {
		part = strings.TrimPrefix(part, prefix)
	}
	if part == "" {
		return false
	}
	for _, r := range part {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
