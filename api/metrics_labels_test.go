package api

import (
	"fmt"
	"testing"
)

// labels reads how many requests each operation label counted.
func labels(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "follows_graphql_requests_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "operation" {
					out[l.GetValue()] = s.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// With -metrics-operations, valid operations under made-up names cannot
// take the labels: 300 of them before the real one is first seen leave it
// its label, and are counted as other. Without the list the first 200
// names take the labels (the default, which docs/production.md warns about).
func TestMetricsOperationsList(t *testing.T) {
	t.Parallel()
	junk := func(m *Metrics) {
		for i := range 300 {
			m.operation(fmt.Sprintf("Junk%d", i), 0)
		}
		m.operation("Profile", 0)
		m.operation("", 0)
		m.operation(refusedLabel, 0)
	}

	listed := NewMetrics("Profile, Fanout")
	junk(listed)
	got := labels(t, listed)
	if got["Profile"] != 1 || got["other"] != 300 || got["anonymous"] != 1 || got[refusedLabel] != 1 || len(got) != 4 {
		t.Errorf("with a list of operations, labels %v; want Profile 1, other 300, anonymous 1, refused 1", got)
	}

	first := NewMetrics("")
	junk(first)
	got = labels(t, first)
	if got["Profile"] != 0 || got["other"] != 103 {
		t.Errorf("without a list, labels Profile %v and other %v; want 0 and 103 (the first 200 names took the labels; Profile, anonymous and refused came after)", got["Profile"], got["other"])
	}
}
