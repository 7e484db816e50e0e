package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"follows/auth"
	"follows/resolvers"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// A websocket is one HTTP request that carries any number of operations
// for as long as it stays open. Each of them lives by the rules of a
// request all the same:
//
//   - it gets loaders and prefetch plans of its own (resolvers.ForOperation),
//     so it reads the graph as it stands when it runs, not as it stood
//     when the socket opened;
//   - a query or a mutation has the request deadline (-request-timeout);
//   - the viewer is checked as a request's is (resolvers.SignedIn): at
//     connection_init, before each operation, and every keep-alive
//     interval while subscriptions run; when the token has expired or
//     the account has gone (deleted, or its security stamp changed), the
//     socket is closed with CloseForbidden, and a timer closes it when the
//     token expires;
//   - at most MaxInFlight operations run at once (socket.admit), and an
//     id in use may not be used again (CloseSubscriberExists).

// CloseSubscriberExists closes a graphql-transport-ws connection that
// subscribes with the id of an operation still running: the protocol's
// "Subscriber for <id> already exists". Accepting it would leave the
// first operation running where the client cannot stop it.
const CloseSubscriberExists = 4409

// CodeInFlightLimit is the error code of an operation refused because its
// websocket has as many in flight as it may.
const CodeInFlightLimit = "IN_FLIGHT_LIMIT"

func connectionOf(ctx context.Context) *connection {
	c, _ := ctx.Value(connectionKey{}).(*connection)
	return c
}

// socketTransport is gqlgen's websocket transport with each connection's
// state in the context of its upgrade request, where Accept, InitFunc and
// every operation find it.
type socketTransport struct{ transport.Websocket }

func (t socketTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := context.WithValue(r.Context(), connectionKey{}, &connection{})
	t.Websocket.Do(w, r.WithContext(ctx), exec)
}

// viewerRule applies resolvers.SignedIn, and the token's expiry, to ctx
// (the connection's, or an operation's with loaders of its own), and
// returns the error that refuses an operation when they do not hold; a
// failure to look the account up is not one: the operation meets it and
// reports it.
func viewerRule(ctx context.Context, res *resolvers.Resolver) *gqlerror.Error {
	var why error
	if exp := auth.Expires(ctx); !exp.IsZero() && !time.Now().Before(exp) {
		why = auth.ErrExpiredToken
	} else if why, _ = res.SignedIn(ctx); why == nil {
		return nil
	}
	return resolvers.AuthError(ctx, why)
}

// forbid closes the socket because its viewer no longer signs in.
func (c *connection) forbid(e *gqlerror.Error) {
	if c.socket != nil {
		c.socket.WriteClose(CloseForbidden, e.Message)
	}
}

// watch closes the socket once its viewer no longer signs in: when the
// token expires, and, checked every interval, when the account goes. A
// subscription's events stop at once for a deleted or deactivated
// account (the delivery rules); this ends the socket as well.
func (c *connection) watch(ctx context.Context, res *resolvers.Resolver, interval time.Duration) {
	s := c.socket
	if s == nil {
		return
	}
	if exp := auth.Expires(ctx); !exp.IsZero() {
		s.expireAt(exp)
	}
	if interval <= 0 {
		return
	}
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
				if s.inFlight() == 0 {
					continue // the next operation checks
				}
				if e := viewerRule(res.ForOperation(ctx), res); e != nil {
					c.forbid(e)
				}
			}
		}
	}()
}

// socketRules gives each operation on a websocket what a request gets
// from the HTTP middleware: fresh loaders, the viewer's check, and (for
// queries and mutations) the request deadline.
type socketRules struct {
	res     *resolvers.Resolver
	timeout time.Duration
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
} = socketRules{}

func (socketRules) ExtensionName() string                   { return "SocketRules" }
func (socketRules) Validate(graphql.ExecutableSchema) error { return nil }

func (sr socketRules) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	c := connectionOf(ctx)
	if c == nil {
		return next(ctx) // a request, which the HTTP middleware gave all this
	}
	ctx = sr.res.ForOperation(ctx)
	if e := viewerRule(ctx, sr.res); e != nil {
		// The refusal is queued before the close, which sends what is
		// queued first.
		refused := false
		return func(context.Context) *graphql.Response {
			if !refused {
				refused = true
				return &graphql.Response{Errors: gqlerror.List{e}}
			}
			c.forbid(e)
			return nil
		}
	}
	if sr.timeout <= 0 {
		return next(ctx)
	}
	if oc := graphql.GetOperationContext(ctx); oc.Operation == nil || oc.Operation.Operation != ast.Subscription {
		// The transport cancels the operation's context when it ends,
		// which releases this one's timer.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, sr.timeout)
		context.AfterFunc(ctx, cancel)
		return next(ctx)
	}
	// A subscription runs as long as the client wants; each of its events
	// is resolved within the deadline.
	ctx, clock := resolvers.WithEventClock(ctx, sr.timeout)
	responses := next(ctx)
	return func(ctx context.Context) *graphql.Response {
		ctx, done := clock.Next(ctx)
		defer done()
		return responses(ctx)
	}
}

// op is an operation a socket has let through, until the server sends
// its last message (complete or error).
type op struct {
	stopping bool          // the client sent complete (stop) for it
	done     chan struct{} // closed by the last message
}

// wireMessage is what a socket reads of a protocol message: its type and
// operation id.
type wireMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// admit decides what becomes of a message the client sent before gqlgen
// reads it; false means gqlgen does not get it. A subscribe (the legacy
// protocol's start) with the id of an operation still running closes the
// socket with CloseSubscriberExists, unless the client stopped that one:
// then it waits, a write timeout at most, for it to end. Beyond
// MaxInFlight operations, a subscribe is answered here with an error
// (CodeInFlightLimit), costing neither a goroutine nor a parse; the
// answer waits for room in the bounded send queue, so a burst is paced by
// the client's reading and nothing grows with it.
func (s *socket) admit(data []byte) bool {
	var m wireMessage
	if json.Unmarshal(data, &m) != nil {
		return true // gqlgen answers what is not a message
	}
	switch m.Type {
	case "subscribe", "start":
	case "complete", "stop":
		s.mu.Lock()
		if o := s.ops[m.ID]; o != nil {
			o.stopping = true
		}
		s.mu.Unlock()
		return true
	default:
		return true
	}
	s.mu.Lock()
	o := s.ops[m.ID]
	if o != nil && o.stopping {
		s.mu.Unlock()
		wait := time.NewTimer(s.writeTimeout)
		select {
		case <-o.done:
		case <-s.done:
		case <-wait.C:
		}
		wait.Stop()
		s.mu.Lock()
		o = s.ops[m.ID]
	}
	switch {
	case o != nil:
		s.mu.Unlock()
		s.WriteClose(CloseSubscriberExists, "Subscriber for "+m.ID+" already exists")
		return false
	case len(s.ops) >= s.maxInFlight:
		s.mu.Unlock()
		e := limitError(CodeInFlightLimit, "a websocket may have at most %d operations in flight at once: wait for an answer before sending more", s.maxInFlight)
		payload, _ := json.Marshal(gqlerror.List{e})
		s.WriteJSON(wireMessage{ID: m.ID, Type: "error", Payload: payload})
		return false
	}
	s.ops[m.ID] = &op{done: make(chan struct{})}
	s.mu.Unlock()
	return true
}

// inFlight is how many operations are in flight.
func (s *socket) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ops)
}

// settle ends the operation whose last message b is (complete, or error),
// freeing its id and its place in flight.
func (s *socket) settle(b []byte) {
	// Only a message of one of these types is decoded: a "next" can be
	// megabytes. Inside a JSON string the quotes would be escaped.
	if !bytes.Contains(b, []byte(`"type":"complete"`)) && !bytes.Contains(b, []byte(`"type":"error"`)) {
		return
	}
	var m wireMessage
	if json.Unmarshal(b, &m) != nil || m.Type != "complete" && m.Type != "error" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.ops[m.ID]; o != nil {
		delete(s.ops, m.ID)
		close(o.done)
	}
}
