package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"follows/auth"
	"follows/resolvers"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	coderws "github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"golang.org/x/net/http/httpguts"
)

// Subscriptions are served at /graphql beside queries and mutations: over
// a websocket (the graphql-transport-ws subprotocol, and the older
// graphql-ws one gqlgen also speaks) and over server-sent events (a POST
// of a subscription that names text/event-stream in its Accept header,
// or of any operation that ranks it first: graphql-sse's distinct
// connections mode). Operations on either pass through the same gqlgen
// extensions as any request (complexity, depth and document limits, the
// rate limit of mutations). A websocket skips the HTTP middleware that
// shapes one-shot answers; server-sent events pass through it up to
// reading the body, under the request's deadline (see streamChoice). A
// stream has no request deadline after that, and its limits are these.
// What that middleware gives a request (loaders, a deadline, a viewer
// checked), a websocket's operations get from socketRules, each its own.

// Close codes of a subscription websocket, beyond gqlgen's.
const (
	// CloseForbidden refuses a connection_init without a valid token
	// (graphql-ws's Forbidden).
	CloseForbidden = 4403
	// CloseInitTimeout closes a connection that sent no connection_init
	// within the authentication timeout (graphql-ws's
	// ConnectionInitialisationTimeout).
	CloseInitTimeout = 4408
	// CloseSlowConsumer drops a client that does not read what it is
	// sent: RFC 6455's Try Again Later, which graphql-ws clients retry; a
	// client resumes with the last cursor it saw.
	CloseSlowConsumer = 1013
)

// CodeSubscriptionLimit is the error code of a subscription refused
// because its connection has as many as it may.
const CodeSubscriptionLimit = "SUBSCRIPTION_LIMIT"

// StreamConfig are the limits of subscription streams (see
// docs/subscriptions.md).
type StreamConfig struct {
	// MaxSubscriptions is how many subscriptions one websocket may run at
	// once.
	MaxSubscriptions int
	// MaxInFlight is how many operations (queries, mutations and
	// subscriptions) one websocket may have in flight at once.
	MaxInFlight int
	// AuthTimeout is how long a websocket may take to send its
	// connection_init.
	AuthTimeout time.Duration
	// KeepAlive is how often an idle stream is pinged: a websocket that
	// does not answer two pings is closed.
	KeepAlive time.Duration
	// SendQueue is how many messages may wait for a slow client; when
	// they are that many, the next waits up to QueueWait for room before
	// the client is dropped (CloseSlowConsumer). WriteTimeout is how long
	// one write may take before the connection is cut (a dead peer).
	SendQueue    int
	QueueWait    time.Duration
	WriteTimeout time.Duration
}

// DefaultStreamConfig is the streams' configuration before flags.
func DefaultStreamConfig() StreamConfig {
	return StreamConfig{
		MaxSubscriptions: 10,
		// Room for the subscriptions and for a page's worth of queries
		// sent together.
		MaxInFlight: 32,
		AuthTimeout: 10 * time.Second,
		// Below the 60 s after which common load balancers drop an idle
		// connection.
		KeepAlive:    25 * time.Second,
		SendQueue:    64,
		QueueWait:    time.Second,
		WriteTimeout: 10 * time.Second,
	}
}

// isStream reports whether r opens a websocket. A POST may open a stream
// of server-sent events too, but that is known only once its body is
// read (guardRequest, streamChoice): until then it is a request like any.
func isStream(r *http.Request) bool {
	return httpguts.HeaderValuesContainsToken(r.Header["Upgrade"], "websocket")
}

// streams routes websocket upgrades to one handler and the rest to
// another. Another upgrade is not one the server makes, and is answered
// as if not asked for: curl --http2 asks a plain http:// request to
// switch to HTTP/2 (Upgrade: h2c), which gqlgen would otherwise refuse.
func streams(stream, plain http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isStream(r) {
			stream.ServeHTTP(w, r)
			return
		}
		if _, ok := r.Header["Upgrade"]; ok {
			r2 := *r
			r2.Header = r.Header.Clone()
			r2.Header.Del("Upgrade")
			r2.Header.Del("Http2-Settings")
			r = &r2
		}
		plain.ServeHTTP(w, r)
	})
}

// streamGuard is guardRequest for websockets: an upgrade is a GET, and
// has no deadline; the server's read and write timeouts are lifted from
// the connection (a hijacked connection keeps them otherwise).
func streamGuard(m *Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet {
				m.error(CodeMethodNotAllowed)
				requestError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
					"open a websocket with GET, or server-sent events with POST")
				return
			}
			rc := http.NewResponseController(w)
			rc.SetReadDeadline(time.Time{})
			rc.SetWriteDeadline(time.Time{})
			next.ServeHTTP(w, r)
		})
	}
}

// streamWriter bounds each write of an SSE stream, and flushes through
// whatever wraps the response (gqlgen's SSE transport needs an
// http.Flusher).
type streamWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *streamWriter) Write(b []byte) (int, error) {
	w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	return w.ResponseWriter.Write(b)
}

func (w *streamWriter) Flush() { w.rc.Flush() }

func (w *streamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// streamClient tells the rate limits who a stream's client is, as
// clientAddress does a POST's: mutations sent over a websocket count
// against the same allowance.
func streamClient(header string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := &client{address: addressOf(r, header)}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientKey{}, c)))
		})
	}
}

// websocketTransport is gqlgen's websocket transport with the limits of
// cfg and authentication from the connection_init payload, which must
// sign someone in as a request's token would (see socketRules).
func websocketTransport(res *resolvers.Resolver, cfg StreamConfig, origins string, log *slog.Logger) transport.Websocket {
	return transport.Websocket{
		// Every socket must answer websocket pings (liveSockets).
		Implementation: liveSockets{sockets: sockets{cfg: cfg, origins: originPatterns(origins), log: log}, every: cfg.KeepAlive},
		// A token in the payload wins over the upgrade request's
		// Authorization header, which tokens.Middleware read already.
		InitFunc: func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
			if a := payload.Authorization(); a != "" {
				ctx = res.Tokens.Authenticate(ctx, a)
			}
			why, err := res.SignedIn(res.ForOperation(ctx))
			if err != nil {
				return transport.WithWebsocketCloseCode(ctx, int(coderws.StatusTryAgainLater)), nil,
					errors.New("the token's account could not be looked up: try again later")
			}
			if why != nil {
				return transport.WithWebsocketCloseCode(ctx, CloseForbidden), nil,
					fmt.Errorf("a subscription needs a valid bearer token: %w", why)
			}
			if c := connectionOf(ctx); c != nil {
				c.watch(ctx, res, cfg.KeepAlive)
			}
			return ctx, nil, nil
		},
		KeepAlivePingInterval: cfg.KeepAlive, // graphql-ws's "ka"
		PingPongInterval:      cfg.KeepAlive, // graphql-transport-ws's ping, which expects a pong
	}
}

// originPatterns are the hosts of the origins that may open a websocket
// from a browser (the CORS origins), or nil for any when origins is *.
// Without origins, only pages of the server's own origin may.
func originPatterns(origins string) []string {
	var hosts []string
	for _, o := range list(origins) {
		if o == "*" {
			return nil
		}
		if u, err := url.Parse(o); err == nil && u.Host != "" {
			hosts = append(hosts, u.Host)
		}
	}
	if hosts == nil {
		hosts = []string{} // same origin only
	}
	return hosts
}

// connection is what one websocket's operations share (see
// socketTransport).
type connection struct {
	subscriptions atomic.Int64
	socket        *socket // set by Accept
}

type connectionKey struct{}

// subscriptionLimit refuses a subscription beyond Max on one websocket,
// or beyond the caps of its client and its viewer (clientCaps), over
// websockets and server-sent events alike.
type subscriptionLimit struct {
	Max  int
	caps *clientCaps
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
} = subscriptionLimit{}

func (subscriptionLimit) ExtensionName() string                   { return "SubscriptionLimit" }
func (subscriptionLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (l subscriptionLimit) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil || oc.Operation.Operation != ast.Subscription {
		return next(ctx)
	}
	var ends []func()
	refuse := func(err *gqlerror.Error) graphql.ResponseHandler {
		for _, end := range ends {
			end()
		}
		return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{err}})
	}
	if c, _ := ctx.Value(connectionKey{}).(*connection); c != nil {
		if c.subscriptions.Add(1) > int64(l.Max) {
			c.subscriptions.Add(-1)
			return refuse(limitError(CodeSubscriptionLimit, "a connection may run at most %d subscriptions at once", l.Max))
		}
		ends = append(ends, func() { c.subscriptions.Add(-1) })
	}
	if l.caps != nil {
		var client, viewer string
		if c := clientFrom(ctx); c != nil {
			client = c.address
		}
		if claim, err := auth.Viewer(ctx); err == nil {
			viewer = strconv.FormatInt(claim.UserID, 10)
		}
		end, err := l.caps.subscribe(client, viewer)
		if err != nil {
			return refuse(err)
		}
		ends = append(ends, end)
	}
	// The transport cancels an operation's context when it ends.
	context.AfterFunc(ctx, func() {
		for _, end := range ends {
			end()
		}
	})
	return next(ctx)
}

// sockets accepts websockets (github.com/coder/websocket) for gqlgen's
// transport, adding what it lacks: the authentication timeout, and a
// bounded queue of messages to send, so that a client that does not read
// is dropped (CloseSlowConsumer) rather than buffered without bound, and a
// write that does not complete cuts the connection.
type sockets struct {
	cfg     StreamConfig
	origins []string
	log     *slog.Logger
}

func (s sockets) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	for k, vs := range opts.ResponseHeader {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	conn, err := coderws.Accept(w, r, &coderws.AcceptOptions{
		Subprotocols:       opts.Subprotocols,
		OriginPatterns:     s.origins,
		InsecureSkipVerify: s.origins == nil,
	})
	if err != nil {
		return nil, err
	}
	sc := &socket{conn: conn, out: make(chan []byte, s.cfg.SendQueue), done: make(chan struct{}), queueWait: s.cfg.QueueWait, writeTimeout: s.cfg.WriteTimeout,
		maxInFlight: s.cfg.MaxInFlight, ops: map[string]*op{}}
	if c := connectionOf(r.Context()); c != nil {
		c.socket = sc
	}
	// Set under the lock that the timer's own close takes.
	sc.mu.Lock()
	sc.auth = time.AfterFunc(s.cfg.AuthTimeout, func() {
		sc.WriteClose(CloseInitTimeout, "Connection initialisation timeout")
	})
	sc.mu.Unlock()
	go sc.write()
	return sc, nil
}

// ending is how a socket ends, decided once.
type ending struct {
	now    bool // CloseNow: no close handshake
	drain  bool // send what is queued first
	code   int
	reason string
}

// socket is one accepted websocket.
type socket struct {
	conn         *coderws.Conn
	out          chan []byte   // messages to send; never closed
	done         chan struct{} // closed once the ending is decided
	queueWait    time.Duration
	writeTimeout time.Duration
	auth         *time.Timer
	read         atomic.Bool // a first message arrived
	maxInFlight  int

	mu       sync.Mutex
	end      ending // set before done is closed
	closed   bool
	deadline *time.Timer
	expiry   *time.Timer    // closes the socket when its token expires
	ops      map[string]*op // in flight, by id (see admit)
}

var errSlowConsumer = errors.New("slow consumer: the client did not read what it was sent")

// write sends the queue in order until the socket ends or a write fails.
func (s *socket) write() {
	for {
		select {
		case b := <-s.out:
			if !s.send(b) {
				return
			}
			continue
		case <-s.done:
		}
		// done: ending is set, and nothing is added to out any more
		// that matters.
		switch e := s.end; {
		case e.now:
			return
		case e.drain:
			for len(s.out) > 0 {
				if !s.send(<-s.out) {
					return
				}
			}
		}
		s.conn.Close(coderws.StatusCode(s.end.code), s.end.reason)
		return
	}
}

// send writes one message, or cuts the connection when it cannot within
// writeTimeout.
func (s *socket) send(b []byte) bool {
	ctx, cancel := context.WithTimeout(context.Background(), s.writeTimeout)
	defer cancel()
	if err := s.conn.Write(ctx, coderws.MessageText, b); err != nil {
		s.conn.CloseNow()
		return false
	}
	return true
}

// NextReader returns the next message that gqlgen is to handle: those
// that admit answers itself, or that close the socket, it never sees.
func (s *socket) NextReader() (int, io.Reader, error) {
	for {
		typ, data, err := s.conn.Read(context.Background())
		if err != nil {
			switch coderws.CloseStatus(err) {
			case coderws.StatusNormalClosure, coderws.StatusNoStatusRcvd:
				return int(typ), nil, transport.ErrWebsocketClosed
			}
			return int(typ), nil, err
		}
		if !s.read.Swap(true) {
			// gqlgen closes a connection whose first message is not
			// connection_init.
			s.auth.Stop()
		}
		if s.admit(data) {
			return int(typ), bytes.NewReader(data), nil
		}
		select {
		case <-s.done:
			return int(typ), nil, transport.ErrWebsocketClosed
		default:
		}
	}
}

// expireAt closes the socket at t, when its token stops being accepted.
func (s *socket) expireAt(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.expiry = time.AfterFunc(time.Until(t), func() {
		s.WriteClose(CloseForbidden, "the bearer token has expired")
	})
}

// WriteJSON queues v. When the queue is full it waits, up to queueWait,
// for the writer to make room: a client that reads (one replaying a long
// backlog after a resume, say) only slows the subscription down to its
// own pace, while one that has stopped reading is dropped with
// CloseSlowConsumer, to resume later from its last cursor (the close
// frame goes out once the write in progress completes, that is when the
// client reads again, or the connection is cut after writeTimeout).
// Dropping at once on a full queue made a resume with a backlog longer than the
// queue fail every time, with no event delivered.
func (s *socket) WriteJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.settle(b)
	select {
	case s.out <- b:
		return nil
	case <-s.done:
		return net.ErrClosed
	default:
	}
	wait := time.NewTimer(s.queueWait)
	defer wait.Stop()
	select {
	case s.out <- b:
		return nil
	case <-s.done:
		return net.ErrClosed
	case <-wait.C:
	}
	s.finish(ending{code: CloseSlowConsumer, reason: "slow consumer: resume with the last cursor received"})
	return errSlowConsumer
}

// WriteClose closes after what is queued.
func (s *socket) WriteClose(code int, reason string) error {
	s.finish(ending{drain: true, code: code, reason: reason})
	return nil
}

// finish decides how the socket ends, once, and tells the writer.
func (s *socket) finish(e ending) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.closed = true
	s.auth.Stop()
	e.reason = closeReason(e.reason)
	if s.expiry != nil {
		s.expiry.Stop()
	}
	s.end = e
	close(s.done)
	return true
}

// Close ends the connection unless a close handshake is under way, which
// ends it.
func (s *socket) Close() error {
	if !s.finish(ending{now: true}) {
		return nil
	}
	return s.conn.CloseNow()
}

func (s *socket) Subprotocol() string { return s.conn.Subprotocol() }

func (s *socket) SetReadLimit(limit int64) { s.conn.SetReadLimit(limit) }

// SetReadDeadline cuts the connection at t (gqlgen's wait for a pong).
func (s *socket) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deadline != nil {
		s.deadline.Stop()
		s.deadline = nil
	}
	if !t.IsZero() {
		s.deadline = time.AfterFunc(time.Until(t), func() { s.conn.CloseNow() })
	}
	return nil
}

// closeReason cuts a close reason to the 123 bytes a close frame holds,
// at a character's start; coder/websocket refuses to send a longer one.
func closeReason(r string) string {
	const max = 123
	if len(r) <= max {
		return r
	}
	i := max
	for i > 0 && !utf8.RuneStart(r[i]) {
		i--
	}
	return r[:i]
}
