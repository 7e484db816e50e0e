package api

import (
	"context"

	"follows/auth"
	"follows/db"

	"github.com/99designs/gqlgen/graphql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vektah/gqlparser/v2/ast"
)

// replicaReads says, for each operation, where the store may answer its
// reads (docs/replicas.md): a query's from a replica that has replayed its
// viewer's last write; a mutation's from the primary, its transactions
// marked as the viewer's writes; a subscription's from the primary, as
// its events come from the primary's outbox.
type replicaReads struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
} = replicaReads{}

func (replicaReads) ExtensionName() string                   { return "ReplicaReads" }
func (replicaReads) Validate(graphql.ExecutableSchema) error { return nil }

func (replicaReads) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	op := graphql.GetOperationContext(ctx).Operation
	if op == nil {
		return next(ctx)
	}
	// The viewer the token claims, not yet checked against its row: the
	// check reads through the loaders, in the context made here. A
	// provider's token has its account looked up now, on the primary.
	claim, err := auth.Viewer(ctx)
	if err != nil {
		claim = auth.Claim{}
	}
	switch op.Operation {
	case ast.Query:
		ctx = db.ReadFromReplica(ctx, claim.UserID)
	case ast.Mutation:
		ctx = db.WritesBy(ctx, claim.UserID)
	}
	return next(ctx)
}

// replicaMetrics collects, from the store's own counters at each scrape,
// the reads by where they were answered and each replica's lag.
type replicaMetrics struct {
	store *db.Store
	reads *prometheus.Desc
	lag   *prometheus.Desc
	up    *prometheus.Desc
}

func newReplicaMetrics(store *db.Store) *replicaMetrics {
	return &replicaMetrics{
		store: store,
		reads: prometheus.NewDesc("follows_db_reads_total",
			"SQL reads outside transactions, by target: primary, or the replica (replica1, replica2... in the order of -db-replica) that answered.",
			[]string{"target"}, nil),
		lag: prometheus.NewDesc("follows_db_replica_lag_seconds",
			"How old each replica's data was at its last probe (every 200ms), to within the probe's period.",
			[]string{"replica"}, nil),
		up: prometheus.NewDesc("follows_db_replica_in_use",
			"1 while a replica answers reads; 0 while it is down, failing, or further behind than -replica-max-lag.",
			[]string{"replica"}, nil),
	}
}

func (c *replicaMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.reads
	ch <- c.lag
	ch <- c.up
}

func (c *replicaMetrics) Collect(ch chan<- prometheus.Metric) {
	primary, replicas := c.store.ReplicaReads()
	ch <- prometheus.MustNewConstMetric(c.reads, prometheus.CounterValue, float64(primary), "primary")
	for _, r := range replicas {
		ch <- prometheus.MustNewConstMetric(c.reads, prometheus.CounterValue, float64(r.Reads), r.Name)
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, r.Lag.Seconds(), r.Name)
		up := 0.0
		if r.Usable {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, r.Name)
	}
}

// WatchReplicas has /metrics report the store's reads by target and its
// replicas' lag; a store without replicas adds nothing.
func (m *Metrics) WatchReplicas(store *db.Store) {
	if store.Replicas() > 0 {
		m.registry.MustRegister(newReplicaMetrics(store))
	}
}
