package main

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"follows/api/apitest"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a collector's OTLP/HTTP trace endpoint as small as a
// test needs: it decodes each protobuf export and keeps its spans, with
// the service name of their resource.
type otlpReceiver struct {
	URL string

	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func startReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var export coltrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &export)
		}
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
			t.Errorf("receiver: %s %s (%s): %v", req.Method, req.URL.Path, req.Header.Get("Content-Type"), err)
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					r.services = append(r.services, a.Value.GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *otlpReceiver) received() ([]*tracepb.Span, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...), append([]string(nil), r.services...)
}

// attr is a span's attribute, as text; "" when it has none by that key.
func attr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return valueText(a.Value)
		}
	}
	return ""
}

func valueText(v *commonpb.AnyValue) string {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.Values {
			parts = append(parts, valueText(e))
		}
		return strings.Join(parts, ",")
	}
	return v.String()
}

// The server as an operator runs it with a collector: the standard OTEL_
// variables point it at an OTLP receiver, and each request becomes one
// trace there, continuing an incoming traceparent, its spans in parent
// order from the HTTP request to the operation, the loader batches and
// the SQL statements. The spans are flushed when the server stops (the
// batch processor's delay, from OTEL_BSP_SCHEDULE_DELAY, is longer than
// the test), and nothing a user typed, nor their token, is in them.
func TestTracesToCollector(t *testing.T) {
	bin := binary(t)
	recv := startReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "follows-under-test")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
	dbPath := filepath.Join(t.TempDir(), "follows.db")
	cmd, url, lines := startProcess(t, "-addr", "127.0.0.1:0", "-db", dbPath, "-demo", "-secret", testSecret)
	waitLogLine(t, lines, "loaded the sample graph", 5*time.Second)

	tok, err := exec.Command(bin, "token", "-user", "4", "-db", dbPath, "-secret", testSecret).Output()
	if err != nil {
		t.Fatalf("token subcommand: %v", err)
	}
	token := strings.TrimSpace(string(tok))
	const (
		incomingTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		incomingSpan  = "00f067aa0ba902b7"
		// A document that reads a list of users, then each one's
		// followers through a loader, with an argument that must not be
		// recorded.
		query = `query Followers($name: String!) { user(name: $name) { name followers(first: 5) { nodes { name followers(first: 2) { nodes { name } } } } } }`
	)
	send := func(traceparent string) {
		req, _ := http.NewRequest("POST", url+"/graphql", bytes.NewReader(apitest.Body(query, map[string]any{"name": "dave"})))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
			req.Header.Set("tracestate", "vendor=opaque")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"bob"`) || strings.Contains(string(body), `"errors"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	send("00-" + incomingTrace + "-" + incomingSpan + "-01")
	send("")
	exitLog(t, cmd, lines, syscall.SIGTERM, 30*time.Second)

	spans, services := recv.received()
	if len(spans) == 0 {
		t.Fatal("the receiver got no spans")
	}
	for _, svc := range services {
		if svc != "follows-under-test" {
			t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", svc)
		}
	}
	traces := map[string][]*tracepb.Span{}
	for _, s := range spans {
		id := hex.EncodeToString(s.TraceId)
		traces[id] = append(traces[id], s)
		for _, a := range s.Attributes {
			if v := valueText(a.Value); strings.Contains(v, "dave") || strings.Contains(v, token) || strings.Contains(v, "followers(") {
				t.Errorf("span %q records %s=%q: an argument, the token or the document", s.Name, a.Key, v)
			}
		}
		if attr(s, "enduser.id") != "" {
			t.Errorf("span %q names the viewer without -trace-viewer-id", s.Name)
		}
	}
	if len(traces) != 2 {
		t.Fatalf("%d traces, want one per request: %v", len(traces), names(spans))
	}
	if _, ok := traces[incomingTrace]; !ok {
		t.Fatalf("no trace continues the incoming traceparent's %s", incomingTrace)
	}
	for id, trace := range traces {
		checkTrace(t, id, trace, id == incomingTrace, incomingSpan)
	}
}

// checkTrace checks one request's trace: an HTTP server span (the child
// of the incoming one, if any), one operation span beneath it, loader
// batch spans beneath that, and SQL statement spans beneath the batches.
func checkTrace(t *testing.T, id string, spans []*tracepb.Span, continued bool, incomingSpan string) {
	t.Helper()
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[hex.EncodeToString(s.SpanId)] = s
	}
	parent := func(s *tracepb.Span) *tracepb.Span { return byID[hex.EncodeToString(s.ParentSpanId)] }
	var server, op *tracepb.Span
	var batches, statements []*tracepb.Span
	for _, s := range spans {
		switch {
		case s.Kind == tracepb.Span_SPAN_KIND_SERVER:
			server = s
		case attr(s, "graphql.operation.type") != "":
			if op != nil {
				t.Errorf("trace %s: two operation spans", id)
			}
			op = s
		case attr(s, "follows.loader") != "":
			batches = append(batches, s)
		case attr(s, "follows.db.statement") != "":
			statements = append(statements, s)
		}
	}
	if server == nil || op == nil || len(batches) == 0 || len(statements) == 0 {
		t.Fatalf("trace %s: want an HTTP, an operation, batch and SQL spans: %v", id, names(spans))
	}
	wantParent := ""
	if continued {
		wantParent = incomingSpan
	}
	if got := hex.EncodeToString(server.ParentSpanId); got != wantParent {
		t.Errorf("trace %s: the HTTP span's parent is %q, want %q", id, got, wantParent)
	}
	if parent(op) != server {
		t.Errorf("trace %s: the operation span's parent is not the HTTP span", id)
	}
	if op.Name != "query Followers" || attr(op, "graphql.operation.name") != "Followers" || attr(op, "graphql.operation.complexity") == "" {
		t.Errorf("trace %s: operation span %q %v", id, op.Name, op.Attributes)
	}
	for _, b := range batches {
		if parent(b) != op || attr(b, "follows.loader.keys") == "" {
			t.Errorf("trace %s: batch span %q %v: want the operation's child with its keys counted", id, b.Name, b.Attributes)
		}
	}
	underBatch, byName := 0, false
	for _, s := range statements {
		// Named for the store method that ran it: user(name:) is
		// UserByName.
		byName = byName || s.Name == "Store.UserByName"
		if p := parent(s); p != nil && attr(p, "follows.loader") != "" {
			underBatch++
		}
		if s.Name == "" || s.Name == "statement" || attr(s, "db.operation.name") != "SELECT" || attr(s, "follows.db.pool.waits") == "" {
			t.Errorf("trace %s: SQL span %q %v", id, s.Name, s.Attributes)
		}
	}
	if !byName {
		t.Errorf("trace %s: no statement named Store.UserByName: %v", id, names(spans))
	}
	if underBatch == 0 {
		t.Errorf("trace %s: no SQL span beneath a batch: %v", id, names(spans))
	}
}

func names(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
