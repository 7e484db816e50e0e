package api

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"golang.org/x/time/rate"
)

// CodeRateLimited refuses a mutation because its client has made too many
// lately; the answer is HTTP 429 with a Retry-After header.
const CodeRateLimited = "RATE_LIMITED"

// Rate is how many of something one client may do: N at once, then N
// more per Per as time passes (a token bucket of N tokens refilled at N
// per Per). The zero Rate is no limit.
type Rate struct {
	N   int
	Per time.Duration
}

// ParseRate reads a Rate written N/PERIOD, PERIOD being s, m, h or a Go
// duration (20/h, 300/m, 25/5m), or off for no limit.
func ParseRate(s string) (Rate, error) {
	if s == "off" {
		return Rate{}, nil
	}
	n, per, ok := strings.Cut(s, "/")
	r := Rate{}
	var err error
	if r.N, err = strconv.Atoi(n); !ok || err != nil || r.N <= 0 {
		return Rate{}, fmt.Errorf("rate %q: want N/PERIOD with N a positive number, such as 20/h, or off", s)
	}
	switch per {
	case "s":
		r.Per = time.Second
	case "m":
		r.Per = time.Minute
	case "h":
		r.Per = time.Hour
	default:
		if r.Per, err = time.ParseDuration(per); err != nil || r.Per <= 0 {
			return Rate{}, fmt.Errorf("rate %q: the period is s, m, h or a duration such as 5m", s)
		}
	}
	return r, nil
}

// Set reads s as ParseRate does: with String, a *Rate is a flag.Value,
// so a flag set binds a rate straight into a Config.
func (r *Rate) Set(s string) error {
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

func (r Rate) String() string {
	if r.N == 0 {
		return "off"
	}
	switch r.Per {
	case time.Second:
		return fmt.Sprintf("%d/s", r.N)
	case time.Minute:
		return fmt.Sprintf("%d/m", r.N)
	case time.Hour:
		return fmt.Sprintf("%d/h", r.N)
	}
	return fmt.Sprintf("%d/%v", r.N, r.Per)
}

// maxClients bounds the addresses a limit remembers at once, some 300
// bytes each. An address pushed out by newer ones starts again with a
// full allowance.
const maxClients = 50_000

// clientLimit keeps a token bucket (golang.org/x/time/rate) per client
// address in a bounded table that forgets a client once its bucket would
// be full again anyway.
type clientLimit struct {
	rate    Rate
	mu      sync.Mutex // makes finding or adding a client's bucket one step
	buckets *expirable.LRU[string, *rate.Limiter]
}

// newClientLimit is nil, which limits nothing, for the zero Rate.
func newClientLimit(r Rate) *clientLimit {
	if r.N == 0 {
		return nil
	}
	// An empty bucket is full again after Per; the table's expiry sweeps
	// every hundredth of its time to live, so that is kept above a minute.
	ttl := max(r.Per, time.Minute)
	return &clientLimit{rate: r, buckets: expirable.NewLRU[string, *rate.Limiter](maxClients, nil, ttl)}
}

// reserve takes n tokens from client's bucket: nil when there is no
// limit or n is 0, else a reservation to check and cancel as
// rate.Reservation's are.
func (l *clientLimit) reserve(client string, n int, now time.Time) *rate.Reservation {
	if l == nil || n == 0 {
		return nil
	}
	l.mu.Lock()
	b, found := l.buckets.Get(client)
	if !found {
		b = rate.NewLimiter(rate.Every(l.rate.Per/time.Duration(l.rate.N)), l.rate.N)
	}
	l.buckets.Add(client, b) // restarts its time to live
	l.mu.Unlock()
	return b.ReserveN(now, n)
}

// signupField is the mutation that makes an account, which the sign-up
// limit counts.
const signupField = "createUser"

// rateLimits refuses a mutation, before it runs, when its client has used
// up its allowance: each root field of a mutation counts once against
// the mutation limit, and each createUser also against the sign-up limit.
// Queries are not limited here: their price is their complexity.
type rateLimits struct {
	signup, mutations *clientLimit
}

func newRateLimits(signup, mutations Rate) rateLimits {
	return rateLimits{signup: newClientLimit(signup), mutations: newClientLimit(mutations)}
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = rateLimits{}

func (rateLimits) ExtensionName() string                   { return "RateLimits" }
func (rateLimits) Validate(graphql.ExecutableSchema) error { return nil }

func (l rateLimits) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	c := clientFrom(ctx)
	if c == nil || oc.Operation == nil || oc.Operation.Operation != ast.Mutation {
		return nil
	}
	writes, signups := 0, 0
	for _, f := range graphql.CollectFields(oc, oc.Operation.SelectionSet, []string{"Mutation"}) {
		switch f.Name {
		case "__typename":
		case signupField:
			signups++
			writes++
		default:
			writes++
		}
	}
	now := time.Now()
	signup := l.signup.reserve(c.address, signups, now)
	write := l.mutations.reserve(c.address, writes, now)
	var refusal *gqlerror.Error
	switch {
	case signup != nil && !signup.OK():
		refusal = c.refuse(0, "the request makes %d sign-ups; at most %d are allowed at once", signups, l.signup.rate.N)
	case write != nil && !write.OK():
		refusal = c.refuse(0, "the request makes %d writes; at most %d are allowed at once", writes, l.mutations.rate.N)
	case signup != nil && signup.DelayFrom(now) > 0:
		wait := max(signup.DelayFrom(now), delay(write, now))
		refusal = c.refuse(wait, "too many sign-ups from your address; try again in %s s", retryAfter(wait))
	case write != nil && write.DelayFrom(now) > 0:
		wait := write.DelayFrom(now)
		refusal = c.refuse(wait, "too many writes from your address; try again in %s s", retryAfter(wait))
	default:
		return nil
	}
	// A refused request takes nothing from either allowance.
	for _, r := range []*rate.Reservation{signup, write} {
		if r != nil {
			r.CancelAt(now)
		}
	}
	return refusal
}

// delay is how long r waits, if there is an r.
func delay(r *rate.Reservation, now time.Time) time.Duration {
	if r == nil {
		return 0
	}
	return r.DelayFrom(now)
}

// retryAfter is a wait in whole seconds, rounded up, as Retry-After
// gives it.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(int(math.Ceil(d.Seconds())))
}

// client is what the HTTP layer knows of a request's client for the
// rate limits, and where they leave their verdict for it to answer.
type client struct {
	address string
	limited bool
	wait    time.Duration // 0: waiting will not help
}

type clientKey struct{}

func clientFrom(ctx context.Context) *client {
	c, _ := ctx.Value(clientKey{}).(*client)
	return c
}

// refuse marks the request as rate limited, for clientAddress to answer
// 429, and is the error that says why.
func (c *client) refuse(wait time.Duration, format string, args ...any) *gqlerror.Error {
	c.limited, c.wait = true, wait
	return limitError(CodeRateLimited, format, args...)
}

// clientAddress tells the rate limits who a POST's client is (GET cannot
// carry a mutation), and answers a request they refused with 429 Too Many
// Requests and, where waiting helps, Retry-After. The client is the
// connection's remote address, IPv6 addresses grouped by their /64 (one
// host's share); with header (such as X-Forwarded-For or X-Real-IP) it is
// the last address in that header, which the proxy in front added, or the
// remote address if there is none. Trust header only behind a proxy that
// sets it on every request.
func clientAddress(header string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				next.ServeHTTP(w, r)
				return
			}
			c := &client{address: addressOf(r, header)}
			next.ServeHTTP(&limitedWriter{ResponseWriter: w, client: c}, r.WithContext(context.WithValue(r.Context(), clientKey{}, c)))
		})
	}
}

func addressOf(r *http.Request, header string) string {
	var addr netip.Addr
	if header != "" {
		if v := r.Header.Values(header); len(v) > 0 {
			last := v[len(v)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			addr, _ = netip.ParseAddr(strings.TrimSpace(last))
		}
	}
	if !addr.IsValid() {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr
		}
		addr = ap.Addr()
	}
	return clientOf(addr)
}

// clientOf is the client an address counts as: itself, or for IPv6 its
// /64, one host's or household's share. The listener's per-client
// connection cap counts by it too (clientcaps.go).
func clientOf(addr netip.Addr) string {
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.WithZone("").Prefix(64)
		return p.String()
	}
	return addr.String()
}

// limitedWriter turns the status of a rate-limited request into 429.
type limitedWriter struct {
	http.ResponseWriter
	client *client
	wrote  bool
}

func (w *limitedWriter) WriteHeader(code int) {
	if !w.wrote && w.client.limited {
		if w.client.wait > 0 {
			w.Header().Set("Retry-After", retryAfter(w.client.wait))
		}
		code = http.StatusTooManyRequests
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *limitedWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *limitedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
