// Package apitest runs the real HTTP handler on a loopback port over a
// SQLite file of its own, for tests that assert what a client sees, and
// checks what must hold of that file after any mix of writes.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"follows/api"
	"follows/auth"
	"follows/db"
)

// Server is api's handler on a loopback port, over a SQLite file of its
// own in a temporary folder.
type Server struct {
	URL    string    // where it listens, without a path
	DBPath string    // its SQLite file
	Store  *db.Store // its store, open until the test ends

	t    testing.TB
	logs *lockedBuffer
}

// Secret is the secret the server signs tokens with.
const Secret = "apitest: a token secret, 32 bytes or more"

// Start serves a new, empty graph until the test ends. The handler has
// api.DefaultConfig with Debug on, so that responses carry their SQL
// statement counts, changed by each of opts in turn; it signs tokens with
// Secret and logs as text into Logs.
func Start(t testing.TB, opts ...func(*api.Config)) *Server {
	t.Helper()
	return StartDSN(t, "", opts...)
}

// StartDSN is Start with SQLite URI parameters (such as
// _pragma=max_page_count(50)) added to the file's DSN.
func StartDSN(t testing.TB, params string, opts ...func(*api.Config)) *Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "follows.db")
	dsn := path
	if params != "" {
		dsn += "?" + params
	}
	m := api.NewMetrics()
	store, err := db.Open(context.Background(), dsn, db.WithStatementHook(m.Statement))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	cfg := api.DefaultConfig()
	cfg.Debug = true
	for _, opt := range opts {
		opt(&cfg)
	}
	tokens, err := auth.NewTokens([]byte(Secret), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewHandler(store, tokens, cfg, log, m))
	t.Cleanup(srv.Close)
	return &Server{URL: srv.URL, DBPath: path, Store: store, t: t, logs: logs}
}

// Logs is what the server has logged so far.
func (s *Server) Logs() string { return s.logs.String() }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Error is one entry of a response's errors.
type Error struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// Response is a GraphQL response as the tests read it.
type Response struct {
	Status     int             `json:"-"`
	Data       json.RawMessage `json:"data"`
	Errors     []Error         `json:"errors"`
	Extensions struct {
		Debug struct {
			SQLQueries int `json:"sqlQueries"`
		} `json:"debug"`
	} `json:"extensions"`
}

// Code is the first error's extensions.code, or "" without errors.
func (r Response) Code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// Body is the JSON body of a GraphQL request.
func Body(query string, vars map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return b
}

// Do posts a GraphQL request with an optional bearer token. It fails the
// test on a server error status, which no request may cause.
func (s *Server) Do(token, query string, vars map[string]any) Response {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.URL+"/graphql", bytes.NewReader(Body(query, vars)))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		s.t.Fatalf("status %d for %s: %s", resp.StatusCode, query, raw)
	}
	var r Response
	if err := json.Unmarshal(raw, &r); err != nil {
		s.t.Fatalf("response is not JSON: %s", raw)
	}
	r.Status = resp.StatusCode
	return r
}

// Data runs a request that must succeed and decodes its data into out.
func (s *Server) Data(token, query string, vars map[string]any, out any) Response {
	s.t.Helper()
	r := s.Do(token, query, vars)
	if len(r.Errors) > 0 {
		s.t.Fatalf("%s: errors %+v", query, r.Errors)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		s.t.Fatalf("decode %s: %v", r.Data, err)
	}
	return r
}

// RawResponse is what came back for a request sent as raw HTTP.
type RawResponse struct {
	Status int
	Header http.Header
	Body   []byte
	Parsed Response // the body read as a GraphQL response, as far as it is one
}

// Raw sends any request to the server, as a hostile or careless client
// might; an empty contentType sends none.
func (s *Server) Raw(method, path, contentType string, body []byte, header map[string]string) RawResponse {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := RawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
	json.Unmarshal(b, &r.Parsed)
	return r
}
