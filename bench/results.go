package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// key names one row of results: a scenario's configuration on one side.
type key struct{ scenario, config, side string }

// results holds every run's metrics.
type results struct {
	order []key
	vals  map[key]map[string][]float64
}

func newResults() *results { return &results{vals: map[key]map[string][]float64{}} }

func (r *results) add(k key, metric string, v float64) {
	m := r.vals[k]
	if m == nil {
		m = map[string][]float64{}
		r.vals[k] = m
		r.order = append(r.order, k)
	}
	m[metric] = append(m[metric], v)
}

// Metric names.
const (
	mOps   = "ops/s"
	mP50   = "p50"
	mP99   = "p99"
	mCPU   = "cpu/op"
	mCPURt = "runtime cpu/op"
	mCS    = "ctxsw/op"
	mTime  = "time"
	mBytes = "bytes"
	mState = "state"
	mSCPU  = "cpu"
	mRSS   = "rss"
	mHWM   = "hwm"
	mHeap  = "heap"
	mLive  = "live"
)

// window records a measured window's metrics.
func (r *results) window(k key, w window) {
	r.add(k, mOps, w.opsPerSec())
	r.add(k, mP50, w.pct(0.50).Seconds())
	r.add(k, mP99, w.pct(0.99).Seconds())
	r.add(k, mCPU, w.cpuPerOp().Seconds())
	r.add(k, mCPURt, w.selfPerOp().Seconds())
	r.add(k, mCS, float64(w.cs)/float64(max(w.ops, 1)))
}

// median returns the median of a metric over the runs.
func (r *results) median(k key, metric string) (float64, bool) {
	v := r.vals[k][metric]
	if len(v) == 0 {
		return 0, false
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

func (r *results) spread(k key, metric string) (lo, hi float64, n int) {
	v := r.vals[k][metric]
	if len(v) == 0 {
		return 0, 0, 0
	}
	return slices.Min(v), slices.Max(v), len(v)
}

// ratio is median(side)/median(base) of a metric for one configuration.
func (r *results) ratio(scenario, config, side, base, metric string) (float64, bool) {
	a, ok1 := r.median(key{scenario, config, side}, metric)
	b, ok2 := r.median(key{scenario, config, base}, metric)
	if !ok1 || !ok2 || b == 0 {
		return math.NaN(), false
	}
	return a / b, true
}

func (r *results) keys(scenario string) []key {
	var out []key
	for _, k := range r.order {
		if k.scenario == scenario {
			out = append(out, k)
		}
	}
	return out
}

// Formatting.

func fmtDur(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%dµs", d.Microseconds())
	}
}

func fmtRate(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtBytes(v float64) string {
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MB", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f kB", v/(1<<10))
	}
	return fmt.Sprintf("%.0f B", v)
}

func fmtRatio(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	if v >= 10 {
		return fmt.Sprintf("%.1fx", v)
	}
	return fmt.Sprintf("%.2fx", v)
}

// column is one column of a table.
type column struct {
	head   string
	metric string
	format func(float64) string
	spread bool // show min..max over the runs
}

// table prints the rows of a scenario; ratio, when set, adds a last column
// headed ratioHead (ratios against another row, or of two metrics).
func (r *results) table(w io.Writer, scenario, title string, cols []column, ratioHead string, ratio func(k key) string) {
	keys := r.keys(scenario)
	if len(keys) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"config", "side"}
	for _, c := range cols {
		head = append(head, c.head)
	}
	if ratio != nil {
		head = append(head, ratioHead)
	}
	// Left-align the two first columns by padding them ourselves.
	cw, sw := len("config"), len("side")
	for _, k := range keys {
		cw = max(cw, len([]rune(k.config)))
		sw = max(sw, len([]rune(k.side)))
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-len([]rune(s))) }
	line := func(cells []string) {
		cells[0], cells[1] = pad(cells[0], cw), pad(cells[1], sw)
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	line(head)
	for _, k := range keys {
		cells := []string{k.config, k.side}
		for _, c := range cols {
			v, ok := r.median(k, c.metric)
			if !ok {
				cells = append(cells, "-")
				continue
			}
			s := c.format(v)
			if lo, hi, n := r.spread(k, c.metric); c.spread && n > 1 {
				s += fmt.Sprintf(" (%s..%s)", c.format(lo), c.format(hi))
			}
			cells = append(cells, s)
		}
		if ratio != nil {
			cells = append(cells, ratio(k))
		}
		line(cells)
	}
	_ = tw.Flush() // report output, like the fmt.Fprint* calls above
}
