// Command follows serves a social follower graph over GraphQL.
//
//	follows [flags]                    serve (the default)
//	follows token -user ID [flags]     print a bearer token for a user
//	follows import -users U -follows F bulk-load a graph from CSV files
//	follows schema -dialect sqlserver   print the DDL the migrations apply
//	follows export -users U -follows F write the graph as import's CSV files
//	follows migrate [-dry-run]          adopt an EF Core database, apply migrations
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
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"follows/api"
	"follows/auth"
	"follows/db"
)

//go:generate go tool gqlgen generate

func main() {
	if os.Getenv("GOGC") == "" {
		// A request allocates much and keeps little: collecting at twice
		// the live heap rather than at once its size served 15% more list
		// queries at 8 clients for about 10 MB more memory (BENCHMARKS.md).
		debug.SetGCPercent(200)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "follows:", err)
		}
		os.Exit(1)
	}
}

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

	// Limits on what one request may ask (see README, "Limits").
	maxComplexity, maxDepth, maxAliases, maxOperations int
	maxBody                                            int64
	requestTimeout                                     time.Duration

	noPlayground, noIntrospection bool
	corsOrigins                   string
	logFormat                     string
}

// defaultConfig is the configuration before flags and environment; the
// HTTP handler's defaults are its own (api.DefaultConfig).
func defaultConfig() config {
	h := api.DefaultConfig()
	return config{
		addr:           ":8080",
		dsn:            "follows.db",
		tokenTTL:       720 * time.Hour,
		batchWait:      h.BatchWait,
		maxComplexity:  h.MaxComplexity,
		maxDepth:       h.MaxDepth,
		maxAliases:     h.MaxAliases,
		maxOperations:  h.MaxOperations,
		maxBody:        h.MaxBody,
		requestTimeout: h.RequestTimeout,
		logFormat:      "text",
	}
}

// newFlags starts the flag set of the server or a subcommand, with the
// settings they all share already registered.
func newFlags(name string, stderr io.Writer, getenv func(string) string) (*config, *flag.FlagSet) {
	c := defaultConfig()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.flags(fs, getenv)
	return &c, fs
}

// flags registers the settings shared by the server and its subcommands.
func (c *config) flags(fs *flag.FlagSet, getenv func(string) string) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	ttl, err := time.ParseDuration(env("TOKEN_TTL", c.tokenTTL.String()))
	if err != nil {
		ttl = c.tokenTTL
	}
	fs.StringVar(&c.dsn, "db", env("DATABASE_URL", c.dsn), "database: a SQLite path or file: URI, or sqlserver://user:pass@host:1433?database=NAME (env DATABASE_URL)")
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
		case "schema":
			return runSchema(args[1:], stdout, stderr)
		case "export":
			return runExport(ctx, args[1:], stdout, stderr, getenv)
		case "migrate":
			return runMigrate(ctx, args[1:], stdout, stderr, getenv)
		}
	}
	c, fs := newFlags("follows", stderr, getenv)
	if addr := getenv("ADDR"); addr != "" {
		c.addr = addr
	}
	fs.StringVar(&c.addr, "addr", c.addr, "address to listen on (env ADDR)")
	fs.BoolVar(&c.demo, "demo", false, "load the sample graph (alice, bob, carol, dave) into an empty database")
	fs.BoolVar(&c.checkCounts, "check-counts", false, "recount every user's follows, report and repair counts that drifted, then exit")
	fs.BoolVar(&c.debug, "debug", false, "add extensions.debug (SQL statement count and time) to every response, and /debug/pprof; for development only")
	fs.DurationVar(&c.batchWait, "batch-wait", c.batchWait, "how long loaders gather keys before one batched statement runs")
	fs.IntVar(&c.maxComplexity, "max-complexity", c.maxComplexity, "most a query may cost, list fields counting their first times their items; more is COMPLEXITY_LIMIT_EXCEEDED")
	fs.IntVar(&c.maxDepth, "max-depth", c.maxDepth, "deepest nesting of fields an operation may have")
	fs.IntVar(&c.maxAliases, "max-aliases", c.maxAliases, "most aliases an operation may use")
	fs.IntVar(&c.maxOperations, "max-operations", c.maxOperations, "most operations a document may hold")
	fs.Int64Var(&c.maxBody, "max-body", c.maxBody, "largest request body in bytes; larger is refused with 413")
	fs.DurationVar(&c.requestTimeout, "request-timeout", c.requestTimeout, "longest a request may run; its SQL is cancelled then")
	fs.BoolVar(&c.noPlayground, "no-playground", false, "do not serve GraphiQL at /")
	fs.BoolVar(&c.noIntrospection, "no-introspection", false, "refuse introspection queries")
	fs.StringVar(&c.logFormat, "log-format", c.logFormat, "text or json: how the server writes its log (log/slog)")
	fs.StringVar(&c.corsOrigins, "cors-origins", getenv("CORS_ORIGINS"), "comma-separated origins allowed to call /graphql from a browser, or *; none by default (env CORS_ORIGINS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.checkCounts {
		return checkCounts(ctx, c.dsn, stdout)
	}
	var log *slog.Logger
	switch c.logFormat {
	case "text":
		log = slog.New(slog.NewTextHandler(stderr, nil))
	case "json":
		log = slog.New(slog.NewJSONHandler(stderr, nil))
	default:
		return fmt.Errorf("-log-format is text or json, not %q", c.logFormat)
	}
	return serve(ctx, *c, log)
}

// handlerConfig is what of the configuration the HTTP handler reads.
func (c config) handlerConfig() api.Config {
	return api.Config{
		BatchWait:       c.batchWait,
		MaxComplexity:   c.maxComplexity,
		MaxDepth:        c.maxDepth,
		MaxAliases:      c.maxAliases,
		MaxOperations:   c.maxOperations,
		MaxBody:         c.maxBody,
		RequestTimeout:  c.requestTimeout,
		NoPlayground:    c.noPlayground,
		NoIntrospection: c.noIntrospection,
		CORSOrigins:     c.corsOrigins,
		Debug:           c.debug,
	}
}

func serve(ctx context.Context, c config, log *slog.Logger) error {
	// The metrics come first: the store reports its statements to them.
	m := api.NewMetrics()
	store, err := db.Open(ctx, c.dsn, db.WithStatementHook(m.Statement))
	if err != nil {
		return err
	}
	defer store.Close()
	if a := store.Adopted; a.Shape == db.ShapeConvention || a.Shape == db.ShapeJoinEntity {
		log.Info("adopted an EF Core database", "shape", a.Shape, "steps", a.Steps)
	}
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
	h := api.NewHandler(store, auth.NewTokens(secret, c.tokenTTL), c.handlerConfig(), log, m)

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

// runToken prints a bearer token for an existing user, for admins and
// scripts.
func runToken(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	c, fs := newFlags("follows token", stderr, getenv)
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

// runSchema prints the full DDL script for a dialect, touching no database:
// what a DBA reviews before the server applies it.
func runSchema(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("follows schema", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dialect := fs.String("dialect", "sqlite", "sqlite or sqlserver")
	if err := fs.Parse(args); err != nil {
		return err
	}
	script, err := db.SchemaScript(*dialect)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, script)
	return err
}
