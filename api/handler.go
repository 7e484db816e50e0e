// Package api is the follower graph's HTTP handler: GraphQL at /graphql
// behind its middleware, GraphiQL at /, /healthz, /readyz and Prometheus
// metrics at /metrics. Package main opens the store and wires it here.
package api

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"follows/api/trusted"
	"follows/auth"
	"follows/db"
	"follows/graph"
	"follows/graphiql"
	"follows/resolvers"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/otel/trace"
)

// Config is what the handler can be told; package main fills it from its
// flags.
type Config struct {
	// BatchWait is how long a loader gathers keys before one batched
	// statement runs.
	BatchWait time.Duration

	// Limits on what one request may ask (see docs/production.md, "Limits").
	MaxComplexity, MaxDepth, MaxAliases, MaxOperations int
	MaxBody                                            int64
	RequestTimeout                                     time.Duration
	// MaxExecuting is how many requests run their operations at once;
	// the others wait their turn (inTurn). 0 is 4 for each processor,
	// a negative number no limit.
	MaxExecuting int
	// Limits on a document, checked before it is parsed for gqlgen
	// (documentLimits), and on a response (responseLimits).
	MaxTokens, MaxSelections, MaxBreadth, MaxOverlaps int
	MaxErrors, MaxResponse                            int

	NoPlayground, NoIntrospection bool
	// CORSOrigins lists, comma-separated, the origins allowed to call
	// /graphql from a browser, or is *. CORSHeaders lists the request
	// headers their pages may send, DefaultCORSHeaders when empty, or is *.
	CORSOrigins, CORSHeaders string
	// Debug adds extensions.debug (SQL statement count and time) to every
	// response, and serves /debug/pprof.
	Debug bool

	// Rate limits per client address (see rateLimits); the zero Rate is
	// none. ClientIPHeader names the header a trusted proxy puts the
	// client's address in; empty, the client is the connection's peer.
	SignupRate, MutationRate Rate
	ClientIPHeader           string

	// Streams are the limits of subscriptions (see subscriptions.go).
	Streams StreamConfig
	// Caps are each client's and viewer's share of streams and
	// subscriptions (see clientcaps.go).
	Caps ClientCaps

	// Trusted, if set, are the documents served by their ids
	// (documentids.go); with TrustedOnly, no other document runs.
	Trusted     *trusted.Documents
	TrustedOnly bool

	// Tracer, if not nil, traces each request to /graphql (tracing.go);
	// TraceViewerID adds the viewer's id to its operation spans.
	Tracer        trace.TracerProvider
	TraceViewerID bool
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
		// An address may make 20 accounts at once, then one per 3
		// minutes; and 300 writes at once, then 5 a second.
		SignupRate:    Rate{N: 20, Per: time.Hour},
		MutationRate:  Rate{N: 300, Per: time.Minute},
		MaxTokens:     15000,
		MaxSelections: 5000,
		MaxBreadth:    100,
		MaxOverlaps:   10000,
		MaxErrors:     100,
		MaxResponse:   4 << 20,
		CORSHeaders:   DefaultCORSHeaders,
		Streams:       DefaultStreamConfig(),
		Caps:          DefaultClientCaps(),
	}
}

// NewHandler serves the HTTP endpoints over store. m is where the
// handler's metrics go and what /metrics serves; open the store with
// db.WithStatementHook(m.Statement) so that they count its statements.
func NewHandler(store *db.Store, tokens *auth.Tokens, cfg Config, log *slog.Logger, m *Metrics) http.Handler {
	res := &resolvers.Resolver{Store: store, Tokens: tokens, Cursors: tokens, BatchWait: cfg.BatchWait, OnBatch: m.Batch, Log: log}
	m.WatchReplicas(store)

	ids := cfg.documentIDs(m)
	guard := guardRequest(cfg.MaxBody, cfg.RequestTimeout, m, ids)
	client := clientAddress(cfg.ClientIPHeader)
	mux := http.NewServeMux()
	caps := newClientCaps(cfg.Caps)
	gql := newGraphQL(res, cfg, caps, log, m, ids)
	// A GraphQL request passes these in order, the first outermost, and
	// so do server-sent events, which are known to be a stream only once
	// their body is read (guardRequest); a websocket those after it.
	mux.Handle("/graphql", traceRequests(cfg.Tracer, streams(chain(gql,
		logRequests(log),                       // one log line when the stream ends
		cors(cfg.CORSOrigins, cfg.CORSHeaders), // browsers on the listed origins may call
		streamGuard(m),                         // a websocket: GET to upgrade; no deadline
		streamClient(cfg.ClientIPHeader),       // who the rate limits count
		streamCaps(caps, m),                    // the server's and the client's share of streams
		tokens.Middleware,                      // who the viewer is, unless connection_init says
		res.Middleware,                         // the stream's loaders, renewed for each event
	), chain(gql,
		logRequests(log),                       // one log line, with the request's SQL statistics
		cors(cfg.CORSOrigins, cfg.CORSHeaders), // browsers on the listed origins may call
		httpConventions,                        // GraphQL over HTTP's status codes
		guard,                                  // only bodies that can be GraphQL; a deadline
		client,                                 // who the rate limits count; their 429
		eventStreamCaps(caps, m),               // server-sent events count as streams
		tokens.Middleware,                      // who the viewer is
		res.Middleware,                         // the request's loaders
		inTurn(cfg.MaxExecuting, m),            // at most so many at once, the rest in turn
	))))
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

// What the query cache (parsed documents, weighed at bytesPerToken a
// token) and the persisted-query cache (query texts) may hold.
const (
	queryCacheBytes     = 32 << 20
	persistedCacheBytes = 8 << 20
)

// newGraphQL is gqlgen's server for the schema, with its transports,
// caches, limits and the extension that records each response.
func newGraphQL(res *resolvers.Resolver, cfg Config, caps *clientCaps, log *slog.Logger, m *Metrics, ids *documentIDs) *handler.Server {
	gql := handler.New(graph.NewExecutableSchema(graph.Config{Schema: graph.Schema(), Resolvers: res, Complexity: resolvers.Complexity()}))
	gql.AddTransport(socketTransport{websocketTransport(res, cfg.Streams, cfg.CORSOrigins, log)})
	gql.AddTransport(transport.Options{})
	gql.AddTransport(transport.GET{})
	// Before POST, which would take an SSE request for a plain one.
	gql.AddTransport(newSSETransport(cfg.Streams, log, m))
	gql.AddTransport(transport.POST{})
	// Both caches keep only what admission accepted, bounded in bytes.
	queries := newAcceptedCache[*ast.QueryDocument](1000, queryCacheBytes)
	persisted := newAcceptedCache[string](1000, persistedCacheBytes)
	gql.SetQueryCache(queries)
	gql.SetParserTokenLimit(cfg.MaxTokens)
	if !cfg.NoIntrospection {
		use(gql, extension.Introspection{})
	}
	if ids != nil {
		use(gql, trustedExtension{ids}) // before the persisted queries, which would take its ids
	}
	use(gql, extension.AutomaticPersistedQuery{Cache: persisted})
	use(gql, &complexityLimit{Max: cfg.MaxComplexity})
	use(gql, Limits{MaxDepth: cfg.MaxDepth, MaxAliases: cfg.MaxAliases, MaxOperations: cfg.MaxOperations})
	// First of the operations' interceptors: a websocket's operation is
	// checked and given its loaders and deadline before anything counts it.
	use(gql, socketRules{res: res, timeout: cfg.RequestTimeout})
	if res.Store.Replicas() > 0 {
		use(gql, replicaReads{}) // where each operation's reads go
	}
	use(gql, newRateLimits(cfg.SignupRate, cfg.MutationRate))
	use(gql, subscriptionLimit{Max: cfg.Streams.MaxSubscriptions, caps: caps})
	// After the other limits: it checks the document once the persisted
	// query is known, and accepts it once every other limit has passed.
	use(gql, admission{
		limits:  documentLimits{MaxTokens: cfg.MaxTokens, MaxSelections: cfg.MaxSelections, MaxBreadth: cfg.MaxBreadth, MaxOverlaps: cfg.MaxOverlaps},
		queries: queries, persisted: persisted,
	})
	gql.SetErrorPresenter(resolvers.ErrorPresenter(log))
	gql.SetRecoverFunc(resolvers.Recover(log))
	if cfg.Tracer != nil {
		use(gql, newOperationTracing(cfg.Tracer, cfg.TraceViewerID)) // outside responseStats: its span covers all the response's work
	}
	use(gql, responseStats{metrics: m, debug: cfg.Debug})
	use(gql, responseLimits{MaxErrors: cfg.MaxErrors, MaxBytes: cfg.MaxResponse}) // inside responseStats, which counts what it sends
	return gql
}

// use adds an extension to gql. None may intercept fields: the generated
// code marshals plain fields (a user's name, a follow's time) without
// the field context that such an interceptor would be given (see
// graph/internal/gqlgen), so it would silently miss them.
func use(gql *handler.Server, ext graphql.HandlerExtension) {
	if _, ok := ext.(graphql.FieldInterceptor); ok {
		panic(fmt.Sprintf("api: extension %s intercepts fields, which plain fields skip (see graph/internal/gqlgen)", ext.ExtensionName()))
	}
	gql.Use(ext)
}
