package main

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// runChart reads the results of a side-by-side run of ../shared/peer-bench
// (the JSON lines its follows/run.sh writes) and draws, as an SVG bar
// chart, how many times PostGraphile's req/s this server served on each
// query at each concurrency: the median over repetitions of each side,
// divided. A line marks 1x (even) and a short line over a query its
// target, so that a reader sees at a glance where it stands.
//
//	go run ./bench chart -in results.jsonl -out chart.svg
func runChart(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench chart", flag.ContinueOnError)
	in := fs.String("in", "", "results JSON lines of a peer-bench run (logs/results-*.jsonl or last-run.jsonl)")
	out := fs.String("out", "", "SVG file to write (default: standard output)")
	size := fs.String("size", "", "graph size to draw, when the run measured several (default: large if present)")
	title := fs.String("title", "", "title above the chart (default: says what is drawn, with the run's build and load average)")
	targets := fs.String("targets", defaultTargets, "query=ratio,... the ratio each query should reach, drawn over its bars")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *in == "" {
		return errors.New("chart: give -in")
	}
	f, err := os.Open(*in)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	defer f.Close()
	run, err := readRun(f)
	if err != nil {
		return fmt.Errorf("chart: %s: %w", *in, err)
	}
	tg, err := parseTargets(*targets)
	if err != nil {
		return fmt.Errorf("chart: -targets: %w", err)
	}
	c, err := run.chart(*size, tg)
	if err != nil {
		return fmt.Errorf("chart: %s: %w", *in, err)
	}
	if *title != "" {
		c.Title = *title
	}
	svg := c.svg()
	if *out == "" {
		_, err = io.WriteString(stdout, svg)
		return err
	}
	if err := os.WriteFile(*out, []byte(svg), 0o644); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s: %d queries, concurrency %v\n", *out, len(c.Queries), c.Concs)
	return nil
}

// defaultTargets are issue 15's: Q1 at least 3x PostGraphile, Q2 1.5x,
// Q4 2x; the others are to stay ahead, above the even line.
// (A target at or below 1x is the even line itself and is not drawn.)
const defaultTargets = "q1_profile=3,q2_fanout=1.5,q4_suggestions=2"

// queryLabels are the harness's query names as docs/benchmarks.md calls them.
var queryLabels = map[string]string{
	"q1_profile":            "Q1 profile",
	"q1c_profile_celebrity": "Q1 most followed",
	"q2_fanout":             "Q2 fan-out",
	"q3_deep_page":          "Q3 deep page",
	"q4_suggestions":        "Q4 suggestions",
	"q5_mutual":             "Q5 mutual",
}

func parseTargets(s string) (map[string]float64, error) {
	tg := map[string]float64{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		q, v, ok := strings.Cut(kv, "=")
		r, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || r <= 0 {
			return nil, fmt.Errorf("%q is not query=ratio", kv)
		}
		tg[q] = r
	}
	return tg, nil
}

// peerResult is one line of a peer-bench results file; kind says which
// fields it has: "wrk" a measured run of one server on one query,
// "build" what was measured, "uptime" the load average at a point.
type peerResult struct {
	Kind   string  `json:"kind"`
	Server string  `json:"server"`
	Size   string  `json:"size"`
	Query  string  `json:"query"`
	Conc   int     `json:"conc"`
	Rep    int     `json:"rep"`
	RPS    float64 `json:"rps"`
	Load   float64 `json:"load_before"`
	Rev    string  `json:"rev"`
	Host   string  `json:"host"`
	Loader string  `json:"loader"`
	What   string  `json:"what"`
}

// peerRun is what a chart needs of a results file.
type peerRun struct {
	// rps are the req/s of each repetition, by size, query, concurrency
	// and server.
	rps   map[runKey][]float64
	order []string // queries in the order the run measured them
	sizes []string
	loads []float64
	build peerResult
	// store is the database this server ran on, as its import says.
	store string
}

type runKey struct {
	size, query string
	conc        int
	server      string
}

// readRun reads a results file, line by line; lines of other kinds are
// skipped, and a line that is not JSON is an error naming it.
func readRun(r io.Reader) (*peerRun, error) {
	run := &peerRun{rps: map[runKey][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var res peerResult
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		switch res.Kind {
		case "build":
			run.build = res
		case "import":
			if res.Loader == "follows import" {
				run.store = "SQLite"
				if strings.Contains(res.What, "PostgreSQL") {
					run.store = "PostgreSQL"
				}
			}
		case "wrk":
			k := runKey{res.Size, res.Query, res.Conc, res.Server}
			run.rps[k] = append(run.rps[k], res.RPS)
			if !slices.Contains(run.order, res.Query) {
				run.order = append(run.order, res.Query)
			}
			if !slices.Contains(run.sizes, res.Size) {
				run.sizes = append(run.sizes, res.Size)
			}
			run.loads = append(run.loads, res.Load)
		}
	}
	return run, sc.Err()
}

// chart is a bar chart of ratios: for each query, a bar per concurrency.
type chart struct {
	Title    string
	Subtitle string
	Concs    []int
	Queries  []chartQuery
}

type chartQuery struct {
	Name, Label string
	// Ratios are by Concs; NaN where either side was not measured.
	Ratios []float64
	Target float64 // 0 for none
}

// chart makes the chart of one size: the one named, or large when the
// run has it, or the only one.
func (run *peerRun) chart(size string, targets map[string]float64) (*chart, error) {
	if len(run.sizes) == 0 {
		return nil, errors.New("no wrk results in it")
	}
	if size == "" {
		size = run.sizes[0]
		if slices.Contains(run.sizes, "large") {
			size = "large"
		}
	}
	if !slices.Contains(run.sizes, size) {
		return nil, fmt.Errorf("no results for size %q (it has %v)", size, run.sizes)
	}
	c := &chart{}
	for k := range run.rps {
		if k.size == size && !slices.Contains(c.Concs, k.conc) {
			c.Concs = append(c.Concs, k.conc)
		}
	}
	slices.Sort(c.Concs)
	reps := 0
	for _, q := range run.order {
		cq := chartQuery{Name: q, Label: queryLabels[q], Target: targets[q]}
		if cq.Label == "" {
			cq.Label = q
		}
		measured := false
		for _, conc := range c.Concs {
			ours := run.rps[runKey{size, q, conc, "follows"}]
			theirs := run.rps[runKey{size, q, conc, "postgraphile"}]
			reps = max(reps, len(ours), len(theirs))
			r := math.NaN()
			if len(ours) > 0 && len(theirs) > 0 && median(theirs) > 0 {
				r = median(ours) / median(theirs)
				measured = true
			}
			cq.Ratios = append(cq.Ratios, r)
		}
		if measured {
			c.Queries = append(c.Queries, cq)
		}
	}
	if len(c.Queries) == 0 {
		return nil, fmt.Errorf("no query of size %q was measured on both servers", size)
	}
	c.Title = fmt.Sprintf("follows ÷ PostGraphile, requests per second (%s graph)", size)
	var sub []string
	if run.build.Rev != "" {
		sub = append(sub, "follows "+run.build.Rev)
	}
	if run.store != "" {
		sub = append(sub, "follows on "+run.store)
	}
	if run.build.Host != "" {
		sub = append(sub, run.build.Host)
	}
	sub = append(sub, fmt.Sprintf("median of %d rep%s each", reps, plural(reps)))
	if len(run.loads) > 0 {
		sub = append(sub, fmt.Sprintf("load average %.1f–%.1f", slices.Min(run.loads), slices.Max(run.loads)))
	}
	c.Subtitle = strings.Join(sub, " · ")
	return c, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// barColors are the bars' fills by concurrency, in order: colours that
// stay apart for the common kinds of colour blindness.
var barColors = []string{"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1"}

// svg draws the chart: bars with their ratios written above them, a
// dashed line at 1x, a red line over each query at its target, and a
// legend of concurrencies.
func (c *chart) svg() string {
	const (
		left, right, top, bottom = 64, 24, 78, 70
		groupW, barGap           = 128, 4
		plotH                    = 320
	)
	barW := (groupW - 28 - barGap*(len(c.Concs)-1)) / len(c.Concs)
	width := left + right + groupW*len(c.Queries)
	height := top + plotH + bottom

	// The y axis reaches past the highest bar and target, in steps that
	// make round gridlines.
	hi := 1.0
	for _, q := range c.Queries {
		hi = max(hi, q.Target)
		for _, r := range q.Ratios {
			if !math.IsNaN(r) {
				hi = max(hi, r)
			}
		}
	}
	step := 0.5
	for _, s := range []float64{0.5, 1, 2, 5, 10, 20, 50} {
		step = s
		if hi*1.1/s <= 8 {
			break
		}
	}
	yMax := math.Ceil(hi*1.1/step) * step
	y := func(v float64) float64 { return top + plotH - v/yMax*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="13">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", left, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="44" fill="#555555">%s</text>`+"\n", left, esc(c.Subtitle))

	// Gridlines and the y axis's labels.
	for v := 0.0; v <= yMax+1e-9; v += step {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, width-right, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555555">%s×</text>`+"\n", left-8, y(v)+4, fmtRatio(v))
	}
	fmt.Fprintf(&b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle" fill="#555555">follows req/s ÷ PostGraphile req/s</text>`+"\n", top+plotH/2)

	// Labels are written after the even line, so that it does not cross
	// them.
	var labels strings.Builder
	for i, q := range c.Queries {
		x0 := left + groupW*i + 14
		for j, r := range q.Ratios {
			x := x0 + j*(barW+barGap)
			if math.IsNaN(r) {
				fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="middle" fill="#888888">n/a</text>`+"\n", x+barW/2, y(0)-6)
				continue
			}
			fmt.Fprintf(&b, `<rect class="bar" x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s, c=%d: %s×</title></rect>`+"\n",
				x, y(r), barW, y(0)-y(r), barColors[j%len(barColors)], esc(q.Label), c.Concs[j], fmtRatio(r))
			fmt.Fprintf(&labels, `<text x="%d" y="%.1f" text-anchor="middle" font-size="12" stroke="#ffffff" stroke-width="3" paint-order="stroke">%s×</text>`+"\n", x+barW/2, y(r)-5, fmtRatio(r))
		}
		if q.Target > 1 {
			fmt.Fprintf(&b, `<line class="target" x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#d62728" stroke-width="2.5"/>`+"\n", x0-6, x0+groupW-22, y(q.Target), y(q.Target))
			fmt.Fprintf(&labels, `<text x="%d" y="%.1f" text-anchor="end" font-size="11" fill="#d62728" stroke="#ffffff" stroke-width="3" paint-order="stroke">target %s×</text>`+"\n", x0+groupW-22, y(q.Target)-4, fmtRatio(q.Target))
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", left+groupW*i+groupW/2, top+plotH+20, esc(q.Label))
	}
	// Even, over the bars so that it shows where a bar crosses it.
	fmt.Fprintf(&b, `<line class="even" x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#222222" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", left, width-right, y(1), y(1))
	b.WriteString(labels.String())
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#222222"/>`+"\n", left, width-right, top+plotH, top+plotH)

	// Legend, under the query names.
	lx := left
	ly := top + plotH + 46
	for j, conc := range c.Concs {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="14" fill="%s"/><text x="%d" y="%d">%d concurrent</text>`+"\n", lx, ly-11, barColors[j%len(barColors)], lx+20, ly, conc)
		lx += 130
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#222222" stroke-width="1.5" stroke-dasharray="6 4"/><text x="%d" y="%d">1× (even)</text>`+"\n", lx, lx+24, ly-4, ly-4, lx+30, ly)
	lx += 110
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#d62728" stroke-width="2.5"/><text x="%d" y="%d">target (the others: above 1×)</text>`+"\n", lx, lx+24, ly-4, ly-4, lx+30, ly)
	b.WriteString("</svg>\n")
	return b.String()
}

// fmtRatio writes a ratio with two decimals, or fewer where they are
// zeros: 1.5, 2, 0.43.
func fmtRatio(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
