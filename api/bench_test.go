package api_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
	"follows/auth"
	"follows/db"
)

// benchHandler serves the graph in FOLLOWS_BENCH_DB (an imported graph,
// see BENCHMARKS.md) in-process; benchmarks skip without it.
func benchHandler(b *testing.B) http.Handler {
	path := os.Getenv("FOLLOWS_BENCH_DB")
	if path == "" {
		b.Skip("set FOLLOWS_BENCH_DB to an imported graph (see BENCHMARKS.md)")
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
	return api.NewHandler(store, tokens, api.DefaultConfig(), log, m)
}

func benchQuery(b *testing.B, query string) {
	h := benchHandler(b)
	body := []byte(`{"query":` + jsonString(query) + `}`)
	for b.Loop() {
		req := httptest.NewRequest("POST", "/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 || bytes.Contains(w.Body.Bytes(), []byte(`"errors"`)) {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
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
