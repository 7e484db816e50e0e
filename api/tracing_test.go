package api_test

import (
	"net/http"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// tracedServer serves a new graph with its spans exported, as each ends,
// to the returned exporter.
func tracedServer(t *testing.T, viewerID bool) (*apitest.Server, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	s := apitest.Start(t, func(c *api.Config) { c.Tracer, c.TraceViewerID = tp, viewerID })
	return s, exp
}

// operationSpans are the exported spans of GraphQL operations.
func operationSpans(exp *tracetest.InMemoryExporter) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if spanAttr(s, "graphql.operation.type") != "" {
			out = append(out, s)
		}
	}
	return out
}

func spanAttr(s tracetest.SpanStub, key attribute.Key) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.String()
		}
	}
	return ""
}

// The viewer's id is on an operation's span only when the operator allows
// it (-trace-viewer-id): traces often go where many people read them.
func TestTraceViewerID(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		s, exp := tracedServer(t, allowed)
		ann := s.CreateUser("ann")
		exp.Reset()
		s.Data(ann.Token, `query Me { viewer { name } }`, nil, &struct{}{})
		ops := operationSpans(exp)
		if len(ops) != 1 || ops[0].Name != "query Me" {
			t.Fatalf("allowed %v: operation spans %v, want one named query Me", allowed, ops)
		}
		want := ""
		if allowed {
			want = ann.ID
		}
		if got := spanAttr(ops[0], "enduser.id"); got != want {
			t.Errorf("allowed %v: enduser.id %q, want %q", allowed, got, want)
		}
	}
}

// A subscription over a websocket continues the trace of the upgrade
// request's traceparent: its operation span, ended with its stream, is in
// that trace, with the SQL that made its events' payloads beneath.
func TestTraceSubscriptionEvents(t *testing.T) {
	s, exp := tracedServer(t, false)
	ann, bob, carol := s.CreateUser("ann"), s.CreateUser("bob"), s.CreateUser("carol")
	s.Follow(carol, ann) // an event for the cursor, so that the subscription does not race the follow below
	cursor := s.EventCursor(bob)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	ws, err := apitest.DialSocket(t.Context(), t, apitest.WebsocketURL(s.URL), http.Header{"Traceparent": {"00-" + traceID + "-00f067aa0ba902b7-01"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Init(map[string]any{"Authorization": "Bearer " + bob.Token}); err != nil {
		t.Fatal(err)
	}
	ws.Subscribe("1", cursor)
	s.Follow(ann, bob)
	if ev := ws.Next(); ev.Follower.Name != "ann" {
		t.Fatalf("event %+v", ev)
	}
	// The subscription's span ends with its stream.
	if err := ws.Send(apitest.Message{ID: "1", Type: "complete"}); err != nil {
		t.Fatal(err)
	}
	var event *tracetest.SpanStub
	for deadline := time.Now().Add(10 * time.Second); event == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, op := range operationSpans(exp) {
			if op.SpanContext.TraceID().String() == traceID {
				if spanAttr(op, "graphql.operation.type") != "subscription" {
					t.Errorf("span %q in the socket's trace, want the subscription's", op.Name)
				}
				event = &op
			}
		}
	}
	if event == nil {
		t.Fatal("no operation span continues the socket's traceparent once the subscription completed")
	}
	parents := map[string]string{}
	for _, sp := range exp.GetSpans() {
		parents[sp.SpanContext.SpanID().String()] = sp.Parent.SpanID().String()
	}
	beneath := func(id string) bool {
		for ; id != ""; id = parents[id] {
			if id == event.SpanContext.SpanID().String() {
				return true
			}
		}
		return false
	}
	sql := 0
	for _, sp := range exp.GetSpans() {
		if spanAttr(sp, "follows.db.statement") != "" && beneath(sp.Parent.SpanID().String()) {
			sql++
		}
	}
	if sql == 0 {
		for _, sp := range exp.GetSpans() {
			t.Logf("%s %s parent %s trace %s", sp.Name, sp.SpanContext.SpanID(), sp.Parent.SpanID(), sp.SpanContext.TraceID())
		}
		t.Errorf("no SQL span beneath the event's operation span")
	}
}
