package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"follows/api"
	"follows/auth"
	"follows/db"
	"follows/flagenv"
)

// env names every flag's variables: -max-body is FOLLOWS_MAX_BODY; a few
// flags were read from another variable before every flag had a FOLLOWS_
// one, which still works below it; -secret and -secret-file give one
// setting.
var env = flagenv.Env{
	Prefix: "FOLLOWS_",
	Legacy: map[string]string{"addr": "ADDR", "db": "DATABASE_URL", "secret": "TOKEN_SECRET", "token-ttl": "TOKEN_TTL", "cors-origins": "CORS_ORIGINS"},
	Same:   map[string]string{"secret": "secret-file", "secret-file": "secret"},
}

// unusedSigning are the flags every subcommand took before each took only
// its own: a subcommand that signs no tokens still accepts them on the
// command line, and says that it ignores them (flagenv.Set.DropUnused).
var unusedSigning = []string{"secret", "secret-file", "token-ttl"}

type flagSet = flagenv.Set

func newFlagSet(name string, stderr io.Writer, getenv func(string) string) *flagSet {
	return flagenv.New(name, stderr, env, getenv)
}

// database is the -db of a command that opens one database.
type database struct{ dsn string }

func (d *database) flags(fs *flagSet) {
	d.dsn = "follows.db"
	fs.StringVar(&d.dsn, "db", d.dsn, "database: a SQLite path or file: URI, sqlserver://user:pass@host:1433?database=NAME, or postgres://user:pass@host:5432/NAME")
}

// signing is how tokens are signed, for the server and the token
// subcommand; secret.go says where a secret not given comes from.
type signing struct {
	database
	secret string
	ttl    time.Duration
}

func (s *signing) flags(fs *flagSet) {
	s.database.flags(fs)
	s.ttl = 720 * time.Hour
	fs.StringVar(&s.secret, "secret", s.secret, "secret that signs bearer tokens; every instance needs the same one")
	fs.Func("secret-file", "`file` holding the -secret, so that it stays off the command line; a trailing newline is ignored. Without either, a SQLite database keeps a secret in its path with .secret appended, made on first start", func(path string) error {
		secret, err := auth.ReadSecret(path)
		s.secret = secret
		return err
	})
	fs.DurationVar(&s.ttl, "token-ttl", s.ttl, "how long a minted token stays valid")
}

// server is everything the server can be told. The settings of the
// packages it wires are bound straight into the configurations they take.
type server struct {
	signing
	addr              string
	demo              bool
	checkCounts       bool // deprecated: the check-counts subcommand
	logFormat         string
	metricsOperations string // see api.NewMetrics
	suggestionCache   bool   // deprecated: no effect
	replicas          []string
	replicaMaxLag     time.Duration // see db.WithReplicas
	dbListen          string        // see db.WithListen

	api    api.Config // the handler's, its streams' (api.StreamConfig) included
	conns  api.ServerConfig
	oidc   auth.OIDCConfig // off without an issuer
	events db.EventsConfig
	// trusted are the manifests of -trusted-documents; playgroundGiven
	// says -no-playground was set, which -trusted-only's default yields to.
	trusted         []string
	playgroundGiven bool
}

func (s *server) flags(fs *flagSet) {
	s.signing.flags(fs)
	s.addr, s.logFormat = ":8080", "text"
	s.api, s.conns, s.events = api.DefaultConfig(), api.DefaultServerConfig(), db.DefaultEventsConfig()
	s.oidc = auth.OIDCConfig{UserClaim: "sub", NameClaim: "preferred_username"}
	s.suggestionCache = true
	fs.StringVar(&s.addr, "addr", s.addr, "address to listen on")
	fs.BoolVar(&s.demo, "demo", s.demo, "load the sample graph (alice, bob, carol, dave) into an empty database")
	fs.BoolVar(&s.checkCounts, "check-counts", s.checkCounts, "deprecated: use the check-counts subcommand, which does the same")
	fs.BoolVar(&s.api.Debug, "debug", s.api.Debug, "add extensions.debug (SQL statement count and time) to every response, and /debug/pprof; for development only")
	fs.Var(flagenv.Choice{Value: &s.logFormat, Of: []string{"text", "json"}}, "log-format", "`format` the server writes its log in (log/slog): text or json")
	fs.StringVar(&s.metricsOperations, "metrics-operations", s.metricsOperations, "comma-separated operation names /metrics labels, every other counted as other; none: the first 200 names of accepted operations")
	fs.BoolVar(&s.suggestionCache, "suggestion-cache", s.suggestionCache, "deprecated: no effect; suggestions keep no lists in memory since they count within a budget (accepted so that configurations which set it still start)")
	fs.BoolVar(&s.api.TraceViewerID, "trace-viewer-id", s.api.TraceViewerID, "add the id of the user a request's token claims to its operation span (enduser.id), when traces are on (OTEL_EXPORTER_OTLP_ENDPOINT: docs/tracing.md); off, traces name no user")
	fs.StringVar(&s.dbListen, "db-listen", s.dbListen, "PostgreSQL: `DSN` the server LISTENs on for other instances' follow events, reaching PostgreSQL directly where -db goes through a transaction-mode pooler such as PgBouncer (docs/pgbouncer.md); default -db's, and none, polling the outbox every -events-poll, where -db's default_query_exec_mode is one for a pooler")
	limitFlags(fs, &s.api)
	connectionFlags(fs, &s.api, &s.conns)
	oidcFlags(fs, &s.oidc)
	streamFlags(fs, &s.events, &s.api.Streams, &s.api.Caps)
	trustedFlags(fs, s)
	s.replicaMaxLag = db.DefaultReplicaMaxLag
	fs.Var(flagenv.List{Items: &s.replicas}, "db-replica", "`DSN` of a PostgreSQL streaming standby of -db that may answer queries (docs/replicas.md); repeat the flag for more, or separate them with commas (in FOLLOWS_DB_REPLICA too; write a comma inside a DSN as %2C). Mutations, subscriptions and each viewer's reads until a replica has its last write go to -db")
	fs.DurationVar(&s.replicaMaxLag, "replica-max-lag", s.replicaMaxLag, "how far behind -db a replica may be and still answer queries; one further behind, down or failing is skipped until it catches up")
}

// trustedFlags bind the trusted documents (docs/trusted-documents.md).
func trustedFlags(fs *flagSet, s *server) {
	fs.Var(flagenv.List{Items: &s.trusted}, "trusted-documents", "`file` of trusted documents, the persisted-query manifest of relay-compiler, Apollo or GraphQL Code Generator, served by their ids; repeat the flag, or separate files with commas, for more. Reloaded on SIGHUP")
	fs.BoolVar(&s.api.TrustedOnly, "trusted-only", s.api.TrustedOnly, "run only the -trusted-documents: any other document is refused (TRUSTED_DOCUMENT_REQUIRED, PERSISTED_QUERY_NOT_FOUND), introspection with it unless a trusted document holds it, and GraphiQL is off unless -no-playground=false is given")
	f := fs.Lookup("no-playground")
	f.Value = givenBool{f.Value, &s.playgroundGiven}
}

// limitFlags bind what one request may ask and be answered.
func limitFlags(fs *flagSet, c *api.Config) {
	fs.DurationVar(&c.BatchWait, "batch-wait", c.BatchWait, "how long loaders gather keys before one batched statement runs")
	fs.IntVar(&c.MaxComplexity, "max-complexity", c.MaxComplexity, "most a query may cost, list fields counting their first times their items; more is COMPLEXITY_LIMIT_EXCEEDED")
	fs.IntVar(&c.MaxDepth, "max-depth", c.MaxDepth, "deepest nesting of fields an operation may have")
	fs.IntVar(&c.MaxAliases, "max-aliases", c.MaxAliases, "most aliases an operation may use")
	fs.IntVar(&c.MaxOperations, "max-operations", c.MaxOperations, "most operations a document may hold")
	fs.Int64Var(&c.MaxBody, "max-body", c.MaxBody, "largest request body, and query string of a GET, in bytes; larger is refused with 413 (414 for a query string)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "longest a request may run; its SQL is cancelled then")
	fs.IntVar(&c.MaxExecuting, "max-executing", c.MaxExecuting, "most requests to /graphql that run their operations at once, 0 for 4 per processor; the rest wait their turn, first come first served, and one still waiting at -request-timeout is SERVER_BUSY; -1 is no limit")
	fs.IntVar(&c.MaxTokens, "max-tokens", c.MaxTokens, "most tokens a document may have; more is TOKEN_LIMIT_EXCEEDED")
	fs.IntVar(&c.MaxSelections, "max-selections", c.MaxSelections, "most selections a document may hold, each fragment spread counting its fragment's; more is SELECTION_LIMIT_EXCEEDED")
	fs.IntVar(&c.MaxBreadth, "max-breadth", c.MaxBreadth, "most fields one selection set may hold, with its fragments'; more is BREADTH_LIMIT_EXCEEDED")
	fs.IntVar(&c.MaxOverlaps, "max-overlaps", c.MaxOverlaps, "most comparisons validation may make to check that fields sharing a response name can merge; more is OVERLAP_LIMIT_EXCEEDED")
	fs.IntVar(&c.MaxErrors, "max-errors", c.MaxErrors, "most errors a response reports; the rest are counted in one TOO_MANY_ERRORS")
	fs.IntVar(&c.MaxResponse, "max-response", c.MaxResponse, "largest response in bytes; a larger one is replaced by RESPONSE_TOO_LARGE")
	fs.BoolVar(&c.NoPlayground, "no-playground", c.NoPlayground, "do not serve GraphiQL at /")
	fs.BoolVar(&c.NoIntrospection, "no-introspection", c.NoIntrospection, "refuse introspection queries")
}

// connectionFlags bind who may call, how often, and how connections are
// treated.
func connectionFlags(fs *flagSet, c *api.Config, conns *api.ServerConfig) {
	fs.StringVar(&c.CORSOrigins, "cors-origins", c.CORSOrigins, "comma-separated origins allowed to call /graphql from a browser, or *; none by default")
	fs.StringVar(&c.CORSHeaders, "cors-headers", c.CORSHeaders, "comma-separated request headers that pages on -cors-origins may send, or * for any")
	fs.DurationVar(&conns.ReadTimeout, "read-timeout", conns.ReadTimeout, "longest reading a request's headers and body may take; /graphql cuts a body off at -request-timeout too (408)")
	fs.DurationVar(&conns.WriteTimeout, "write-timeout", conns.WriteTimeout, "longest from a request's headers to the end of its answer; keep it above -request-timeout")
	fs.DurationVar(&conns.IdleTimeout, "idle-timeout", conns.IdleTimeout, "how long a kept-alive connection may wait for its next request")
	fs.IntVar(&conns.MaxConns, "max-conns", conns.MaxConns, "most connections open at once; more wait to be accepted (0: no cap)")
	fs.IntVar(&conns.MaxClientConns, "max-client-conns", conns.MaxClientConns, "most connections one client address (IPv6: its /64) may have open; more are answered 429 TOO_MANY_CONNECTIONS and closed. Off with -client-ip-header, where the peer is the proxy (0: no cap)")
	fs.IntVar(&c.Caps.MaxStreams, "max-streams", c.Caps.MaxStreams, "most websockets and server-sent event streams open at once, below -max-conns so that requests keep room; more are 429 TOO_MANY_STREAMS (0: three quarters of -max-conns, no cap without one)")
	fs.IntVar(&c.Caps.MaxClientStreams, "max-client-streams", c.Caps.MaxClientStreams, "most websockets and server-sent event streams one client address may hold; more are 429 TOO_MANY_STREAMS (0: no cap)")
	fs.DurationVar(&conns.ShutdownGrace, "shutdown-grace", conns.ShutdownGrace, "on SIGTERM, how long requests in flight may take to finish before the connections left are closed")
	fs.Var(&c.SignupRate, "rate-signup", "sign-ups (createUser) one client address may make: `N/PERIOD`, N at once then N per PERIOD (s, m, h or a duration), or off; more is 429 RATE_LIMITED")
	fs.Var(&c.MutationRate, "rate-mutations", "mutation fields one client address may run: `N/PERIOD` as for -rate-signup, or off")
	fs.StringVar(&c.ClientIPHeader, "client-ip-header", c.ClientIPHeader, "`header` (X-Forwarded-For, X-Real-IP) whose last address is the client for the rate limits; set it only behind a proxy that sets it")
}

// oidcFlags bind sign-in through an OpenID Connect provider.
func oidcFlags(fs *flagSet, c *auth.OIDCConfig) {
	fs.StringVar(&c.Issuer, "oidc-issuer", c.Issuer, "issuer `URL` of an OpenID Connect provider whose JWTs sign users in, besides the server's own tokens; a token's iss must equal it, a trailing slash aside. Needs -oidc-audience and -oidc-jwks")
	fs.StringVar(&c.Audience, "oidc-audience", c.Audience, "audience a provider token's aud must hold: the app's client id or the API's identifier at the provider")
	fs.StringVar(&c.JWKS, "oidc-jwks", c.JWKS, "the provider's keys: its JWKS `URL` (fetched, cached, fetched again for an unknown key id at most every 10s) or the path of a JWKS file")
	fs.StringVar(&c.UserClaim, "oidc-user-claim", c.UserClaim, "`claim` of a provider token naming its account, kept as the account's ExternalId")
	fs.StringVar(&c.NameClaim, "oidc-name-claim", c.NameClaim, "`claim` a provisioned account's name comes from (made a valid, unique name); the subject when a token lacks it")
	fs.BoolVar(&c.Provision, "oidc-provision", c.Provision, "make an account for a provider's user on first sign-in; without it, a subject with no account is refused (UNAUTHENTICATED)")
}

// streamFlags bind how live follow events are kept and streamed.
func streamFlags(fs *flagSet, events *db.EventsConfig, c *api.StreamConfig, caps *api.ClientCaps) {
	fs.DurationVar(&events.Retention, "events-retention", events.Retention, "how long follow events are kept for subscribers resuming with a cursor")
	fs.DurationVar(&events.Poll, "events-poll", events.Poll, "how often the event outbox is checked for other instances' events (SQLite, SQL Server; PostgreSQL's NOTIFY wakes at once)")
	fs.Int64Var(&events.ReplayWindow, "events-replay", events.ReplayWindow, "most events back a resuming subscriber's cursor may be; one further back is CURSOR_EXPIRED (subscribe again without a cursor)")
	fs.IntVar(&events.Replays, "events-replays", events.Replays, "most resumes this process replays at once; more is REPLAY_LIMIT (retry shortly)")
	fs.IntVar(&events.ReplaysPerViewer, "events-replays-per-viewer", events.ReplaysPerViewer, "most resumes one viewer may have replaying at once; more is REPLAY_LIMIT")
	fs.IntVar(&c.MaxSubscriptions, "max-subscriptions", c.MaxSubscriptions, "most subscriptions one websocket may run at once; more is SUBSCRIPTION_LIMIT")
	fs.IntVar(&caps.MaxClientSubscriptions, "max-client-subscriptions", caps.MaxClientSubscriptions, "most subscriptions one client address may run at once over all its streams; more is SUBSCRIPTION_LIMIT (0: no cap)")
	fs.IntVar(&caps.MaxViewerSubscriptions, "max-viewer-subscriptions", caps.MaxViewerSubscriptions, "most subscriptions one account may run at once over all its streams in this process; more is SUBSCRIPTION_LIMIT (0: no cap)")
	fs.IntVar(&c.MaxInFlight, "max-socket-operations", c.MaxInFlight, "most operations (queries, mutations, subscriptions) one websocket may have in flight at once; more are refused with IN_FLIGHT_LIMIT")
	fs.DurationVar(&c.AuthTimeout, "subscription-auth-timeout", c.AuthTimeout, "how long a websocket may take to send connection_init before it is closed with 4408")
	fs.DurationVar(&c.KeepAlive, "subscription-keepalive", c.KeepAlive, "how often an idle subscription stream is pinged; a websocket that misses two pongs is closed")
	fs.IntVar(&c.SendQueue, "subscription-queue", c.SendQueue, "messages that may wait for a slow subscriber; one that leaves its queue full for a second more is closed with 1013 (resume with the last cursor)")
}

// check refuses, before anything starts, settings that each parse but do
// not make sense together.
func (s *server) check() error {
	c, conns, st := s.api, s.conns, s.api.Streams
	if conns.WriteTimeout > 0 && conns.WriteTimeout <= c.RequestTimeout {
		return fmt.Errorf("-write-timeout %v is not above -request-timeout %v: answers that take long would be cut off unsent", conns.WriteTimeout, c.RequestTimeout)
	}
	if oidc := []string{s.oidc.Issuer, s.oidc.Audience, s.oidc.JWKS}; slices.Contains(oidc, "") && slices.ContainsFunc(oidc, func(s string) bool { return s != "" }) {
		return errors.New("sign-in through an OpenID Connect provider needs -oidc-issuer, -oidc-audience and -oidc-jwks, all three")
	}
	if s.oidc.UserClaim == "" || s.oidc.NameClaim == "" {
		return errors.New("-oidc-user-claim and -oidc-name-claim cannot be empty")
	}
	if ev := s.events; ev.ReplayWindow <= 0 || ev.Replays <= 0 || ev.ReplaysPerViewer <= 0 {
		return errors.New("-events-replay, -events-replays and -events-replays-per-viewer must be positive")
	}
	if s.events.Retention <= 0 || s.events.Poll <= 0 || st.MaxSubscriptions < 0 || st.MaxInFlight <= 0 || st.AuthTimeout <= 0 || st.KeepAlive <= 0 || st.SendQueue <= 0 {
		return errors.New("-events-retention, -events-poll, -subscription-auth-timeout, -subscription-keepalive, -subscription-queue and -max-socket-operations must be positive, -max-subscriptions not negative")
	}
	if conns.MaxConns < 0 || conns.ReadTimeout < 0 || conns.WriteTimeout < 0 || conns.IdleTimeout < 0 || conns.ShutdownGrace < 0 {
		return errors.New("-max-conns and the timeouts cannot be negative")
	}
	if caps := c.Caps; conns.MaxClientConns < 0 || caps.MaxStreams < 0 || caps.MaxClientStreams < 0 || caps.MaxClientSubscriptions < 0 || caps.MaxViewerSubscriptions < 0 {
		return errors.New("-max-client-conns, -max-streams, -max-client-streams, -max-client-subscriptions and -max-viewer-subscriptions cannot be negative")
	}
	if s.replicaMaxLag <= 0 {
		return errors.New("-replica-max-lag must be positive")
	}
	if c.TrustedOnly && len(s.trusted) == 0 {
		return errors.New("-trusted-only needs -trusted-documents: the manifests of the documents to run")
	}
	if conns.MaxConns > 0 && c.Caps.MaxStreams >= conns.MaxConns {
		return fmt.Errorf("-max-streams %d is not below -max-conns %d: streams could take every connection and leave requests waiting", c.Caps.MaxStreams, conns.MaxConns)
	}
	return nil
}

// streamShare is -max-streams, or when it is 0 three quarters of
// -max-conns: a quarter of the connections stays for requests, however
// many subscribers there are.
func (s *server) streamShare() int {
	if s.api.Caps.MaxStreams > 0 {
		return s.api.Caps.MaxStreams
	}
	return s.conns.MaxConns * 3 / 4
}
