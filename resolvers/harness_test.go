package resolvers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"follows/auth"
	"follows/db"
	"follows/graph"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
)

// testAPI is the resolvers behind gqlgen's handler on a loopback port,
// over a SQLite file of their own: what the server serves at /graphql,
// without the HTTP hardening around it.
type testAPI struct {
	t     *testing.T
	url   string
	store *db.Store
	res   *Resolver
	logs  *syncBuffer

	mu      sync.Mutex
	batches map[string][]int // the sizes of each loader's batches
}

func newTestAPI(t *testing.T) *testAPI {
	t.Helper()
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "follows.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	a := &testAPI{t: t, store: store, logs: logs, batches: map[string][]int{}}
	tokens, err := auth.NewTokens([]byte(strings.Repeat("test secret ", 3)), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	a.res = &Resolver{Store: store, Tokens: tokens, BatchWait: time.Millisecond, Log: log,
		OnBatch: func(loader string, keys int) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.batches[loader] = append(a.batches[loader], keys)
		}}
	gql := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: a.res, Complexity: Complexity()}))
	gql.AddTransport(transport.POST{})
	gql.SetErrorPresenter(ErrorPresenter(log))
	gql.SetRecoverFunc(Recover(log))
	srv := httptest.NewServer(a.res.Tokens.Middleware(a.res.Middleware(gql)))
	t.Cleanup(srv.Close)
	a.url = srv.URL
	return a
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

type response struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

// do posts a request with an optional bearer token; vars is raw JSON, so
// that a test can send what a Go map would not spell.
func (a *testAPI) do(token, query, vars string) response {
	a.t.Helper()
	if vars == "" {
		vars = "{}"
	}
	q, _ := json.Marshal(query)
	body := `{"query":` + string(q) + `,"variables":` + vars + `}`
	req, _ := http.NewRequest("POST", a.url, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		a.t.Fatalf("response is not JSON: %s", raw)
	}
	return r
}

// batchesOf returns the sizes of a loader's batches so far and forgets
// them.
func (a *testAPI) batchesOf(loader string) []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.batches[loader]
	a.batches = map[string][]int{}
	return b
}

// user creates a user in the store and returns its id and a token for it.
func (a *testAPI) user(name string) (int64, string) {
	a.t.Helper()
	u, err := a.store.CreateUser(context.Background(), name)
	if err != nil {
		a.t.Fatal(err)
	}
	return u.ID, a.res.Tokens.Mint(u.ID, u.SecurityStamp)
}
