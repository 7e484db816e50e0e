package api

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Caps per client and per viewer, so that no one client can take the
// server away from the others: -max-conns bounds what the process holds,
// these bound one client's share of it. A client is what the rate limits
// count (clientOf: an address, an IPv6 /64); a viewer is the account a
// token names. Every count is this process's: several instances each
// count their own (see docs/production.md, "Caps per client").

// Refusal codes of the caps. A subscription over a cap is
// SUBSCRIPTION_LIMIT, as over -max-subscriptions.
const (
	// CodeTooManyConnections refuses a connection from a client that has
	// ServerConfig.MaxClientConns open already: HTTP 429, then the
	// connection is closed.
	CodeTooManyConnections = "TOO_MANY_CONNECTIONS"
	// CodeTooManyStreams refuses a websocket or server-sent event stream
	// when its client has MaxClientStreams open, or the server MaxStreams:
	// HTTP 429 before the upgrade or the stream.
	CodeTooManyStreams = "TOO_MANY_STREAMS"
)

// capRetry is the Retry-After of a refusal by a cap: a cap frees as the
// client's own connections and streams end, which a few seconds does for
// requests, and a client that retries sooner is refused again cheaply.
const capRetry = 5 * time.Second

// ClientCaps are the caps on streams and subscriptions; the zero value of
// each is no cap. The connection cap is ServerConfig.MaxClientConns: it
// is counted at the listener, before any request is read.
type ClientCaps struct {
	// MaxStreams is how many streams (websockets and server-sent event
	// streams) the server holds at once; keep it below -max-conns, so
	// that requests always have room (package main refuses to start
	// otherwise, and makes it three quarters of -max-conns when not
	// given).
	MaxStreams int
	// MaxClientStreams is how many of them one client may hold.
	MaxClientStreams int
	// MaxClientSubscriptions is how many subscriptions one client may run
	// at once, over all its streams; MaxViewerSubscriptions how many one
	// viewer may, over every stream of every client.
	MaxClientSubscriptions int
	MaxViewerSubscriptions int
}

// DefaultClientCaps are the caps before flags, MaxStreams left to
// package main, which makes it three quarters of -max-conns: with the
// default 2,000, a thousand subscribers from as many clients fit (1,500
// streams, and 500 connections left for requests); one client holds at
// most 50 streams, half
// its connection cap, so it can still make requests at its stream cap; a
// viewer needs a subscription for each tab or device it keeps open,
// which 20 covers (an account that held 1,000 made each follow it heard
// cost 1,000 deliveries); a client's 200 are ten such viewers behind one
// address.
func DefaultClientCaps() ClientCaps {
	return ClientCaps{
		MaxClientStreams:       50,
		MaxClientSubscriptions: 200,
		MaxViewerSubscriptions: 20,
	}
}

// tally counts what each key holds; a key holding nothing is forgotten,
// so the table is as large as what is open.
type tally map[string]int

// take counts one more for key unless it holds max already (0: no cap).
func (t tally) take(key string, max int) bool {
	if max > 0 && t[key] >= max {
		return false
	}
	t[key]++
	return true
}

func (t tally) release(key string) {
	if t[key]--; t[key] <= 0 {
		delete(t, key)
	}
}

// clientCaps holds the counts of ClientCaps.
type clientCaps struct {
	caps ClientCaps

	mu            sync.Mutex // the counts change together
	streams       int
	clientStreams tally
	clientSubs    tally
	viewerSubs    tally
}

func newClientCaps(c ClientCaps) *clientCaps {
	return &clientCaps{caps: c, clientStreams: tally{}, clientSubs: tally{}, viewerSubs: tally{}}
}

// openStream counts a stream of client's, returning what ends it, or
// nil and why not.
func (c *clientCaps) openStream(client string) (func(), string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.caps.MaxStreams > 0 && c.streams >= c.caps.MaxStreams {
		return nil, "the server holds as many streams as it may; try again later"
	}
	if !c.clientStreams.take(client, c.caps.MaxClientStreams) {
		return nil, "your address holds as many websockets and event streams as one client may; close one first"
	}
	c.streams++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.streams--
			c.clientStreams.release(client)
		})
	}, ""
}

// subscribe counts a subscription of client's for viewer ("" when the
// stream has none, which the viewer cap then does not count), returning
// what ends it, or nil and the refusal.
func (c *clientCaps) subscribe(client, viewer string) (func(), *gqlerror.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.clientSubs.take(client, c.caps.MaxClientSubscriptions) {
		return nil, limitError(CodeSubscriptionLimit, "your address runs %d subscriptions, the most one client may at once", c.caps.MaxClientSubscriptions)
	}
	if viewer != "" && !c.viewerSubs.take(viewer, c.caps.MaxViewerSubscriptions) {
		c.clientSubs.release(client)
		return nil, limitError(CodeSubscriptionLimit, "you run %d subscriptions, the most one account may at once over all its connections", c.caps.MaxViewerSubscriptions)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.clientSubs.release(client)
			if viewer != "" {
				c.viewerSubs.release(viewer)
			}
		})
	}, nil
}

// streamCaps counts each stream against the server's and its client's
// caps for as long as it is open (gqlgen's transports return when the
// stream ends), and refuses one over a cap with 429 TOO_MANY_STREAMS
// before it is upgraded or starts. It goes after streamClient, which
// says who the client is.
func streamCaps(caps *clientCaps, m *Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var address string
			if c := clientFrom(r.Context()); c != nil {
				address = c.address
			}
			end, why := caps.openStream(address)
			if end == nil {
				m.error(CodeTooManyStreams)
				w.Header().Set("Retry-After", retryAfter(capRetry))
				requestError(w, http.StatusTooManyRequests, CodeTooManyStreams, "%s", why)
				return
			}
			defer end()
			next.ServeHTTP(w, r)
		})
	}
}

// eventStreamCaps is streamCaps for server-sent events, which reach the
// plain chain and are known to be streams only once guardRequest has read
// their body: it marks them by the Accept it gives them (see streamChoice
// and withAccept), and only those count against the caps.
func eventStreamCaps(caps *clientCaps, m *Metrics) func(http.Handler) http.Handler {
	capped := streamCaps(caps, m)
	return func(next http.Handler) http.Handler {
		stream := capped(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Accept") == mediaEventStream {
				stream.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// clientListener closes at once, after a 429 if it can, each connection
// from a client that has max open already. Under netutil.LimitListener
// (-max-conns), a refused connection never holds one of its slots: they
// are taken by the connections this returns, of which one client has at
// most max, so one client cannot fill them and leave every other waiting
// in the kernel's queue.
type clientListener struct {
	net.Listener
	max      int
	refusing chan struct{} // refusals being answered, bounded

	mu   sync.Mutex
	open tally
}

// maxRefusing bounds the refusals answered at once; past it a refused
// connection is closed without an answer, so that a flood of them costs
// a goroutine each only up to this.
const maxRefusing = 64

// refuseWithin bounds answering a refused connection: reading its
// request's head, writing the 429 and letting the client read it.
const refuseWithin = 2 * time.Second

func limitClients(ln net.Listener, max int) net.Listener {
	return &clientListener{Listener: ln, max: max, refusing: make(chan struct{}, maxRefusing), open: tally{}}
}

func (l *clientListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := peerClient(c.RemoteAddr())
		l.mu.Lock()
		ok := l.open.take(client, l.max)
		l.mu.Unlock()
		if ok {
			return &clientConn{Conn: c, l: l, client: client}, nil
		}
		select {
		case l.refusing <- struct{}{}:
			go func() {
				defer func() { <-l.refusing }()
				refuseConn(c)
			}()
		default:
			c.Close()
		}
	}
}

// peerClient is the client a connection's peer counts as (clientOf). A
// proxy's -client-ip-header is not read here, before any request: behind
// a proxy the peer is the proxy, so package main leaves this cap off then.
func peerClient(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return clientOf(ta.AddrPort().Addr())
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return clientOf(ap.Addr())
	}
	return a.String()
}

// tooManyConnections is the whole answer to a refused connection.
var tooManyConnections = func() []byte {
	body := errorBody(CodeTooManyConnections, "your address has as many connections open as one client may; close one first, or reuse it")
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: ")
	b.WriteString(retryAfter(capRetry))
	b.WriteString("\r\nConnection: close\r\nContent-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}()

// refuseConn answers 429 TOO_MANY_CONNECTIONS and closes c, within
// refuseWithin. It reads the request's head first and what else comes
// after answering: closing with unread bytes resets the connection, and
// the client would see the reset rather than the answer.
func refuseConn(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(refuseWithin))
	head := make([]byte, 0, 4096)
	for !bytes.Contains(head, []byte("\r\n\r\n")) && len(head) < cap(head) {
		n, err := c.Read(head[len(head):cap(head)])
		head = head[:len(head)+n]
		if err != nil {
			return
		}
	}
	if _, err := c.Write(tooManyConnections); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// clientConn is a connection counted against its client's cap until it
// closes.
type clientConn struct {
	net.Conn
	l      *clientListener
	client string
	once   sync.Once
}

func (c *clientConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open.release(c.client)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// liveSockets require liveness of every websocket, whatever its
// subprotocol: graphql-transport-ws has its own ping, which gqlgen
// expects a pong to, but the legacy graphql-ws subprotocol (and no
// subprotocol, which gqlgen takes for it) has only the server's "ka",
// which asks nothing of the client, so a client that never reads held
// its connection until TCP gave up, some 15 minutes. Rather than drop
// the legacy subprotocol, which older clients (subscriptions-transport-ws,
// Apollo's old WebSocketLink) still speak, each socket is pinged at the
// websocket level (RFC 6455): browsers and websocket libraries answer
// those pongs themselves, without the application, so no honest client
// of either subprotocol notices, and one that does not answer within the
// interval is cut off.
type liveSockets struct {
	sockets
	every time.Duration
}

// pinger is a websocket that can be pinged, waiting for the pong.
type pinger interface {
	Ping(context.Context) error
}

func (l liveSockets) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	c, err := l.sockets.Accept(w, r, opts)
	if err != nil {
		return nil, err
	}
	if p, ok := c.(pinger); ok && l.every > 0 {
		// The request's context ends when the handler returns, that is
		// when the socket has ended.
		go keepPinging(r.Context(), p, c, l.every)
	}
	return c, nil
}

// keepPinging pings p every interval, closing c when a pong does not come
// back within it.
func keepPinging(ctx context.Context, p pinger, c io.Closer, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		err := p.Ping(pctx)
		cancel()
		if err != nil {
			c.Close()
			return
		}
	}
}

// Ping pings the peer at the websocket level and waits for its pong,
// which the transport's reader, always reading, takes in.
func (s *socket) Ping(ctx context.Context) error { return s.conn.Ping(ctx) }
