package bench

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
)

// How cost grows: the create scenario by K and the state by N, as two
// tables and as SVG plots, all from the medians of the runs.

// createKs are the plugin counts of the create scenario, ascending.
func (b *bencher) createKs() []int {
	return slices.Sorted(maps.Keys(b.sz.createSeq))
}

// stateNs are the container counts of the sync and rss scenarios above
// zero, ascending.
func (b *bencher) stateNs() []int {
	var ns []int
	for _, n := range append(slices.Clone(b.sz.syncN), b.sz.rssN...) {
		if n > 0 && !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns
}

func createConfig(k int, mode string) string { return fmt.Sprintf("K=%d %s", k, mode) }

// med is the median of a metric, NaN when it was not measured.
func (r *results) med(k key, metric string) float64 {
	v, ok := r.median(k, metric)
	if !ok {
		return math.NaN()
	}
	return v
}

// cell formats a value, "-" when it was not measured.
func cell(v float64, format func(float64) string) string {
	if math.IsNaN(v) {
		return "-"
	}
	return format(v)
}

// withRatio is "value (ratio)", or the value alone when the ratio is not
// known.
func withRatio(v, base float64, format func(float64) string, ratio func(float64) string) string {
	s := cell(v, format)
	if math.IsNaN(v) || math.IsNaN(base) || base == 0 {
		return s
	}
	return fmt.Sprintf("%s (%s)", s, ratio(v/base))
}

func fmtRatio3(v float64) string { return fmt.Sprintf("%.3fx", v) }

// scalingReport prints the two "how cost grows" tables.
func (b *bencher) scalingReport(w io.Writer) {
	r := b.res
	var rows [][]string
	for _, k := range b.createKs() {
		row := []string{fmt.Sprintf("K=%d", k)}
		measured := false
		for _, m := range modes {
			c := key{scCreate, createConfig(k, m.name), sideClassic}
			g := key{scCreate, createConfig(k, m.name), sideGRPC}
			co, gOps := r.med(c, mOps), r.med(g, mOps)
			cc, gc := r.med(c, mCPU), r.med(g, mCPU)
			measured = measured || !math.IsNaN(co) || !math.IsNaN(gOps)
			row = append(row, cell(co, fmtRate), withRatio(gOps, co, fmtRate, fmtRatio),
				cell(cc, fmtDur), withRatio(gc, cc, fmtDur, fmtRatio))
		}
		if measured {
			rows = append(rows, row)
		}
	}
	if len(rows) > 0 {
		fmt.Fprintf(w, "\nhow cost grows — CreateContainer by K plugins (calls/s and CPU per call of all processes; nri-grpc's ratio to classic in parentheses)\n")
		head := []string{"K"}
		for _, m := range modes {
			head = append(head, m.name+" calls/s classic", "nri-grpc", m.name+" CPU/call classic", "nri-grpc")
		}
		printRows(w, head, rows)
	}

	rows = nil
	for _, n := range b.stateNs() {
		c := key{scSync, syncConfig(n), sideClassic}
		g := key{scSync, syncConfig(n), sideGRPC}
		rk := key{scRSS, syncConfig(n), "nrid"}
		st := r.med(g, mState)
		if math.IsNaN(st) {
			st = r.med(c, mState)
		}
		if math.IsNaN(st) {
			st = r.med(rk, mState)
		}
		ct, gt := r.med(c, mTime), r.med(g, mTime)
		cb, gb := r.med(c, mBytes), r.med(g, mBytes)
		rss := r.med(rk, mRSS)
		if math.IsNaN(ct) && math.IsNaN(gt) && math.IsNaN(rss) {
			continue
		}
		ratio := "-"
		if !math.IsNaN(rss) && !math.IsNaN(st) && st > 0 {
			ratio = fmtRatio(rss / st)
		}
		rows = append(rows, []string{
			syncConfig(n),
			cell(ct, fmtDur), withRatio(gt, ct, fmtDur, fmtRatio),
			withRatio(cb, st, fmtBytes, fmtRatio3), withRatio(gb, st, fmtBytes, fmtRatio3), cell(st, fmtBytes),
			cell(rss, fmtBytes), ratio,
		})
	}
	if len(rows) > 0 {
		fmt.Fprintf(w, "\nhow cost grows — state of N containers (sync: nri-grpc's time ratio to classic, bytes' ratio to the state; nrid RSS from the rss scenario)\n")
		printRows(w, []string{"N", "sync time classic", "nri-grpc", "bytes classic", "nri-grpc", "state", "nrid RSS", "RSS/state"}, rows)
	}
}

// printRows prints a table: the first column left-aligned, the others
// right-aligned.
func printRows(w io.Writer, head []string, rows [][]string) {
	fw := len([]rune(head[0]))
	for _, r := range rows {
		fw = max(fw, len([]rune(r[0])))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells []string) {
		cells = slices.Clone(cells)
		cells[0] = cells[0] + strings.Repeat(" ", fw-len([]rune(cells[0])))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	line(head)
	for _, r := range rows {
		line(r)
	}
	_ = tw.Flush() // report output, like the fmt.Fprint* calls above
}

// Plot colors: one per side, seq solid and conc16 dashed.
const (
	colorClassic = "#d62728"
	colorGRPC    = "#1f77b4"
	colorState   = "#2ca02c"
	colorLimit   = "#7f7f7f"
)

const mb = 1 << 20

// plots are the SVG files of the run, by file name; scenarios that did not
// run give no file.
func (b *bencher) plots() map[string]*plot {
	r := b.res
	out := map[string]*plot{}
	ks := b.createKs()
	var kx []float64
	for _, k := range ks {
		kx = append(kx, float64(k))
	}
	createSeries := func(metric string, scale float64) []series {
		var ss []series
		for _, m := range modes {
			for _, side := range []string{sideClassic, sideGRPC} {
				s := series{name: side + " " + m.name, x: kx, color: colorClassic, dashed: m.name != "seq"}
				if side == sideGRPC {
					s.color = colorGRPC
				}
				for _, k := range ks {
					s.y = append(s.y, r.med(key{scCreate, createConfig(k, m.name), side}, metric)*scale)
				}
				ss = append(ss, s)
			}
		}
		return ss
	}
	kAxis := axis{label: "plugins subscribed to CreateContainer (K)", ticks: kx, fmt: fmtSI}
	if len(r.keys(scCreate)) > 0 {
		out["create-calls.svg"] = &plot{
			title:  "CreateContainer calls/s by number of plugins (median of runs)",
			x:      kAxis,
			y:      axis{label: "calls/s", log: true, fmt: fmtSI},
			series: createSeries(mOps, 1),
		}
		out["create-cpu.svg"] = &plot{
			title:  "CPU per CreateContainer, all processes (median of runs)",
			x:      kAxis,
			y:      axis{label: "CPU per call", log: true, fmt: fmtSeconds},
			series: createSeries(mCPU, 1),
		}
	}

	var syncNs []int
	for _, n := range b.sz.syncN {
		if n > 0 {
			syncNs = append(syncNs, n)
		}
	}
	slices.Sort(syncNs)
	var nx []float64
	for _, n := range syncNs {
		nx = append(nx, float64(n))
	}
	nAxis := axis{label: "existing containers (N)", log: true, fmt: fmtSI}
	syncSide := func(side, color, metric string, scale float64) series {
		s := series{name: side, x: nx, color: color}
		for _, n := range syncNs {
			s.y = append(s.y, r.med(key{scSync, syncConfig(n), side}, metric)*scale)
		}
		return s
	}
	if len(r.keys(scSync)) > 0 {
		out["sync-time.svg"] = &plot{
			title:  "Synchronization time of a new plugin by state size (median of runs)",
			x:      nAxis,
			y:      axis{label: "time until synchronized", log: true, fmt: fmtSeconds},
			series: []series{syncSide(sideClassic, colorClassic, mTime, 1), syncSide(sideGRPC, colorGRPC, mTime, 1)},
		}
		st := syncSide(sideGRPC, colorState, mState, 1.0/mb)
		st.name, st.band = "state (encoded)", true
		out["sync-bytes.svg"] = &plot{
			title:  "Synchronize bytes encoded by the runtime by state size (median of runs)",
			x:      nAxis,
			y:      axis{label: "bytes encoded (MB)", log: true, fmt: fmtSI},
			series: []series{st, syncSide(sideClassic, colorClassic, mBytes, 1.0/mb), syncSide(sideGRPC, colorGRPC, mBytes, 1.0/mb)},
		}
	}

	if len(r.keys(scRSS)) > 0 {
		rssNs := slices.Sorted(slices.Values(b.sz.rssN))
		rss := series{name: "nrid VmRSS", color: colorGRPC}
		st := series{name: "state (encoded)", color: colorState, band: true}
		two := series{name: "2x state (target at 10k)", color: colorLimit, dashed: true}
		for _, n := range rssNs {
			k := key{scRSS, syncConfig(n), "nrid"}
			x := float64(n)
			s := r.med(k, mState) / mb
			rss.x, rss.y = append(rss.x, x), append(rss.y, r.med(k, mRSS)/mb)
			st.x, st.y = append(st.x, x), append(st.y, s)
			two.x, two.y = append(two.x, x), append(two.y, 2*s)
		}
		out["rss.svg"] = &plot{
			title:  "nrid resident memory by containers in its state (median of runs)",
			x:      axis{label: "containers in the runtime's state (N)", fmt: fmtSI},
			y:      axis{label: "MB", fmt: fmtSI},
			series: []series{rss, st, two},
		}
	}
	return out
}

// writePlots writes the plots to dir and returns the files written.
func (b *bencher) writePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ps := b.plots()
	var files []string
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, ps[name].svg(), 0o644); err != nil {
			return files, err
		}
		files = append(files, f)
	}
	return files, nil
}
