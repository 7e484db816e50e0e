package main

import (
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sample is lines of a real peer-bench run (follows on PostgreSQL),
// two queries of six, to which q4_suggestions at c=8 got two more
// repetitions per server, edited copies, so that the median and the mean
// of the three differ.
const sample = "testdata/peer-bench-sample.jsonl"

// The chart's bars are follows' median req/s over PostGraphile's, per
// query and concurrency, in the order the run measured them.
func TestChartRatiosAreMediansDivided(t *testing.T) {
	f, err := os.Open(sample)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run, err := readRun(f)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := parseTargets(defaultTargets)
	if err != nil {
		t.Fatal(err)
	}
	c, err := run.chart("", tg)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Concs) != 2 || c.Concs[0] != 8 || c.Concs[1] != 32 {
		t.Fatalf("concurrencies %v, want [8 32]", c.Concs)
	}
	want := []struct {
		name   string
		ratios []float64
		target float64
	}{
		{"q1_profile", []float64{2082.74 / 1613.99, 1556.84 / 1450.94}, 3},
		// medians of three: follows 1005.81 (of 502.9, 1005.81,
		// 1206.97), PostGraphile 1108.89 (of 665.33, 1108.89, 1663.34)
		{"q4_suggestions", []float64{1005.81 / 1108.89, 930.96 / 1183.9}, 2},
	}
	if len(c.Queries) != len(want) {
		t.Fatalf("%d queries, want %d", len(c.Queries), len(want))
	}
	for i, w := range want {
		q := c.Queries[i]
		if q.Name != w.name || q.Target != w.target {
			t.Errorf("query %d: %s target %v, want %s target %v", i, q.Name, q.Target, w.name, w.target)
		}
		for j, r := range w.ratios {
			if math.Abs(q.Ratios[j]-r) > 1e-9 {
				t.Errorf("%s c=%d: ratio %.4f, want %.4f", q.Name, c.Concs[j], q.Ratios[j], r)
			}
		}
	}
	if !strings.Contains(c.Subtitle, "follows on PostgreSQL") || !strings.Contains(c.Subtitle, "median of 3 reps") {
		t.Errorf("subtitle %q does not say where follows ran and over how many repetitions", c.Subtitle)
	}
}

// bench chart writes an SVG that parses as XML and has a bar per query
// and concurrency, labelled with its ratio, the even line, and a target
// line for each query whose target is above even.
func TestChartWritesSVG(t *testing.T) {
	out := filepath.Join(t.TempDir(), "chart.svg")
	if err := runChart([]string{"-in", sample, "-out", out}, io.Discard); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	var texts []string
	dec := xml.NewDecoder(strings.NewReader(string(data)))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, data)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			for _, a := range tok.Attr {
				if a.Name.Local == "class" {
					counts[a.Value]++
				}
			}
		case xml.CharData:
			texts = append(texts, string(tok))
		}
	}
	if counts["bar"] != 4 || counts["even"] != 1 || counts["target"] != 2 {
		t.Errorf("bars %d, even lines %d, target lines %d; want 4, 1, 2", counts["bar"], counts["even"], counts["target"])
	}
	all := strings.Join(texts, "\n")
	for _, s := range []string{"Q1 profile", "Q4 suggestions", "1.29×", "0.91×", "target 3×", "target 2×", "8 concurrent", "32 concurrent"} {
		if !strings.Contains(all, s) {
			t.Errorf("no text %q in the chart", s)
		}
	}
}

// A file without any measured run is refused with a reason, not drawn
// empty.
func TestChartRefusesRunsWithoutResults(t *testing.T) {
	in := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(in, []byte(`{"kind":"build","rev":"abc"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runChart([]string{"-in", in, "-out", filepath.Join(t.TempDir(), "x.svg")}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no wrk results") {
		t.Errorf("err = %v, want one saying there are no results", err)
	}
}
