// Package api is the follower graph's HTTP handler: GraphQL at /graphql
// behind its middleware, GraphiQL at /, /healthz, /readyz and Prometheus
// metrics at /metrics. Package main opens the store and wires it here.
package api

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"follows/auth"
	"follows/db"
	"follows/graph"
	"follows/graphiql"
	"follows/resolvers"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vektah/gqlparser/v2/ast"
)

// Config is what the handler can be told; package main fills it from its
// flags.
type Config struct {
	// BatchWait is how long a loader gathers keys before one batched
	// statement runs.
	BatchWait time.Duration

	// Limits on what one request may ask (see README, "Limits").
	MaxComplexity, MaxDepth, MaxAliases, MaxOperations int
	MaxBody                                            int64
	RequestTimeout                                     time.Duration

	NoPlayground, NoIntrospection bool
	// CORSOrigins lists, comma-separated, the origins allowed to call
	// /graphql from a browser, or is *.
	CORSOrigins string
	// Debug adds extensions.debug (SQL statement count and time) to every
	// response, and serves /debug/pprof.
	Debug bool
}

// defaultBatchWait is how long a loader waits for more keys. Lists gather
// their keys without waiting (resolvers.prefetch), so this only needs to
// cover sibling resolvers started together.
const defaultBatchWait = 250 * time.Microsecond

// DefaultConfig is the handler's configuration before flags.
func DefaultConfig() Config {
	return Config{
		BatchWait:      defaultBatchWait,
		MaxComplexity:  5000,
		MaxDepth:       12,
		MaxAliases:     50,
		MaxOperations:  20,
		MaxBody:        1 << 20,
		RequestTimeout: 15 * time.Second,
	}
}

// NewHandler serves the HTTP endpoints over store. m is where the
// handler's metrics go and what /metrics serves; open the store with
// db.WithStatementHook(m.Statement) so that they count its statements.
func NewHandler(store *db.Store, tokens *auth.Tokens, cfg Config, log *slog.Logger, m *Metrics) http.Handler {
	res := &resolvers.Resolver{Store: store, Tokens: tokens, BatchWait: cfg.BatchWait, OnBatch: m.Batch, Log: log}

	guard := guardRequest(cfg.MaxBody, cfg.RequestTimeout, m)
	mux := http.NewServeMux()
	// A GraphQL request passes these in order, the first outermost.
	mux.Handle("/graphql", chain(newGraphQL(res, cfg, log, m),
		logRequests(log),      // one log line, with the request's SQL statistics
		cors(cfg.CORSOrigins), // browsers on the listed origins may call
		httpConventions,       // GraphQL over HTTP's status codes
		guard,                 // only bodies that can be GraphQL; a deadline
		tokens.Middleware,     // who the viewer is
		res.Middleware,        // the request's loaders
	))
	if !cfg.NoPlayground {
		mux.Handle("GET /{$}", graphiql.Page())
		mux.Handle("GET /graphiql/", graphiql.Assets())
	}
	if cfg.Debug {
		// Profiles for finding where a request's time goes; -debug is for
		// development, never for a public server.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", readiness(store, log))
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	return mux
}

// newGraphQL is gqlgen's server for the schema, with its transports,
// caches, limits and the extension that records each response.
func newGraphQL(res *resolvers.Resolver, cfg Config, log *slog.Logger, m *Metrics) *handler.Server {
	gql := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: res, Complexity: resolvers.Complexity()}))
	gql.AddTransport(transport.Options{})
	gql.AddTransport(transport.GET{})
	gql.AddTransport(transport.POST{})
	gql.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	if !cfg.NoIntrospection {
		gql.Use(extension.Introspection{})
	}
	gql.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](1000)})
	gql.Use(extension.FixedComplexityLimit(cfg.MaxComplexity))
	gql.Use(Limits{MaxDepth: cfg.MaxDepth, MaxAliases: cfg.MaxAliases, MaxOperations: cfg.MaxOperations})
	gql.SetErrorPresenter(resolvers.ErrorPresenter(log))
	gql.SetRecoverFunc(resolvers.Recover(log))
	gql.Use(responseStats{metrics: m, debug: cfg.Debug})
	return gql
}
