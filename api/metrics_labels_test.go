package api

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
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
// names take the labels (the default, which docs/production.md warns about);
// anonymous and refused operations keep theirs, which no name can take.
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
	if got["Profile"] != 0 || got["other"] != 101 || got["anonymous"] != 1 || got[refusedLabel] != 1 || len(got) != 203 {
		t.Errorf("without a list, labels Profile %v, other %v, anonymous %v, refused %v, %d labels; want 0, 101, 1, 1 and 203 (the first 200 names took the labels; Profile came after; anonymous and refused are always labels)",
			got["Profile"], got["other"], got["anonymous"], got[refusedLabel], len(got))
	}
}

// Issue 27, finding 5: an operation's name is a piece of its document, as
// the parser cuts it, and the labels kept it: each label kept its whole
// document alive (120 documents of 900 KB kept 92 MB). No label, and no
// name the metrics remember, may share memory with the document, whether
// it took a label, counted as other, or was on the operator's list.
func TestMetricsLabelsKeepNoDocument(t *testing.T) {
	t.Parallel()
	var text strings.Builder
	for i := range 250 {
		fmt.Fprintf(&text, "query Op%d { __typename }\n", i)
	}
	text.WriteString("query Profile { __typename }\n# " + strings.Repeat("x", 1<<20))
	doc, err := parser.ParseQuery(&ast.Source{Input: text.String()})
	if err != nil {
		t.Fatal(err)
	}
	start := uintptr(unsafe.Pointer(unsafe.StringData(text.String())))
	end := start + uintptr(text.Len())
	inDocument := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return len(s) > 0 && p >= start && p < end
	}
	if !inDocument(doc.Operations[0].Name) {
		t.Fatal("the parser's names are no longer pieces of the document; this test no longer shows anything")
	}

	for _, c := range []struct {
		m     *Metrics
		other float64
	}{
		{NewMetrics(""), 51},             // 200 names take labels, 51 come after
		{NewMetrics("Profile,Op3"), 249}, // two are listed
	} {
		m := c.m
		for _, op := range doc.Operations {
			m.operation(op.Name, 0)
		}
		got := labels(t, m)
		var pieces []string
		for label := range got {
			if inDocument(label) {
				pieces = append(pieces, label)
			}
		}
		for name := range m.ops { // each the label it maps to
			if inDocument(name) {
				pieces = append(pieces, name)
			}
		}
		if len(pieces) > 0 {
			t.Errorf("%d labels and names remembered are pieces of their 1 MB document, which they keep alive, such as %q", len(pieces), pieces[:min(len(pieces), 5)])
		}
		if got["Op3"] != 1 || got["other"] != c.other {
			t.Errorf("labels Op3 %v and other %v; want 1 and %v", got["Op3"], got["other"], c.other)
		}
	}
}

// A name can be as long as a request body: a label keeps at most 100
// bytes of it, cut where a character starts, so that names differing only
// after that share a label, and one label holds however long a name is.
func TestMetricsLabelsCapped(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 10_000)
	// 99 bytes, then two-byte characters: byte 100 is the middle of one.
	wide := strings.Repeat("b", 99) + strings.Repeat("é", 50)

	m := NewMetrics("")
	m.operation(long, 0)
	m.operation(long+"x", 0)
	m.operation(wide, 0)
	got := labels(t, m)
	if got[long[:labelBytes]] != 2 {
		t.Errorf("labels %v; want %q... counted twice", keys(got), long[:20])
	}
	if got[wide[:99]] != 1 {
		t.Errorf("labels %v; want the name cut to its first 99 bytes, where its first é starts", keys(got))
	}
	for label := range got {
		if len(label) > labelBytes || !utf8.ValidString(label) {
			t.Errorf("label of %d bytes (valid UTF-8: %v); want at most %d bytes of UTF-8", len(label), utf8.ValidString(label), labelBytes)
		}
	}

	// The operator's list is cut the same way, so that its long names
	// still find their label.
	listed := NewMetrics(long)
	listed.operation(long, 0)
	if got := labels(t, listed); got[long[:labelBytes]] != 1 || len(got) != 1 {
		t.Errorf("with the long name listed, labels %v; want its first 100 bytes, once", keys(got))
	}
}

// labelBytes is how much of a name a label keeps.
const labelBytes = 100

// keys are a label set's labels, each shortened for a message.
func keys(labels map[string]float64) []string {
	var out []string
	for l := range labels {
		out = append(out, fmt.Sprintf("%.20q(%d bytes)", l, len(l)))
	}
	return out
}
