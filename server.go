// Command follows serves a social follower graph over GraphQL.
//
//	follows [flags]                    serve (the default)
//	follows token -user ID [flags]     print a bearer token for a user
//	follows import -users U -follows F bulk-load a graph from CSV files
//
// Run with -h for the flags; each has an environment fallback.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"follows/auth"
	"follows/db"
	"follows/graph"
	"follows/resolvers"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/99designs/gqlgen/graphql/playground"
	"github.com/vektah/gqlparser/v2/ast"
)

//go:generate go tool gqlgen generate

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "follows:", err)
		}
		os.Exit(1)
	}
}

// defaultBatchWait is how long a loader waits for more keys. Lists gather
// their keys without waiting (resolvers.prefetch), so this only needs to
// cover sibling resolvers started together.
const defaultBatchWait = 250 * time.Microsecond

// config is everything the server can be told, from flags or environment.
type config struct {
	addr     string
	dsn      string
	secret   string
	tokenTTL time.Duration
	demo     bool
	debug    bool
	// checkCounts recounts follows, repairs drifted counters and exits.
	checkCounts bool
	batchWait   time.Duration
}

// flags registers the settings shared by the server and its subcommands.
func (c *config) flags(fs *flag.FlagSet, getenv func(string) string) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	ttl, err := time.ParseDuration(env("TOKEN_TTL", "720h"))
	if err != nil {
		ttl = 720 * time.Hour
	}
	fs.StringVar(&c.dsn, "db", env("DATABASE_URL", "follows.db"), "database: a SQLite path or file: URI (env DATABASE_URL)")
	fs.StringVar(&c.secret, "secret", env("TOKEN_SECRET", ""), "secret that signs bearer tokens; every instance needs the same one (env TOKEN_SECRET)")
	fs.DurationVar(&c.tokenTTL, "token-ttl", ttl, "how long a minted token stays valid (env TOKEN_TTL)")
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) > 0 {
		switch args[0] {
		case "token":
			return runToken(ctx, args[1:], stdout, stderr, getenv)
		case "import":
			return runImport(ctx, args[1:], stdout, stderr, getenv)
		}
	}
	var c config
	fs := flag.NewFlagSet("follows", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.flags(fs, getenv)
	addr := getenv("ADDR")
	if addr == "" {
		addr = ":8080"
	}
	fs.StringVar(&c.addr, "addr", addr, "address to listen on (env ADDR)")
	fs.BoolVar(&c.demo, "demo", false, "load the sample graph (alice, bob, carol, dave) into an empty database")
	fs.BoolVar(&c.checkCounts, "check-counts", false, "recount every user's follows, report and repair counts that drifted, then exit")
	fs.BoolVar(&c.debug, "debug", false, "add extensions.debug (SQL statement count and time) to every response, and /debug/pprof; for development only")
	fs.DurationVar(&c.batchWait, "batch-wait", defaultBatchWait, "how long loaders gather keys before one batched statement runs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.checkCounts {
		return checkCounts(ctx, c.dsn, stdout)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	return serve(ctx, c, log)
}

func serve(ctx context.Context, c config, log *slog.Logger) error {
	store, err := db.Open(ctx, c.dsn)
	if err != nil {
		return err
	}
	defer store.Close()
	if c.demo {
		loaded, err := store.LoadSample(ctx)
		if err != nil {
			return err
		}
		if loaded {
			log.Info("loaded the sample graph", "users", db.SampleUsers)
		}
	}
	secret := []byte(c.secret)
	if len(secret) == 0 {
		secret = auth.RandomSecret()
		log.Warn("no token secret configured (-secret or TOKEN_SECRET): using a random one, so tokens end with this process and work on no other instance")
	}
	h := newHandler(store, auth.NewTokens(secret, c.tokenTTL), c, log)

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Info("serving GraphQL", "url", "http://"+ln.Addr().String()+"/graphql", "graphiql", "http://"+ln.Addr().String()+"/", "db", c.dsn)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Finish the requests in flight, then close the database.
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// newHandler wires the HTTP endpoints: GraphQL at /graphql, GraphiQL at /,
// and /healthz.
func newHandler(store *db.Store, tokens *auth.Tokens, c config, log *slog.Logger) http.Handler {
	res := &resolvers.Resolver{Store: store, Tokens: tokens, BatchWait: c.batchWait}
	gql := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: res}))
	gql.AddTransport(transport.Options{})
	gql.AddTransport(transport.GET{})
	gql.AddTransport(transport.POST{})
	gql.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	gql.Use(extension.Introspection{})
	gql.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](1000)})
	gql.SetErrorPresenter(resolvers.ErrorPresenter(log))
	gql.SetRecoverFunc(resolvers.Recover(log))
	if c.debug {
		gql.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
			resp := next(ctx)
			if st := sqlStats(ctx); st != nil && resp != nil {
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
	}

	mux := http.NewServeMux()
	mux.Handle("/graphql", tokens.Middleware(res.Middleware(gql)))
	mux.Handle("GET /{$}", playground.Handler("follows", "/graphql"))
	if c.debug {
		// Profiles for finding where a request's time goes; -debug is for
		// development, never for a public server.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	return logRequests(log, mux)
}

type statsKey struct{}

func sqlStats(ctx context.Context) *db.Stats {
	st, _ := ctx.Value(statsKey{}).(*db.Stats)
	return st
}

// logRequests counts each request's SQL statements and logs one line per
// GraphQL request.
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, st := db.WithStats(r.Context())
		ctx = context.WithValue(ctx, statsKey{}, st)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(ctx))
		if r.URL.Path == "/graphql" {
			log.Info("request", "method", r.Method, "status", sw.status,
				"ms", float64(time.Since(start).Microseconds())/1000, "sql", st.Queries())
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

// runToken prints a bearer token for an existing user, for admins and
// scripts.
func runToken(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	var c config
	fs := flag.NewFlagSet("follows token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.flags(fs, getenv)
	user := fs.String("user", "", "the user's id")
	if err := fs.Parse(args); err != nil {
		return err
	}
	id, err := strconv.ParseInt(*user, 10, 64)
	if err != nil || id <= 0 {
		return errors.New("token: -user must be a user id")
	}
	if c.secret == "" {
		return errors.New("token: give the server's -secret (or TOKEN_SECRET); a server without one makes a random secret that no minted token matches")
	}
	store, err := db.Open(ctx, c.dsn)
	if err != nil {
		return err
	}
	defer store.Close()
	found, err := store.UsersByID(ctx, []int64{id})
	if err != nil {
		return err
	}
	if found[0] == nil {
		return fmt.Errorf("token: no user with id %d in %s", id, c.dsn)
	}
	fmt.Fprintln(stdout, auth.NewTokens([]byte(c.secret), c.tokenTTL).Mint(id))
	return nil
}

// checkCounts recounts every user's follows and repairs the counts kept on
// Users where they drifted, saying which.
func checkCounts(ctx context.Context, dsn string, stdout io.Writer) error {
	store, err := db.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer store.Close()
	drift, err := store.CheckCounts(ctx, true)
	if err != nil {
		return err
	}
	for _, d := range drift {
		fmt.Fprintf(stdout, "user %d (%s): followers %d, recounted %d; following %d, recounted %d\n",
			d.User.ID, d.User.Name, d.User.FollowerCount, d.RecountFollowers, d.User.FollowingCount, d.RecountFollowing)
	}
	fmt.Fprintf(stdout, "%d users had drifted counts; repaired\n", len(drift))
	return nil
}
