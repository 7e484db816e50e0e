// Command follows serves a social follower graph over GraphQL.
//
//	follows [flags]                    serve (the default)
//	follows token -user ID [flags]     print a bearer token for a user
//	follows import -dir D              bulk-load a graph export wrote (or -users U -follows F)
//	follows export -dir D              write the graph as a folder import reads, changing nothing
//	follows copy -from DSN -to DSN     move a graph straight between databases
//	follows migrate [-dry-run]         adopt an EF Core database, apply migrations
//	follows schema -dialect sqlserver  print the schema as a script to run by hand
//	follows check-counts               recount follows, repair counts that drifted
//
// Run with -h for the flags, or read docs/configuration.md, written from
// them. Each can be given in the environment instead: FOLLOWS_ and its
// name in capitals, - as _ (FOLLOWS_MAX_BODY for -max-body); a flag on
// the command line wins.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"follows/api"
	"follows/db"
	"follows/tracing"

	"go.opentelemetry.io/otel"
)

//go:generate go run ./graph/internal/gqlgen
//go:generate sh -c "go run . config-doc > docs/configuration.md"

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

// command is the server or one of its subcommands: flags binds the flags
// it takes, and nothing else, into what it keeps; run does its work once
// they are parsed.
type command interface {
	flags(fs *flagSet)
	run(ctx context.Context, stdout, stderr io.Writer) error
}

// commands are the subcommands by name, in the order -h and
// docs/configuration.md list them; the server is the empty name.
var commands = []struct {
	name, does string
	new        func() command
}{
	{"", "serve GraphQL (the default)", func() command { return &server{} }},
	{"token", "print a bearer token for a user", func() command { return &token{} }},
	{"import", "bulk-load a graph export wrote (or CSV files of version 1)", func() command { return &importer{} }},
	{"export", "write the graph as a folder import reads, changing nothing", func() command { return &exporter{} }},
	{"copy", "move a graph straight between databases", func() command { return &copier{} }},
	{"migrate", "adopt an EF Core database, apply migrations", func() command { return &migrator{} }},
	{"schema", "print the schema as one script a DBA runs on an empty database (sqlcmd, psql, sqlite3), migrations recorded, touching no database", func() command { return &schema{} }},
	{"check-counts", "recount every user's follows, report and repair counts that drifted", func() command { return &counts{} }},
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) > 0 && args[0] == configDocCommand {
		return writeConfigDoc(stdout)
	}
	cmd, name := commands[0].new(), "follows"
	for _, c := range commands[1:] {
		if len(args) > 0 && args[0] == c.name {
			cmd, name, args = c.new(), "follows "+c.name, args[1:]
		}
	}
	fs := newFlagSet(name, stderr, getenv)
	cmd.flags(fs)
	args = fs.DropUnused(args, unusedSigning, stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return cmd.run(ctx, stdout, stderr)
}

func (s *server) run(ctx context.Context, stdout, stderr io.Writer) error {
	if err := s.check(); err != nil {
		return err
	}
	s.api.Caps.MaxStreams = s.streamShare()
	if s.checkCounts {
		fmt.Fprintln(stderr, "follows: -check-counts is deprecated: run `follows check-counts -db DSN` instead")
		return (&counts{s.database}).run(ctx, stdout, stderr)
	}
	serverGC(os.Getenv)
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if s.logFormat == "json" {
		log = slog.New(slog.NewJSONHandler(stderr, nil))
	}
	return s.serve(ctx, log)
}

// serverGC sets the collector for a server, unless the environment sets
// it (GOGC, GOMEMLIMIT); the subcommands keep Go's defaults, for an
// import's heap is nothing like a server's (docs/decisions/gc-settings.md).
func serverGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		// A request allocates much and keeps little: collecting at five
		// times the live heap rather than three spends less of a request's
		// CPU on the collector, for a little more peak memory
		// (docs/decisions/gc-settings.md).
		debug.SetGCPercent(400)
	}
	if getenv("GOMEMLIMIT") == "" {
		// Should the live heap grow (caches full of large documents), the
		// collector runs as often as it must to stay near this, rather
		// than let the heap reach five times the live one. With SQLite's
		// caches and the mapped binary, this keeps the server's peak
		// resident size under 100 MiB (docs/decisions/gc-settings.md).
		debug.SetMemoryLimit(44 << 20)
	}
}

func (s *server) serve(ctx context.Context, log *slog.Logger) error {
	tokens, err := s.tokens(log)
	if err != nil {
		return err
	}
	shutdown, err := s.startTracing(ctx, log)
	if err != nil {
		return err
	}
	defer shutdown()
	// The metrics come first: the store reports its statements to them.
	m := api.NewMetrics(s.metricsOperations)
	store, err := db.Open(ctx, s.dsn, db.WithStatementHook(m.Statement), db.WithEvents(s.events), db.WithLogger(log), db.WithReplicas(s.replicas, s.replicaMaxLag), db.WithListen(s.dbListen))
	if err != nil {
		return err
	}
	defer store.Close()
	m.WatchSuggestionMemory(store.SuggestionMemory)
	if store.Integrity != "" && store.Integrity != "ok" {
		log.Warn("database integrity", "check", store.Integrity)
	}
	if a := store.Adopted; a.Shape == db.ShapeConvention || a.Shape == db.ShapeJoinEntity {
		log.Info("adopted an EF Core database", "shape", a.Shape, "steps", a.Steps)
	}
	if s.demo {
		if err := loadDemo(ctx, store, log); err != nil {
			return err
		}
	}
	if s.oidc.Issuer != "" {
		// Accounts of the provider's users are kept in the store.
		s.oidc.Accounts, s.oidc.Log = store, log
		if err := tokens.AcceptProvider(ctx, s.oidc); err != nil {
			return err
		}
	}
	stopReload, err := s.openTrusted(log, m)
	if err != nil {
		return err
	}
	defer stopReload()
	h := api.NewHandler(store, tokens, s.api, log, m)

	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	log.Info("serving GraphQL", "url", "http://"+ln.Addr().String()+"/graphql", "graphiql", "http://"+ln.Addr().String()+"/", "db", redacted(s.dsn))
	// Until SIGTERM, then the requests in flight finish (within the
	// grace) before the database closes.
	conns := s.conns
	if s.api.ClientIPHeader != "" && conns.MaxClientConns > 0 {
		// Behind a proxy every connection's peer is the proxy.
		log.Info("-max-client-conns is off behind a proxy (-client-ip-header): cap each client's connections at the proxy")
		conns.MaxClientConns = 0
	}
	return api.NewServer(h, conns, log).Serve(ctx, ln)
}

// startTracing sets s.api.Tracer when the OTEL_ variables name a
// collector (docs/tracing.md), and returns what flushes the spans not yet
// sent, to call once the server has stopped.
func (s *server) startTracing(ctx context.Context, log *slog.Logger) (func(), error) {
	tp, err := tracing.Start(ctx, os.Getenv)
	if err != nil || tp == nil {
		return func() {}, err
	}
	// The SDK's own errors (a collector that does not answer) go to the
	// server's log rather than the standard logger's.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "err", err) }))
	s.api.Tracer = tp
	log.Info("tracing on: OTLP over HTTP", "endpoint", redacted(cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))))
	return func() {
		// ctx has ended by now (SIGTERM); the flush gets its own time.
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(flush); err != nil {
			log.Warn("tracing: flushing the last spans", "err", err)
		}
	}, nil
}

// loadDemo loads the sample graph for -demo, saying whether it did: it goes
// only into a database without users, so that -demo never mixes with a
// real graph, and a user who asked for it learns why it is not there.
func loadDemo(ctx context.Context, store *db.Store, log *slog.Logger) error {
	loaded, err := store.LoadSample(ctx)
	if err != nil {
		return err
	}
	if loaded {
		log.Info("loaded the sample graph", "users", db.SampleUsers)
	} else {
		log.Warn("-demo: sample graph not loaded: the database already has users; give -db a new file for the sample graph")
	}
	return nil
}

// token prints a bearer token for an existing user, for admins and
// scripts.
type token struct {
	signing
	user string
}

func (c *token) flags(fs *flagSet) {
	c.signing.flags(fs)
	fs.StringVar(&c.user, "user", "", "the user's id")
}

func (c *token) run(ctx context.Context, stdout, stderr io.Writer) error {
	id, err := strconv.ParseInt(c.user, 10, 64)
	if err != nil || id <= 0 {
		return errors.New("token: -user must be a user id")
	}
	tokens, err := c.mintingTokens()
	if err != nil {
		return fmt.Errorf("token: %w", err)
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
	fmt.Fprintln(stdout, tokens.Mint(id, found[0].SecurityStamp))
	return nil
}

// counts recounts every user's follows and repairs the counts kept on
// Users where they drifted, saying which.
type counts struct{ database }

func (c *counts) run(ctx context.Context, stdout, stderr io.Writer) error {
	store, err := db.Open(ctx, c.dsn)
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

// schema prints the full DDL script for a dialect, touching no database:
// what a DBA reviews, or runs by hand on an empty database before the
// server starts on it (see db.SchemaScript).
type schema struct{ dialect string }

func (c *schema) flags(fs *flagSet) {
	fs.StringVar(&c.dialect, "dialect", "sqlite", strings.Join(db.Dialects, ", "))
}

func (c *schema) run(ctx context.Context, stdout, stderr io.Writer) error {
	script, err := db.SchemaScript(c.dialect)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, script)
	return err
}

// redacted is a DSN fit for a log: a server database's URL without its
// password.
func redacted(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return dsn
}
