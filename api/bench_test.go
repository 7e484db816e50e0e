package api_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
	"follows/auth"
	"follows/db"
)

// benchHandler serves the graph in FOLLOWS_BENCH_DB (an imported graph,
// see docs/benchmarks.md) in-process; benchmarks skip without it. opts
// change api.DefaultConfig.
func benchHandler(b *testing.B, opts ...func(*api.Config)) http.Handler {
	path := os.Getenv("FOLLOWS_BENCH_DB")
	if path == "" {
		b.Skip("set FOLLOWS_BENCH_DB to an imported graph (see docs/benchmarks.md)")
	}
	m := api.NewMetrics("")
	store, err := db.Open(context.Background(), path, db.WithStatementHook(m.Statement))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tokens, err := auth.NewTokens([]byte(apitest.Secret), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	cfg := api.DefaultConfig()
	for _, opt := range opts {
		opt(&cfg)
	}
	return api.NewHandler(store, tokens, cfg, log, m)
}

func benchQuery(b *testing.B, query string, opts ...func(*api.Config)) {
	h := benchHandler(b, opts...)
	body := []byte(`{"query":` + jsonString(query) + `}`)
	cpu0 := cpuTime()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 || bytes.Contains(w.Body.Bytes(), []byte(`"errors"`)) {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	// The wall time per request includes the loaders' batch wait; the
	// process's CPU time per request is what a loaded server pays.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time, user and system, the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func jsonString(s string) string {
	var buf bytes.Buffer
	buf.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			buf.WriteByte('\\')
			buf.WriteRune(r)
		case '\n':
			buf.WriteString(`\n`)
		default:
			buf.WriteRune(r)
		}
	}
	buf.WriteByte('"')
	return buf.String()
}

func BenchmarkQ1Profile(b *testing.B) {
	benchQuery(b, `{ user(id: "5") { name followerCount followingCount followers(first: 20) { nodes { name } } } }`)
}

func BenchmarkQ2Fanout(b *testing.B) {
	benchQuery(b, `{ users(first: 50) { nodes { name followerCount followers(first: 10) { nodes { name } } } } }`)
}

// The peer-bench harness's own documents (../shared/peer-bench, issue 15),
// ids and all: Q1 for a typical user and Q2 as the side-by-side run sends
// them.
func BenchmarkPeerQ1Profile(b *testing.B) {
	benchQuery(b, `{ user(id: "5") { id name followerCount followingCount followers(first: 20) { edges { followedAt node { id name } } } } }`)
}

func BenchmarkPeerQ2Fanout(b *testing.B) {
	benchQuery(b, `{ users(first: 50) { nodes { id name followerCount followers(first: 10) { nodes { name } } } } }`)
}
