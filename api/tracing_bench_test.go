package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"follows/api"
	"follows/tracing"
)

// traced sets the handler up as the server is with OTEL_EXPORTER_OTLP_ENDPOINT
// set: every request sampled, its spans batched and exported over
// OTLP/HTTP to a local receiver that reads and drops them, so that the
// figure includes the export's marshalling and sending
// (docs/benchmarks.md, "Tracing").
func traced(b *testing.B) func(*api.Config) {
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	b.Cleanup(recv.Close)
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	tp, err := tracing.Start(b.Context(), os.Getenv)
	if err != nil || tp == nil {
		b.Fatalf("tracing.Start: %v, %v", tp, err)
	}
	b.Cleanup(func() { tp.Shutdown(b.Context()) })
	return func(c *api.Config) { c.Tracer = tp }
}

func BenchmarkPeerQ1ProfileTraced(b *testing.B) {
	benchQuery(b, `{ user(id: "5") { id name followerCount followingCount followers(first: 20) { edges { followedAt node { id name } } } } }`, traced(b))
}

func BenchmarkPeerQ2FanoutTraced(b *testing.B) {
	benchQuery(b, `{ users(first: 50) { nodes { id name followerCount followers(first: 10) { nodes { name } } } } }`, traced(b))
}
