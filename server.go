// Command follows serves a social follower graph over GraphQL.
//
//	follows [flags]                    serve (the default)
//	follows token -user ID [flags]     print a bearer token for a user
//	follows import -dir D              bulk-load a graph export wrote (or -users U -follows F)
//	follows schema -dialect sqlserver   print the DDL the migrations apply
//	follows export -dir D              write the graph as a folder import reads, changing nothing
//	follows copy -from DSN -to DSN     move a graph straight between databases
//	follows migrate [-dry-run]          adopt an EF Core database, apply migrations
//
// Run with -h for the flags. Each can be given in the environment instead:
// FOLLOWS_ and its name in capitals, - as _ (FOLLOWS_MAX_BODY for
// -max-body); a flag on the command line wins.
package main

import (
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

	"follows/api"
	"follows/auth"
	"follows/db"
)

//go:generate go run ./graph/internal/gqlgen

func main() {
	if os.Getenv("GOGC") == "" {
		// A request allocates much and keeps little (a live heap of about
		// 5 MB under load): collecting at five times the live heap rather
		// than three cut the collector's share of the fan-out query's CPU
		// from 8% to under 2% and served it 10-20% faster, for about 10 MB
		// more peak memory (docs/decisions/gc-settings.md).
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// Should the live heap grow (caches full of large documents), the
		// collector runs as often as it must to stay near this, rather
		// than let the heap reach five times the live one.
		debug.SetMemoryLimit(64 << 20)
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

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) > 0 {
		switch args[0] {
		case "token":
			return runToken(ctx, args[1:], stdout, stderr, getenv)
		case "import":
			return runImport(ctx, args[1:], stdout, stderr, getenv)
		case "schema":
			return runSchema(args[1:], stdout, stderr, getenv)
		case "export":
			return runExport(ctx, args[1:], stdout, stderr, getenv)
		case "migrate":
			return runMigrate(ctx, args[1:], stdout, stderr, getenv)
		case "copy":
			return runCopy(ctx, args[1:], stdout, stderr, getenv)
		}
	}
	c, fs := newServerFlags(stderr, getenv)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := c.check(); err != nil {
		return err
	}
	if c.checkCounts {
		return checkCounts(ctx, c.dsn, stdout)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if c.logFormat == "json" {
		log = slog.New(slog.NewJSONHandler(stderr, nil))
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
		MaxTokens:       c.maxTokens,
		MaxSelections:   c.maxSelections,
		MaxBreadth:      c.maxBreadth,
		MaxOverlaps:     c.maxOverlaps,
		MaxErrors:       c.maxErrors,
		MaxResponse:     c.maxResponse,
		NoPlayground:    c.noPlayground,
		NoIntrospection: c.noIntrospection,
		CORSOrigins:     c.corsOrigins,
		CORSHeaders:     c.corsHeaders,
		SignupRate:      c.signupRate,
		MutationRate:    c.mutationRate,
		ClientIPHeader:  c.clientIPHeader,
		Debug:           c.debug,
		Streams:         c.streams,
	}
}

func serve(ctx context.Context, c config, log *slog.Logger) error {
	tokens, err := c.tokens(log)
	if err != nil {
		return err
	}
	// The metrics come first: the store reports its statements to them.
	m := api.NewMetrics(c.metricsOperations)
	store, err := db.Open(ctx, c.dsn, db.WithStatementHook(m.Statement), db.WithEvents(c.events))
	if err != nil {
		return err
	}
	defer store.Close()
	if store.Integrity != "" && store.Integrity != "ok" {
		log.Warn("database integrity", "check", store.Integrity)
	}
	if a := store.Adopted; a.Shape == db.ShapeConvention || a.Shape == db.ShapeJoinEntity {
		log.Info("adopted an EF Core database", "shape", a.Shape, "steps", a.Steps)
	}
	if c.demo {
		if err := loadDemo(ctx, store, log); err != nil {
			return err
		}
	}
	if c.oidcIssuer != "" {
		if err := acceptOIDC(ctx, c, tokens, store, log); err != nil {
			return err
		}
	}
	h := api.NewHandler(store, tokens, c.handlerConfig(), log, m)

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	log.Info("serving GraphQL", "url", "http://"+ln.Addr().String()+"/graphql", "graphiql", "http://"+ln.Addr().String()+"/", "db", redacted(c.dsn))
	// Until SIGTERM, then the requests in flight finish (within the
	// grace) before the database closes.
	return api.NewServer(h, c.serverConfig(), log).Serve(ctx, ln)
}

// acceptOIDC has the server take the JWTs of the OpenID Connect provider
// configured, with accounts kept in the store. The provider's keys are
// fetched once now, so that a provider out of reach shows in the log at
// start; the server starts anyway and tries again when a token comes.
func acceptOIDC(ctx context.Context, c config, tokens *auth.Tokens, store *db.Store, log *slog.Logger) error {
	o, err := auth.NewOIDC(auth.OIDCConfig{
		Issuer:    c.oidcIssuer,
		Audience:  c.oidcAudience,
		JWKS:      c.oidcJWKS,
		UserClaim: c.oidcUserClaim,
		NameClaim: c.oidcNameClaim,
		Provision: c.oidcProvision,
		Accounts:  store,
		Log:       log,
	})
	if err != nil {
		return fmt.Errorf("OpenID Connect sign-in: %w", err)
	}
	if err := o.Refresh(ctx); err != nil {
		log.Warn("the OpenID Connect provider's keys could not be fetched; tokens are refused until they are", "jwks", c.oidcJWKS, "err", err)
	}
	tokens.AcceptOIDC(o)
	log.Info("accepting tokens of an OpenID Connect provider", "issuer", c.oidcIssuer, "audience", c.oidcAudience, "provision", c.oidcProvision)
	return nil
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
func runSchema(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := newFlagSet("follows schema", stderr, getenv)
	dialect := fs.String("dialect", "sqlite", strings.Join(db.Dialects, ", "))
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

// redacted is a DSN fit for a log: a server database's URL without its
// password.
func redacted(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return dsn
}
