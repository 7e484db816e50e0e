package api

import (
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"follows/db"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are what GET /metrics serves, in Prometheus' format. Make them
// before the store and the handler, which both report to them.
type Metrics struct {
	registry   *prometheus.Registry
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	statements prometheus.Histogram
	batches    *prometheus.HistogramVec
	errors     *prometheus.CounterVec
	reloads    *prometheus.CounterVec

	// ops are the operation labels taken so far, each a name mapped to
	// the copy of it the labels keep.
	mu  sync.Mutex
	ops map[string]string
	// named, when not nil, are the only operation names that become
	// labels: the operator's list, which no client can fill.
	named map[string]string
}

// maxOperationLabels bounds the operation names kept as labels: clients
// choose the names, and an unbounded label set would grow without end.
const maxOperationLabels = 200

// maxLabelBytes bounds an operation label's length: a name can be as long
// as a request body, and every series and every scrape carries its label.
// Names longer than this are cut to it, so names that only differ after
// it share a label.
const maxLabelBytes = 100

// Labels of operations other than by their name: refusedLabel counts the
// requests refused before they ran (a document that does not parse or
// validate, or over a limit), whatever their operation's name;
// anonymousLabel operations without a name; otherLabel those whose name
// found no label.
const (
	refusedLabel   = "refused"
	anonymousLabel = "anonymous"
	otherLabel     = "other"
)

// NewMetrics makes the metrics, with the Go runtime's and the process's
// collectors, in a registry of their own. Given operation names (comma-
// separated, as -metrics-operations takes them), only those are labels
// and every other operation counts as "other"; without, the first 200
// names of accepted operations are, which a client sending valid
// operations under made-up names can use up before the real ones are
// first seen. Either way a label is at most 100 bytes of the name.
func NewMetrics(operations string) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "follows_graphql_requests_total", Help: "GraphQL operations, by operation name; refused for those refused before they ran.",
		}, []string{"operation"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "follows_graphql_request_duration_seconds", Help: "Time to answer a GraphQL operation, by operation name; refused for those refused before they ran.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"operation"}),
		statements: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "follows_sql_statement_duration_seconds", Help: "Time each SQL statement took; its count is the number of statements.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16),
		}),
		batches: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "follows_loader_batch_size", Help: "Keys a loader answered in one batched statement, by loader.",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 128},
		}, []string{"loader"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "follows_graphql_errors_total", Help: "Errors sent to clients, by extensions.code.",
		}, []string{"code"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "follows_trusted_documents_reloads_total", Help: "Reloads of the trusted documents on SIGHUP, by result: ok, or error when a manifest did not load and the documents in force stayed.",
		}, []string{"result"}),
		ops: map[string]string{},
	}
	if ops := list(operations); len(ops) > 0 {
		m.named = map[string]string{}
		for _, op := range ops {
			op = capLabel(op)
			m.named[op] = op
		}
	}
	m.registry.MustRegister(m.requests, m.latency, m.statements, m.batches, m.errors, m.reloads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) operation(name string, d time.Duration) {
	label := m.operationLabel(name)
	m.requests.WithLabelValues(label).Inc()
	m.latency.WithLabelValues(label).Observe(d.Seconds())
}

// trustedOperation counts an operation of a trusted document under its
// manifest's name: the operator's list, which no client can fill, so it
// takes none of the 200 labels of the names clients choose, and is a
// label whatever -metrics-operations lists. The name is the manifest's
// own string, not a piece of a request.
func (m *Metrics) trustedOperation(name string, d time.Duration) {
	label := capLabel(name)
	if label == "" {
		label = anonymousLabel
	}
	m.requests.WithLabelValues(label).Inc()
	m.latency.WithLabelValues(label).Observe(d.Seconds())
}

// operationLabel is the label that counts an operation named name: never
// name itself, which is a piece of its request's document (gqlparser's
// names are slices of the text they were parsed from), so that a label
// kept would keep the whole document alive with it, up to a megabyte for
// each of the 200. A label is a copy, made once, of at most
// maxLabelBytes of the name, or one of the labels of the server's own.
func (m *Metrics) operationLabel(name string) string {
	switch name = capLabel(name); name {
	case "", anonymousLabel:
		return anonymousLabel
	case refusedLabel:
		return refusedLabel
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.named != nil {
		if label, ok := m.named[name]; ok {
			return label
		}
		return otherLabel
	}
	if label, ok := m.ops[name]; ok {
		return label
	}
	if len(m.ops) >= maxOperationLabels {
		return otherLabel
	}
	label := strings.Clone(name)
	m.ops[label] = label
	return label
}

// capLabel is s cut to at most maxLabelBytes, at the start of a rune so
// that what is left is still valid UTF-8 (Prometheus refuses a label that
// is not). Operation names are ASCII, but a cut never splits a character
// of whatever it is given.
func capLabel(s string) string {
	if len(s) <= maxLabelBytes {
		return s
	}
	cut := maxLabelBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// WatchSuggestionMemory has the metrics read, at each scrape, what the
// store's suggestions keep in memory (db.Store.SuggestionMemory): the
// followees' lists and the candidates' names found held and those read,
// and how many are held, so that an operator can see the hit rate their
// viewers get.
func (m *Metrics) WatchSuggestionMemory(stats func() (lists, names db.HeldStats)) {
	m.registry.MustRegister(suggestionMemory(stats))
}

// suggestionMemory is the collector WatchSuggestionMemory registers: one
// read of the store's figures a scrape.
type suggestionMemory func() (lists, names db.HeldStats)

var suggestionMemoryDescs = func() (d [2]struct{ total, held *prometheus.Desc }) {
	for i, kind := range []struct{ name, what string }{{"lists", "Followees' follow lists"}, {"names", "Candidates' names"}} {
		d[i].total = prometheus.NewDesc("follows_suggestion_"+kind.name+"_total",
			kind.what+" suggestions needed, by result: hit when held in memory at the version the database has, miss when read.", []string{"result"}, nil)
		d[i].held = prometheus.NewDesc("follows_suggestion_"+kind.name+"_held", kind.what+" held in memory for suggestions.", nil, nil)
	}
	return d
}()

func (suggestionMemory) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range suggestionMemoryDescs {
		ch <- d.total
		ch <- d.held
	}
}

func (f suggestionMemory) Collect(ch chan<- prometheus.Metric) {
	lists, names := f()
	for i, h := range [2]db.HeldStats{lists, names} {
		d := suggestionMemoryDescs[i]
		ch <- prometheus.MustNewConstMetric(d.total, prometheus.CounterValue, float64(h.Hits), "hit")
		ch <- prometheus.MustNewConstMetric(d.total, prometheus.CounterValue, float64(h.Misses), "miss")
		ch <- prometheus.MustNewConstMetric(d.held, prometheus.GaugeValue, float64(h.Held))
	}
}

// Statement records one SQL statement's duration: the store's hook
// (db.WithStatementHook).
func (m *Metrics) Statement(d time.Duration) { m.statements.Observe(d.Seconds()) }

// Batch records the size of one loader batch: the resolvers' hook
// (resolvers.Resolver.OnBatch).
func (m *Metrics) Batch(loader string, keys int) {
	m.batches.WithLabelValues(loader).Observe(float64(keys))
}

func (m *Metrics) error(code string) { m.errors.WithLabelValues(code).Inc() }

// TrustedReload counts a reload of the trusted documents: failed, when
// err is not nil.
func (m *Metrics) TrustedReload(err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.reloads.WithLabelValues(result).Inc()
}
