package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"time"

	"follows/auth"
	"follows/db"
	"follows/graph"
	"follows/graphiql"
	"follows/resolvers"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vektah/gqlparser/v2/ast"
)

// newHandler wires the HTTP endpoints: GraphQL at /graphql, GraphiQL at /,
// /healthz, /readyz and /metrics. It points the store's statement hook at
// the handler's metrics, so give each store one handler.
func newHandler(store *db.Store, tokens *auth.Tokens, c config, log *slog.Logger) http.Handler {
	res := &resolvers.Resolver{Store: store, Tokens: tokens, BatchWait: c.batchWait}
	gql := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: res, Complexity: resolvers.Complexity()}))
	gql.AddTransport(transport.Options{})
	gql.AddTransport(transport.GET{})
	gql.AddTransport(transport.POST{})
	gql.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	if !c.noIntrospection {
		gql.Use(extension.Introspection{})
	}
	gql.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](1000)})
	gql.Use(extension.FixedComplexityLimit(c.maxComplexity))
	gql.Use(resolvers.Limits{MaxDepth: c.maxDepth, MaxAliases: c.maxAliases, MaxOperations: c.maxOperations})
	gql.SetErrorPresenter(resolvers.ErrorPresenter(log))
	gql.SetRecoverFunc(resolvers.Recover(log))
	m := newMetrics()
	db.WithStatementHook(m.statement)(store) // a bridge: the api package passes the hook to db.Open
	res.OnBatch = m.batch
	gql.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		start := time.Now()
		resp := next(ctx)
		if resp == nil {
			return resp
		}
		op := "anonymous"
		if graphql.HasOperationContext(ctx) {
			if oc := graphql.GetOperationContext(ctx); oc.Operation != nil && oc.Operation.Name != "" {
				op = oc.Operation.Name
			}
		}
		m.operation(op, time.Since(start))
		for _, e := range resp.Errors {
			code, _ := e.Extensions["code"].(string)
			m.error(code)
		}
		if info := requestInfoFrom(ctx); info != nil {
			info.operation = op
		}
		if st := sqlStats(ctx); c.debug && st != nil {
			if resp.Extensions == nil {
				resp.Extensions = map[string]any{}
			}
			resp.Extensions["debug"] = map[string]any{
				"sqlQueries": st.Queries(),
				"sqlMillis":  float64(st.Duration().Microseconds()) / 1000,
			}
		}
		return resp
	})

	mux := http.NewServeMux()
	api := tokens.Middleware(res.Middleware(gql))
	api = guardRequest(c.maxBody, c.requestTimeout, m, api)
	mux.Handle("/graphql", cors(c.corsOrigins, httpConventions(api)))
	if !c.noPlayground {
		mux.Handle("GET /{$}", graphiql.Page())
		mux.Handle("GET /graphiql/", graphiql.Assets())
	}
	if c.debug {
		// Profiles for finding where a request's time goes; -debug is for
		// development, never for a public server.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := store.Ping(ctx); err != nil {
			log.Warn("not ready: the database does not answer", "err", err)
			http.Error(w, "the database does not answer", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	return logRequests(log, mux)
}

// guardRequest turns away what cannot be a GraphQL request before gqlgen
// sees it, with a GraphQL-shaped error that carries a code: bodies over
// maxBody (413), POST bodies that are not JSON (415, 400). It also gives
// every request a deadline, which cancels its SQL when it passes.
func guardRequest(maxBody int64, timeout time.Duration, m *metrics, next http.Handler) http.Handler {
	requestError := func(w http.ResponseWriter, status int, format string, args ...any) {
		m.error(CodeBadRequest)
		requestError(w, status, format, args...)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxBody {
			requestError(w, http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", maxBody)
			return
		}
		if r.Method == http.MethodPost {
			mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if mt != "application/json" && mt != "application/graphql-response+json" {
				requestError(w, http.StatusUnsupportedMediaType, "send the request as Content-Type: application/json")
				return
			}
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge):
				requestError(w, http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", maxBody)
				return
			case err != nil:
				requestError(w, http.StatusBadRequest, "the request body could not be read")
				return
			case !json.Valid(body):
				requestError(w, http.StatusBadRequest, "the request body is not valid JSON")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// CodeBadRequest marks requests refused before they were read as GraphQL.
const CodeBadRequest = "BAD_REQUEST"

func requestError(w http.ResponseWriter, status int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []any{map[string]any{
		"message":    fmt.Sprintf(format, args...),
		"extensions": map[string]any{"code": CodeBadRequest},
	}}})
}

// cors lets browsers on the listed origins call the API. With no origins it
// adds nothing, so browsers keep other sites' pages from using a visitor's
// credentials here.
func cors(origins string, next http.Handler) http.Handler {
	var allowed []string
	for _, o := range strings.Split(origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			allowed = append(allowed, o)
		}
	}
	if len(allowed) == 0 {
		return next
	}
	all := slices.Contains(allowed, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && (all || slices.Contains(allowed, origin)) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Max-Age", "600")
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// httpConventions adjusts gqlgen's answers to GraphQL over HTTP: a
// request that could not run answers 200 when the client accepts only
// application/json (whose clients read errors from the body), and has no
// "data" entry when it accepts application/graphql-response+json; a
// mutation sent with GET is 405 Method Not Allowed, naming POST.
func httpConventions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &conventionWriter{ResponseWriter: w, get: r.Method == http.MethodGet}
		next.ServeHTTP(cw, r)
		if cw.held == nil {
			return
		}
		var body map[string]json.RawMessage
		if json.Unmarshal(cw.held.Bytes(), &body) == nil {
			delete(body, "data")
			json.NewEncoder(w).Encode(body)
		} else {
			w.Write(cw.held.Bytes())
		}
	})
}

type conventionWriter struct {
	http.ResponseWriter
	get  bool
	held *bytes.Buffer // the body of a request that could not run, to rewrite
}

func (w *conventionWriter) WriteHeader(code int) {
	switch ct := w.Header().Get("Content-Type"); {
	case code == http.StatusUnprocessableEntity && ct == "application/json":
		code = http.StatusOK
	case code >= 400 && ct == "application/graphql-response+json":
		w.held = &bytes.Buffer{}
		w.Header().Del("Content-Length")
	case code == http.StatusNotAcceptable && w.get:
		// gqlgen's answer to a GET that is not a query.
		w.Header().Set("Allow", "POST")
		code = http.StatusMethodNotAllowed
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *conventionWriter) Write(b []byte) (int, error) {
	if w.held != nil {
		return w.held.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

type statsKey struct{}

func sqlStats(ctx context.Context) *db.Stats {
	st, _ := ctx.Value(statsKey{}).(*db.Stats)
	return st
}

// requestInfo carries what the GraphQL layer learns about a request out to
// the request log.
type requestInfo struct{ operation string }

type requestInfoKey struct{}

func requestInfoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// logRequests counts each request's SQL statements and logs one line per
// GraphQL request: operation, status, duration, SQL statements.
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, st := db.WithStats(r.Context())
		ctx = context.WithValue(ctx, statsKey{}, st)
		info := &requestInfo{}
		ctx = context.WithValue(ctx, requestInfoKey{}, info)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(ctx))
		if r.URL.Path == "/graphql" {
			log.Info("request", "operation", info.operation, "method", r.Method, "status", sw.status,
				"ms", float64(time.Since(start).Microseconds())/1000, "sql", st.Queries(), "sqlMs", float64(st.Duration().Microseconds())/1000)
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
