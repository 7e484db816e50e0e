// Package apitest runs the real HTTP handler on a loopback port over a
// database of its own (a SQLite file, or a PostgreSQL database: see Each),
// for tests that assert what a client sees, and checks what must hold of
// that database after any mix of writes.
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
	"follows/db/pgtest"
)

// Server is api's handler on a loopback port, over a database of its own:
// a SQLite file in a temporary folder, or a new PostgreSQL database.
type Server struct {
	URL      string    // where it listens, without a path
	Database Database  // the kind of its database
	DSN      string    // its database, as db.Open takes it
	DBPath   string    // its SQLite file; "" on other databases
	Store    *db.Store // its store, open until the test ends

	t    testing.TB
	logs *lockedBuffer
}

// Database is a kind of database the handler's tests run on.
type Database string

const (
	SQLite   Database = "sqlite"
	Postgres Database = "postgres" // on the server POSTGRES_DSN names
)

// Databases are the kinds Each runs a test on.
var Databases = []Database{SQLite, Postgres}

// Each runs fn as a subtest for each of Databases, named for it. Without
// POSTGRES_DSN the PostgreSQL one skips, saying so.
func Each(t *testing.T, fn func(t *testing.T, d Database)) {
	for _, d := range Databases {
		t.Run(string(d), func(t *testing.T) {
			if d == Postgres && !pgtest.Available() {
				t.Skip(pgtest.SkipMessage("the PostgreSQL run of the HTTP tests"))
			}
			fn(t, d)
		})
	}
}

// Secret is the secret the server signs tokens with.
const Secret = "apitest: a token secret, 32 bytes or more"

// Start serves a new, empty graph over a SQLite file until the test ends:
// SQLite.Start.
func Start(t testing.TB, opts ...func(*api.Config)) *Server {
	t.Helper()
	return SQLite.Start(t, opts...)
}

// Start serves a new, empty graph on a new database of this kind until the
// test ends. The handler has api.DefaultConfig with Debug on, so that
// responses carry their SQL statement counts, and no rate limits, which
// tests that sign up and write much from one address would meet; each of
// opts changes that in turn. It signs tokens with a fixed secret and logs
// as text into Logs.
func (d Database) Start(t testing.TB, opts ...func(*api.Config)) *Server {
	t.Helper()
	s, h := d.newServer(t, "", opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// StartDSN is Start with SQLite URI parameters (such as
// _pragma=max_page_count(50)) added to the file's DSN.
func StartDSN(t testing.TB, params string, opts ...func(*api.Config)) *Server {
	t.Helper()
	s, h := SQLite.newServer(t, params, opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// StartOn serves the graph already in the database dsn names (a SQLite
// file's path or a PostgreSQL URL), as Start serves a new one; several
// may serve one database, as the server's replicas do.
func StartOn(t testing.TB, dsn string, opts ...func(*api.Config)) *Server {
	t.Helper()
	d, path := SQLite, dsn
	if isPostgres(dsn) {
		d, path = Postgres, ""
	}
	s, h := d.serverOn(t, dsn, path, opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// newServer opens a new database of this kind (a SQLite file with URI
// parameters params, if any) and makes the handler of a Server, which is
// yet to listen.
func (d Database) newServer(t testing.TB, params string, opts []func(*api.Config)) (*Server, http.Handler) {
	t.Helper()
	dsn := d.NewDSN(t)
	var path string
	if d == SQLite {
		path = dsn
		if params != "" {
			dsn += "?" + params
		}
	}
	return d.serverOn(t, dsn, path, opts)
}

// serverOn opens the database dsn names, a SQLite file at path or another
// kind's, and makes the handler of a Server, which is yet to listen.
func (d Database) serverOn(t testing.TB, dsn, path string, opts []func(*api.Config)) (*Server, http.Handler) {
	t.Helper()
	m := api.NewMetrics("")
	store, err := db.Open(context.Background(), dsn, db.WithStatementHook(m.Statement))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	m.WatchSuggestionMemory(store.SuggestionMemory)
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	cfg := api.DefaultConfig()
	cfg.Debug = true
	cfg.SignupRate, cfg.MutationRate = api.Rate{}, api.Rate{}
	for _, opt := range opts {
		opt(&cfg)
	}
	tokens, err := auth.NewTokens([]byte(Secret), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h := api.NewHandler(store, tokens, cfg, log, m)
	return &Server{Database: d, DSN: dsn, DBPath: path, Store: store, t: t, logs: logs}, h
}

// NewDSN makes a new, empty database of this kind that lasts until the
// test ends, and returns what db.Open and the server's -db take: a SQLite
// file's path in a temporary folder, or a new PostgreSQL database's URL
// (see pgtest.DSN).
func (d Database) NewDSN(t testing.TB) string {
	t.Helper()
	switch d {
	case SQLite:
		return filepath.Join(t.TempDir(), "follows.db")
	case Postgres:
		return pgtest.DSN(t, "the PostgreSQL run of the HTTP tests")
	}
	t.Fatalf("no database %q", d)
	return ""
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

// PostTo posts a GraphQL request, with an optional bearer token, to the
// server at url (one the test runs itself, not a Server) and decodes its
// JSON answer into out.
func PostTo(t testing.TB, url, token, query string, vars map[string]any, out any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/graphql", bytes.NewReader(Body(query, vars)))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("not JSON: %s", raw)
	}
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
