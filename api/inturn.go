package api

import (
	"net/http"
	"runtime"
	"sync/atomic"

	"follows/resolvers"

	"github.com/prometheus/client_golang/prometheus"
)

// perProcessor is how many requests run at once for each processor Go
// schedules on, unless -max-executing says otherwise: enough to keep the
// processors and the database's connections busy while some requests
// wait on a statement (docs/decisions/requests-in-turn.md).
const perProcessor = 4

// turns are the slots of the requests running their operations.
type turns struct {
	slots   chan struct{}
	waiting atomic.Int64
}

// inTurn lets at most max requests to /graphql run at once; the others
// wait for a slot in the order they came (a channel's blocked senders are
// served first in, first out) until their deadline (-request-timeout),
// and one that reaches it is answered 503 SERVER_BUSY with nothing run.
// Thirty-two requests run side by side on two processors took the same
// work as eight and their garbage came due together: each took more CPU,
// the collector ran more often, and the last of them waited on the
// others, four times the median (docs/decisions/requests-in-turn.md).
// Server-sent events, which stay open, take no slot; websockets do not
// pass here. max 0 is perProcessor for each processor, a negative max no
// limit.
func inTurn(max int, m *Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if max == 0 {
			max = perProcessor * runtime.GOMAXPROCS(0)
		}
		if max < 0 {
			return next
		}
		t := &turns{slots: make(chan struct{}, max)}
		m.watchTurns(t)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Accept") == mediaEventStream {
				next.ServeHTTP(w, r)
				return
			}
			select {
			case t.slots <- struct{}{}:
			default:
				t.waiting.Add(1)
				select {
				case t.slots <- struct{}{}:
					t.waiting.Add(-1)
				case <-r.Context().Done():
					t.waiting.Add(-1)
					m.error(resolvers.CodeServerBusy)
					w.Header().Set("Retry-After", "1")
					requestError(w, http.StatusServiceUnavailable, resolvers.CodeServerBusy,
						"the server is busy with other requests: this one waited its whole time for its turn, and nothing of it ran; try again")
					return
				}
			}
			defer func() { <-t.slots }()
			next.ServeHTTP(w, r)
		})
	}
}

// watchTurns has the metrics read, at each scrape, how many requests run
// their operations and how many wait for their turn (inTurn).
func (m *Metrics) watchTurns(t *turns) {
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "follows_graphql_requests_running", Help: "Requests to /graphql running their operations, at most -max-executing.",
		}, func() float64 { return float64(len(t.slots)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "follows_graphql_requests_waiting", Help: "Requests to /graphql waiting for their turn to run, first come first served.",
		}, func() float64 { return float64(t.waiting.Load()) }),
	)
}
