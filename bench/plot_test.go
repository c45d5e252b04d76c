package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// svgDoc is what the tests read back from an SVG: the root's attributes,
// the plot area, the points, the polylines' points and the tick labels.
type svgDoc struct {
	root       map[string]string
	area       [4]float64 // x, y, width, height
	points     [][2]float64
	lines      [][2]float64
	xticks     []string
	yticks     []string
	legend     []string
	hasArea    bool
	elements   int
	rootIsSVG  bool
	namespaces []string
}

func attrs(se xml.StartElement) map[string]string {
	m := map[string]string{}
	for _, a := range se.Attr {
		name := a.Name.Local
		if a.Name.Space == "xmlns" || (a.Name.Space == "" && name == "xmlns") {
			name = "xmlns"
		}
		m[name] = a.Value
	}
	return m
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// parseSVG decodes an SVG strictly with encoding/xml.
func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	var d svgDoc
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	var text *[]string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("invalid XML: %v\n%s", err, b)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			d.elements++
			a := attrs(tok)
			text = nil
			if d.elements == 1 {
				d.rootIsSVG = tok.Name.Local == "svg"
				d.root = a
			}
			d.namespaces = append(d.namespaces, tok.Name.Space)
			switch {
			case tok.Name.Local == "rect" && a["class"] == "plot-area":
				d.hasArea = true
				d.area = [4]float64{num(t, a["x"]), num(t, a["y"]), num(t, a["width"]), num(t, a["height"])}
			case tok.Name.Local == "circle" && a["class"] == "point":
				d.points = append(d.points, [2]float64{num(t, a["cx"]), num(t, a["cy"])})
			case tok.Name.Local == "polyline":
				for _, p := range strings.Fields(a["points"]) {
					x, y, ok := strings.Cut(p, ",")
					if !ok {
						t.Fatalf("polyline point %q", p)
					}
					d.lines = append(d.lines, [2]float64{num(t, x), num(t, y)})
				}
			case tok.Name.Local == "text" && a["class"] == "xtick":
				text = &d.xticks
			case tok.Name.Local == "text" && a["class"] == "ytick":
				text = &d.yticks
			case tok.Name.Local == "text" && a["class"] == "legend":
				text = &d.legend
			}
		case xml.CharData:
			if text != nil {
				*text = append(*text, string(tok))
				text = nil
			}
		}
	}
	return d
}

// checkSVG checks what every plot must be: SVG 1.1 with its namespace,
// size and viewBox, sans-serif, and every point inside the plot area.
func checkSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	d := parseSVG(t, b)
	if !d.rootIsSVG {
		t.Fatal("the root element is not svg")
	}
	for attr, want := range map[string]string{
		"xmlns": "http://www.w3.org/2000/svg", "version": "1.1", "font-family": "sans-serif",
		"width": strconv.Itoa(plotW), "height": strconv.Itoa(plotH), "viewBox": "0 0 760 440",
	} {
		if got := d.root[attr]; got != want {
			t.Errorf("svg %s = %q, want %q", attr, got, want)
		}
	}
	for _, ns := range d.namespaces {
		if ns != "http://www.w3.org/2000/svg" {
			t.Errorf("element in namespace %q", ns)
		}
	}
	if !d.hasArea {
		t.Fatal("no plot area")
	}
	x0, y0, x1, y1 := d.area[0], d.area[1], d.area[0]+d.area[2], d.area[1]+d.area[3]
	for _, p := range slices.Concat(d.points, d.lines) {
		if p[0] < x0 || p[0] > x1 || p[1] < y0 || p[1] > y1 {
			t.Errorf("point %v outside the plot area %v..%v", p, [2]float64{x0, y0}, [2]float64{x1, y1})
		}
	}
	return d
}

func TestPlotSVG(t *testing.T) {
	p := &plot{
		title: `sync <time> & "bytes"`,
		x:     axis{label: "N", log: true, fmt: fmtSI},
		y:     axis{label: "time", log: true, fmt: fmtSeconds},
		series: []series{
			{name: "classic", x: []float64{100, 1000, 10000, 50000}, y: []float64{0.008, 0.074, 0.69, 3.9}, color: colorClassic},
			// A NaN (not measured) and a zero (not on a log axis) are left out.
			{name: "nri-grpc", x: []float64{100, 1000, 10000, 50000}, y: []float64{0.0067, math.NaN(), 0.24, 0}, color: colorGRPC, dashed: true},
			{name: "one point", x: []float64{0, 3000}, y: []float64{1, 0.01}, color: colorState},
		},
	}
	d := checkSVG(t, p.svg())
	if len(d.points) != 4+2+1 {
		t.Errorf("%d points drawn, want 7 (the NaN and the zeros left out)", len(d.points))
	}
	if len(d.lines) != 4+2 { // a series of one point has no line
		t.Errorf("%d line points, want 6", len(d.lines))
	}
	if want := []string{"100", "1k", "10k", "100k"}; !slices.Equal(d.xticks, want) {
		t.Errorf("x ticks %q, want %q", d.xticks, want)
	}
	if want := []string{"1ms", "10ms", "100ms", "1s", "10s"}; !slices.Equal(d.yticks, want) {
		t.Errorf("y ticks %q, want %q", d.yticks, want)
	}
	if want := []string{"classic", "nri-grpc", "one point"}; !slices.Equal(d.legend, want) {
		t.Errorf("legend %q, want %q", d.legend, want)
	}
	// Log scale: 1000 is a third of the way from 100 to 100k, 10k two thirds.
	s := newScale(p.x, []float64{100, 50000}, 0, 300)
	for v, want := range map[float64]float64{100: 0, 1000: 100, 10000: 200, 100000: 300, 50000: 300 + 100*math.Log10(0.5)} {
		if got := s.pos(v); math.Abs(got-want) > 1e-9 {
			t.Errorf("pos(%g) = %g, want %g", v, got, want)
		}
	}
}

func TestLogTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []float64
	}{
		{2, 5, []float64{100, 1000, 10000, 100000}},
		{-5, -2, []float64{1e-5, 1e-4, 1e-3, 1e-2}},
		// Over two decades or less, 2 and 5 times the powers too.
		{2, 4, []float64{100, 200, 500, 1000, 2000, 5000, 10000}},
		{0, 1, []float64{1, 2, 5, 10}},
	} {
		got := logTicks(c.lo, c.hi)
		if len(got) != len(c.want) {
			t.Errorf("logTicks(%g, %g) = %v, want %v", c.lo, c.hi, got, c.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-9*c.want[i] {
				t.Errorf("logTicks(%g, %g) = %v, want %v", c.lo, c.hi, got, c.want)
				break
			}
		}
	}
	// The domain is whole decades around the data.
	s := newScale(axis{log: true}, []float64{230, 14276}, 0, 1)
	if s.lo != 2 || s.hi != 5 {
		t.Errorf("log domain 10^%g..10^%g, want 10^2..10^5", s.lo, s.hi)
	}
}

func TestLinearScale(t *testing.T) {
	s := newScale(axis{fmt: fmtSI}, []float64{24, 165, 812}, 0, 100)
	if s.lo != 0 || s.hi < 812 {
		t.Errorf("linear domain %g..%g does not start at 0 and hold 812", s.lo, s.hi)
	}
	if want := []string{"0", "200", "400", "600", "800", "1k"}; !slices.Equal(s.tickLabels, want) {
		t.Errorf("ticks %q, want %q", s.tickLabels, want)
	}
	// Explicit ticks are kept as given.
	s = newScale(axis{ticks: []float64{1, 3, 8, 16}}, []float64{1, 16}, 0, 100)
	if want := []string{"1", "3", "8", "16"}; !slices.Equal(s.tickLabels, want) {
		t.Errorf("ticks %q, want %q", s.tickLabels, want)
	}
	if got := s.pos(16); got > 100 {
		t.Errorf("16 at %g, beyond the axis", got)
	}
}

// fakeResults fills a bencher's results as a full run would, without
// running anything.
func fakeBencher() *bencher {
	b := &bencher{cfg: &Config{Runs: 3, LifecycleK: 3, AdaptationService: true}, sz: fullSizes, res: newResults()}
	r := b.res
	for _, k := range b.createKs() {
		for _, m := range modes {
			for i, side := range []string{sideClassic, sideGRPC, sideAS} {
				kk := key{scCreate, createConfig(k, m.name), side}
				for run := range 3 {
					r.add(kk, mOps, 4000/float64(k)*float64(1+i)+float64(run))
					r.add(kk, mCPU, 300e-6*float64(k)/float64(1+i))
				}
			}
		}
	}
	for _, n := range b.sz.syncN {
		st := float64(n) * 4864
		for i, side := range []string{sideClassic, sideGRPC} {
			kk := key{scSync, syncConfig(n), side}
			r.add(kk, mTime, float64(n)*70e-6/float64(1+2*i))
			r.add(kk, mBytes, st*float64(2-i))
			r.add(kk, mState, st)
		}
	}
	for _, n := range b.sz.rssN {
		kk := key{scRSS, syncConfig(n), "nrid"}
		r.add(kk, mRSS, 24*mb+float64(n)*14000)
		r.add(kk, mState, float64(n)*4864)
	}
	return b
}

func TestPlotsFiles(t *testing.T) {
	b := fakeBencher()
	dir := t.TempDir()
	files, err := b.writePlots(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if want := []string{"create-calls.svg", "create-cpu.svg", "rss.svg", "sync-bytes.svg", "sync-time.svg"}; !slices.Equal(names, want) {
		t.Fatalf("files %q, want %q", names, want)
	}
	wantPoints := map[string]int{
		"create-calls.svg": 4 * 4, // 4 series (2 sides x seq, conc16) at K = 1, 3, 8, 16
		"create-cpu.svg":   4 * 4,
		"sync-time.svg":    2 * 4, // 2 sides at N = 100 .. 50,000
		"sync-bytes.svg":   3 * 4, // and the state
		"rss.svg":          3 * 4, // RSS, state and 2x state at N = 0 .. 50,000
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := checkSVG(t, data)
		if n := wantPoints[filepath.Base(f)]; len(d.points) != n {
			t.Errorf("%s: %d points, want %d", filepath.Base(f), len(d.points), n)
		}
	}
	// Only the scenarios that ran are plotted.
	b.res = newResults()
	b.res.add(key{scRSS, "N=0", "nrid"}, mRSS, 24*mb)
	b.res.add(key{scRSS, "N=0", "nrid"}, mState, 0)
	if ps := b.plots(); len(ps) != 1 || ps["rss.svg"] == nil {
		t.Errorf("plots of an rss-only run: %v", ps)
	}
}

func TestScalingReport(t *testing.T) {
	b := fakeBencher()
	var out testWriter
	b.scalingReport(&out)
	s := string(out)
	for _, want := range []string{
		"how cost grows — CreateContainer", "K=16", "(2.00x)",
		"how cost grows — state", "N=50000", "bytes classic", "(1.000x)", "(2.000x)", "RSS/state",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("scaling report lacks %q:\n%s", want, s)
		}
	}
	// N=0 has no row (no state to relate to), N=100 has no RSS.
	if strings.Contains(s, "N=0 ") {
		t.Errorf("a row for N=0:\n%s", s)
	}
}

func TestSummaryTargets(t *testing.T) {
	b := &bencher{cfg: &Config{Runs: 3, LifecycleK: 3}, res: newResults()}
	r := b.res
	set := func(sc, cfg, side, metric string, v float64) { r.add(key{sc, cfg, side}, metric, v) }
	set(scCreate, "K=1 seq", sideClassic, mOps, 1000)
	set(scCreate, "K=1 seq", sideGRPC, mOps, 1500) // 1.50x: just met
	set(scCreate, "K=1 seq", sideAS, mOps, 990)    // 0.99x: missed
	set(scCreate, "K=8 seq", sideClassic, mOps, 100)
	set(scCreate, "K=8 seq", sideGRPC, mOps, 159) // 1.59x: missed
	set(scCreate, "K=3 conc16", sideClassic, mOps, 100)
	set(scCreate, "K=3 conc16", sideGRPC, mOps, 500)
	set(scLifecycle, "K=3 seq", sideClassic, mOps, 100)
	set(scLifecycle, "K=3 seq", sideGRPC, mOps, 131)
	set(scLifecycle, "K=3 conc16", sideClassic, mOps, 100)
	set(scLifecycle, "K=3 conc16", sideGRPC, mOps, 499)
	set(scSync, "N=10000", sideClassic, mTime, 1)
	set(scSync, "N=10000", sideGRPC, mTime, 0.25)
	set(scSync, "N=10000", sideGRPC, mBytes, 1002)
	set(scSync, "N=10000", sideGRPC, mState, 1000)
	set(scBridge, "K=1 seq", sideDirect, mP50, 1)
	set(scBridge, "K=1 seq", sideBridge, mP50, 1.41)
	set(scRSS, "N=10000", "nrid", mRSS, 150*mb)
	set(scRSS, "N=10000", "nrid", mState, 46.4*mb)
	got := b.summary()
	for _, want := range []string{
		"create K=1 1.50x ✓", "K=8 1.59x ✗", "conc16 K=3 5.00x ✓",
		"lifecycle 1.31x ✓ conc16 4.99x ✗",
		"sync10k 0.250x time ✓ bytes 1.002x state ✗",
		"bridge p50 1.41x direct ✗",
		"AdaptationService K=1 0.99x ✗",
		"nrid RSS 10k 150 MB = 3.2x state ✗",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	// bytes = state within 0.1 %, RSS at 2x.
	b.res = newResults()
	r = b.res
	set(scSync, "N=10000", sideClassic, mTime, 1)
	set(scSync, "N=10000", sideGRPC, mTime, 0.26)
	set(scSync, "N=10000", sideGRPC, mBytes, 1001)
	set(scSync, "N=10000", sideGRPC, mState, 1000)
	set(scRSS, "N=10000", "nrid", mRSS, 92*mb)
	set(scRSS, "N=10000", "nrid", mState, 46*mb)
	got = b.summary()
	for _, want := range []string{"sync10k 0.260x time ✗ bytes 1.001x state ✓", "nrid RSS 10k 92 MB = 2.0x state ✓"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}
