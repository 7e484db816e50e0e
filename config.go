package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"follows/api"
	"follows/db"
)

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

	// Limits on a document, checked before it is parsed for gqlgen, and
	// on a response (see README, "Limits").
	maxTokens, maxSelections, maxBreadth, maxOverlaps int
	maxErrors, maxResponse                            int

	noPlayground, noIntrospection bool
	corsOrigins, corsHeaders      string
	logFormat                     string
	// metricsOperations, comma-separated, are the only operation names
	// /metrics labels (api.NewMetrics); none: the first 200 accepted.
	metricsOperations string

	// Connections (api.ServerConfig) and rate limits per client address;
	// the rates are N/PERIOD strings, read by check.
	readTimeout, writeTimeout, idleTimeout, shutdownGrace time.Duration
	maxConns                                              int
	rateSignup, rateMutations, clientIPHeader             string
	signupRate, mutationRate                              api.Rate

	// Sign-in through an OpenID Connect provider (see auth.OIDCConfig);
	// off without an issuer.
	oidcIssuer, oidcAudience, oidcJWKS string
	oidcUserClaim, oidcNameClaim       string
	oidcProvision                      bool
	// Live follow events: how the outbox is watched and kept
	// (db.EventsConfig), and the limits of subscription streams
	// (api.StreamConfig).
	events  db.EventsConfig
	streams api.StreamConfig
}

// defaultConfig is the configuration before flags and environment; the
// HTTP handler's defaults are its own (api.DefaultConfig).
func defaultConfig() config {
	h := api.DefaultConfig()
	srv := api.DefaultServerConfig()
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
		maxTokens:      h.MaxTokens,
		maxSelections:  h.MaxSelections,
		maxBreadth:     h.MaxBreadth,
		maxOverlaps:    h.MaxOverlaps,
		maxErrors:      h.MaxErrors,
		maxResponse:    h.MaxResponse,
		corsHeaders:    h.CORSHeaders,
		logFormat:      "text",
		readTimeout:    srv.ReadTimeout,
		writeTimeout:   srv.WriteTimeout,
		idleTimeout:    srv.IdleTimeout,
		shutdownGrace:  srv.ShutdownGrace,
		maxConns:       srv.MaxConns,
		rateSignup:     h.SignupRate.String(),
		rateMutations:  h.MutationRate.String(),
		oidcUserClaim:  "sub",
		oidcNameClaim:  "preferred_username",
		events:         db.DefaultEventsConfig(),
		streams:        h.Streams,
	}
}

// envPrefix starts the environment variable of every flag: -max-body is
// FOLLOWS_MAX_BODY.
const envPrefix = "FOLLOWS_"

// legacyEnv holds the variables these flags were read from before every
// flag had a FOLLOWS_ one; they still work, below FOLLOWS_ in precedence.
var legacyEnv = map[string]string{
	"addr":         "ADDR",
	"db":           "DATABASE_URL",
	"secret":       "TOKEN_SECRET",
	"token-ttl":    "TOKEN_TTL",
	"cors-origins": "CORS_ORIGINS",
}

// sameSetting pairs flags that give one setting two ways, so that a
// source giving one hides what weaker sources give for the other.
var sameSetting = map[string]string{"secret": "secret-file", "secret-file": "secret"}

// envNames are the variables a flag is read from, strongest first.
func envNames(flagName string) []string {
	names := []string{envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))}
	if legacy, ok := legacyEnv[flagName]; ok {
		names = append(names, legacy)
	}
	return names
}

// flagSet is a flag.FlagSet whose Parse also reads the environment, so the
// server and every subcommand take each of their flags from either.
type flagSet struct {
	*flag.FlagSet
	getenv func(string) string
}

// newFlagSet starts an empty flag set for a command.
func newFlagSet(name string, stderr io.Writer, getenv func(string) string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &flagSet{fs, getenv}
}

// Parse reads the command line, then gives each flag it did not set the
// value of the first of its environment variables (envNames) that is not
// empty. Precedence is thus flag, FOLLOWS_ variable, legacy variable,
// default. A value that does not parse is an error naming where it came
// from.
func (fs *flagSet) Parse(args []string) error {
	// Before parsing: -h prints the usage while it parses.
	fs.VisitAll(func(f *flag.Flag) {
		f.Usage += " (env " + strings.Join(envNames(f.Name), ", or ") + ")"
	})
	if err := fs.FlagSet.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, other := range sameSetting {
		if name < other && given[name] && given[other] {
			return fmt.Errorf("give -%s or -%s, not both", name, other)
		}
	}
	// One pass per precedence level, so that a stronger variable for one
	// of sameSetting's flags wins over a weaker one for the other.
	for level := range 2 {
		var set []string
		var err error
		fs.VisitAll(func(f *flag.Flag) {
			names := envNames(f.Name)
			if err != nil || level >= len(names) || given[f.Name] || given[sameSetting[f.Name]] {
				return
			}
			v := fs.getenv(names[level])
			if v == "" {
				return
			}
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("invalid value %q for %s (-%s): %v", v, names[level], f.Name, serr)
			}
			set = append(set, f.Name)
		})
		if err != nil {
			return err
		}
		for _, name := range set {
			if other := sameSetting[name]; slices.Contains(set, other) {
				return fmt.Errorf("give %s or %s, not both", envNames(name)[level], envNames(other)[level])
			}
			given[name] = true
		}
	}
	return nil
}

// newFlags starts the flag set of the server or a subcommand, with the
// settings they all share already registered.
func newFlags(name string, stderr io.Writer, getenv func(string) string) (*config, *flagSet) {
	c := defaultConfig()
	fs := newFlagSet(name, stderr, getenv)
	c.flags(fs)
	return &c, fs
}

// flags registers the settings shared by the server and its subcommands.
func (c *config) flags(fs *flagSet) {
	fs.StringVar(&c.dsn, "db", c.dsn, "database: a SQLite path or file: URI, sqlserver://user:pass@host:1433?database=NAME, or postgres://user:pass@host:5432/NAME")
	fs.StringVar(&c.secret, "secret", c.secret, "secret that signs bearer tokens; every instance needs the same one")
	fs.Func("secret-file", "`file` holding the -secret, so that it stays off the command line; a trailing newline is ignored. Without either, a SQLite database keeps a secret in its path with .secret appended, made on first start", func(path string) error {
		secret, err := readSecret(path)
		c.secret = secret
		return err
	})
	fs.DurationVar(&c.tokenTTL, "token-ttl", c.tokenTTL, "how long a minted token stays valid")
}

// newServerFlags is the flag set of the server itself.
func newServerFlags(stderr io.Writer, getenv func(string) string) (*config, *flagSet) {
	c, fs := newFlags("follows", stderr, getenv)
	fs.StringVar(&c.addr, "addr", c.addr, "address to listen on")
	fs.BoolVar(&c.demo, "demo", c.demo, "load the sample graph (alice, bob, carol, dave) into an empty database")
	fs.BoolVar(&c.checkCounts, "check-counts", c.checkCounts, "recount every user's follows, report and repair counts that drifted, then exit")
	fs.BoolVar(&c.debug, "debug", c.debug, "add extensions.debug (SQL statement count and time) to every response, and /debug/pprof; for development only")
	fs.DurationVar(&c.batchWait, "batch-wait", c.batchWait, "how long loaders gather keys before one batched statement runs")
	fs.IntVar(&c.maxComplexity, "max-complexity", c.maxComplexity, "most a query may cost, list fields counting their first times their items; more is COMPLEXITY_LIMIT_EXCEEDED")
	fs.IntVar(&c.maxDepth, "max-depth", c.maxDepth, "deepest nesting of fields an operation may have")
	fs.IntVar(&c.maxAliases, "max-aliases", c.maxAliases, "most aliases an operation may use")
	fs.IntVar(&c.maxOperations, "max-operations", c.maxOperations, "most operations a document may hold")
	fs.Int64Var(&c.maxBody, "max-body", c.maxBody, "largest request body, and query string of a GET, in bytes; larger is refused with 413 (414 for a query string)")
	fs.DurationVar(&c.requestTimeout, "request-timeout", c.requestTimeout, "longest a request may run; its SQL is cancelled then")
	fs.IntVar(&c.maxTokens, "max-tokens", c.maxTokens, "most tokens a document may have; more is TOKEN_LIMIT_EXCEEDED")
	fs.IntVar(&c.maxSelections, "max-selections", c.maxSelections, "most selections a document may hold, each fragment spread counting its fragment's; more is SELECTION_LIMIT_EXCEEDED")
	fs.IntVar(&c.maxBreadth, "max-breadth", c.maxBreadth, "most fields one selection set may hold, with its fragments'; more is BREADTH_LIMIT_EXCEEDED")
	fs.IntVar(&c.maxOverlaps, "max-overlaps", c.maxOverlaps, "most comparisons validation may make to check that fields sharing a response name can merge; more is OVERLAP_LIMIT_EXCEEDED")
	fs.IntVar(&c.maxErrors, "max-errors", c.maxErrors, "most errors a response reports; the rest are counted in one TOO_MANY_ERRORS")
	fs.IntVar(&c.maxResponse, "max-response", c.maxResponse, "largest response in bytes; a larger one is replaced by RESPONSE_TOO_LARGE")
	fs.BoolVar(&c.noPlayground, "no-playground", c.noPlayground, "do not serve GraphiQL at /")
	fs.BoolVar(&c.noIntrospection, "no-introspection", c.noIntrospection, "refuse introspection queries")
	fs.Var(choice{&c.logFormat, []string{"text", "json"}}, "log-format", "`format` the server writes its log in (log/slog): text or json")
	fs.StringVar(&c.corsOrigins, "cors-origins", c.corsOrigins, "comma-separated origins allowed to call /graphql from a browser, or *; none by default")
	fs.StringVar(&c.corsHeaders, "cors-headers", c.corsHeaders, "comma-separated request headers that pages on -cors-origins may send, or * for any")
	fs.StringVar(&c.metricsOperations, "metrics-operations", c.metricsOperations, "comma-separated operation names /metrics labels, every other counted as other; none: the first 200 names of accepted operations")
	fs.DurationVar(&c.readTimeout, "read-timeout", c.readTimeout, "longest reading a request's headers and body may take; /graphql cuts a body off at -request-timeout too (408)")
	fs.DurationVar(&c.writeTimeout, "write-timeout", c.writeTimeout, "longest from a request's headers to the end of its answer; keep it above -request-timeout")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", c.idleTimeout, "how long a kept-alive connection may wait for its next request")
	fs.IntVar(&c.maxConns, "max-conns", c.maxConns, "most connections open at once; more wait to be accepted (0: no cap)")
	fs.DurationVar(&c.shutdownGrace, "shutdown-grace", c.shutdownGrace, "on SIGTERM, how long requests in flight may take to finish before the connections left are closed")
	fs.StringVar(&c.rateSignup, "rate-signup", c.rateSignup, "sign-ups (createUser) one client address may make: N/PERIOD, N at once then N per PERIOD (s, m, h or a duration), or off; more is 429 RATE_LIMITED")
	fs.StringVar(&c.rateMutations, "rate-mutations", c.rateMutations, "mutation fields one client address may run: N/PERIOD as for -rate-signup, or off")
	fs.StringVar(&c.clientIPHeader, "client-ip-header", c.clientIPHeader, "`header` (X-Forwarded-For, X-Real-IP) whose last address is the client for the rate limits; set it only behind a proxy that sets it")
	fs.StringVar(&c.oidcIssuer, "oidc-issuer", c.oidcIssuer, "issuer `URL` of an OpenID Connect provider whose JWTs sign users in, besides the server's own tokens; a token's iss must equal it, a trailing slash aside. Needs -oidc-audience and -oidc-jwks")
	fs.StringVar(&c.oidcAudience, "oidc-audience", c.oidcAudience, "audience a provider token's aud must hold: the app's client id or the API's identifier at the provider")
	fs.StringVar(&c.oidcJWKS, "oidc-jwks", c.oidcJWKS, "the provider's keys: its JWKS `URL` (fetched, cached, fetched again for an unknown key id at most every 10s) or the path of a JWKS file")
	fs.StringVar(&c.oidcUserClaim, "oidc-user-claim", c.oidcUserClaim, "`claim` of a provider token naming its account, kept as the account's ExternalId")
	fs.StringVar(&c.oidcNameClaim, "oidc-name-claim", c.oidcNameClaim, "`claim` a provisioned account's name comes from (made a valid, unique name); the subject when a token lacks it")
	fs.BoolVar(&c.oidcProvision, "oidc-provision", c.oidcProvision, "make an account for a provider's user on first sign-in; without it, a subject with no account is refused (UNAUTHENTICATED)")
	fs.DurationVar(&c.events.Retention, "events-retention", c.events.Retention, "how long follow events are kept for subscribers resuming with a cursor")
	fs.DurationVar(&c.events.Poll, "events-poll", c.events.Poll, "how often the event outbox is checked for other instances' events (SQLite, SQL Server; PostgreSQL's NOTIFY wakes at once)")
	fs.IntVar(&c.streams.MaxSubscriptions, "max-subscriptions", c.streams.MaxSubscriptions, "most subscriptions one websocket may run at once; more is SUBSCRIPTION_LIMIT")
	fs.DurationVar(&c.streams.AuthTimeout, "subscription-auth-timeout", c.streams.AuthTimeout, "how long a websocket may take to send connection_init before it is closed with 4408")
	fs.DurationVar(&c.streams.KeepAlive, "subscription-keepalive", c.streams.KeepAlive, "how often an idle subscription stream is pinged; a websocket that misses two pongs is closed")
	fs.IntVar(&c.streams.SendQueue, "subscription-queue", c.streams.SendQueue, "messages that may wait for a slow subscriber; one that leaves its queue full for a second more is closed with 1013 (resume with the last cursor)")
	return c, fs
}

// check refuses, before anything starts, settings that each parse but do
// not make sense, and reads the rate limits.
func (c *config) check() error {
	var err error
	if c.signupRate, err = api.ParseRate(c.rateSignup); err != nil {
		return fmt.Errorf("-rate-signup (%s): %v", envNames("rate-signup")[0], err)
	}
	if c.mutationRate, err = api.ParseRate(c.rateMutations); err != nil {
		return fmt.Errorf("-rate-mutations (%s): %v", envNames("rate-mutations")[0], err)
	}
	if c.writeTimeout > 0 && c.writeTimeout <= c.requestTimeout {
		return fmt.Errorf("-write-timeout %v is not above -request-timeout %v: answers that take long would be cut off unsent", c.writeTimeout, c.requestTimeout)
	}
	if oidc := []string{c.oidcIssuer, c.oidcAudience, c.oidcJWKS}; slices.Contains(oidc, "") && slices.ContainsFunc(oidc, func(s string) bool { return s != "" }) {
		return errors.New("sign-in through an OpenID Connect provider needs -oidc-issuer, -oidc-audience and -oidc-jwks, all three")
	}
	if c.oidcUserClaim == "" || c.oidcNameClaim == "" {
		return errors.New("-oidc-user-claim and -oidc-name-claim cannot be empty")
	}
	if c.events.Retention <= 0 || c.events.Poll <= 0 || c.streams.MaxSubscriptions < 0 || c.streams.AuthTimeout <= 0 ||
		c.streams.KeepAlive <= 0 || c.streams.SendQueue <= 0 {
		return errors.New("-events-retention, -events-poll, -subscription-auth-timeout, -subscription-keepalive and -subscription-queue must be positive, -max-subscriptions not negative")
	}
	if c.maxConns < 0 || c.readTimeout < 0 || c.writeTimeout < 0 || c.idleTimeout < 0 || c.shutdownGrace < 0 {
		return errors.New("-max-conns and the timeouts cannot be negative")
	}
	return nil
}

// serverConfig is what of the configuration the HTTP server reads.
func (c config) serverConfig() api.ServerConfig {
	return api.ServerConfig{
		ReadTimeout:   c.readTimeout,
		WriteTimeout:  c.writeTimeout,
		IdleTimeout:   c.idleTimeout,
		MaxConns:      c.maxConns,
		ShutdownGrace: c.shutdownGrace,
	}
}

// choice is a string flag that takes one of a few values, so that another
// is refused at start wherever it was given.
type choice struct {
	value *string
	of    []string
}

func (c choice) String() string {
	if c.value == nil { // flag.PrintDefaults calls it on a zero choice
		return ""
	}
	return *c.value
}

func (c choice) Set(s string) error {
	if !slices.Contains(c.of, s) {
		return fmt.Errorf("want %s", strings.Join(c.of, " or "))
	}
	*c.value = s
	return nil
}
