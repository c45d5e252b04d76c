package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"
)

// A tiny SVG line-plot helper: axes, ticks (linear or log 10), a legend,
// series of points joined by lines, a title and axis labels. The output is
// SVG 1.1 that browsers and GitHub render as is.

// series is one line of a plot. Points whose x or y cannot be drawn (NaN,
// or not positive on a log axis) are left out.
type series struct {
	name   string
	x, y   []float64
	color  string
	dashed bool
	band   bool // a wide pale line: a reference that other lines may cover
}

// axis is one axis of a plot.
type axis struct {
	label string
	log   bool                 // log 10 scale
	ticks []float64            // explicit ticks; nil: chosen from the data
	fmt   func(float64) string // tick labels; nil: %g
}

// plot is one chart.
type plot struct {
	title  string
	x, y   axis
	series []series
}

// Geometry of every plot, in SVG user units (= px).
const (
	plotW, plotH            = 760, 440
	plotLeft, plotTop       = 80, 40
	plotRight, plotBottom   = 540, 380 // the plot area's far edges
	legendX                 = 560
	plotFont                = "sans-serif"
	tickLen                 = 5
	pointRadius             = 3.5
	linearTicksTarget       = 6
	logMinorLabelMaxDecades = 2
)

// scale maps data values of one axis to pixels.
type scale struct {
	log        bool
	lo, hi     float64 // data domain (log10 of it on a log axis)
	from, to   float64 // pixels
	ticks      []float64
	tickLabels []string
}

func (s *scale) pos(v float64) float64 {
	if s.log {
		v = math.Log10(v)
	}
	if s.hi == s.lo {
		return (s.from + s.to) / 2
	}
	return s.from + (v-s.lo)/(s.hi-s.lo)*(s.to-s.from)
}

// drawable says whether v can be drawn on the axis.
func drawable(v float64, log bool) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!log || v > 0)
}

// newScale fits an axis to the values vs, from pixel from to pixel to.
func newScale(a axis, vs []float64, from, to float64) scale {
	s := scale{log: a.log, from: from, to: to}
	var lo, hi float64
	first := true
	for _, v := range append(slices.Clone(vs), a.ticks...) {
		if !drawable(v, a.log) {
			continue
		}
		if first {
			lo, hi, first = v, v, false
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if first { // nothing to draw
		lo, hi = 1, 10
	}
	if a.log {
		s.lo, s.hi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if s.lo == s.hi {
			s.hi++
		}
		s.ticks = logTicks(s.lo, s.hi)
	} else {
		// Linear axes start at zero (or end there): no truncated axis.
		lo, hi = min(lo, 0), max(hi, 0)
		if lo == hi {
			hi = 1
		}
		step := niceStep((hi - lo) / linearTicksTarget)
		s.lo, s.hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
		for t := s.lo; t <= s.hi+step/2; t += step {
			s.ticks = append(s.ticks, math.Round(t/step)*step)
		}
	}
	if a.ticks != nil {
		if !a.log { // the data's and ticks' extent, a little room at the end
			s.lo, s.hi = min(lo, 0), hi+(hi-min(lo, 0))*0.04
		}
		s.ticks = nil
		for _, t := range a.ticks {
			if drawable(t, a.log) {
				s.ticks = append(s.ticks, t)
			}
		}
	}
	format := a.fmt
	if format == nil {
		format = func(v float64) string { return fmt.Sprintf("%g", v) }
	}
	for _, t := range s.ticks {
		s.tickLabels = append(s.tickLabels, format(t))
	}
	return s
}

// logTicks are the powers of ten from 10^lo to 10^hi; over at most two
// decades also 2 and 5 times them.
func logTicks(lo, hi float64) []float64 {
	var ts []float64
	for e := lo; e <= hi; e++ {
		p := math.Pow(10, e)
		ts = append(ts, p)
		if hi-lo <= logMinorLabelMaxDecades && e < hi {
			ts = append(ts, 2*p, 5*p)
		}
	}
	return ts
}

// niceStep rounds a step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// svg renders the plot.
func (p *plot) svg() []byte {
	var xs, ys []float64
	for _, s := range p.series {
		for i := range min(len(s.x), len(s.y)) {
			if drawable(s.x[i], p.x.log) && drawable(s.y[i], p.y.log) {
				xs, ys = append(xs, s.x[i]), append(ys, s.y[i])
			}
		}
	}
	sx := newScale(p.x, xs, plotLeft, plotRight)
	sy := newScale(p.y, ys, plotBottom, plotTop)

	var b bytes.Buffer
	esc := func(s string) string {
		var e strings.Builder
		_ = xml.EscapeText(&e, []byte(s)) // a strings.Builder does not fail
		return e.String()
	}
	f := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="12">`+"\n",
		plotW, plotH, plotW, plotH, plotFont)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="22" text-anchor="middle" font-size="15" font-weight="bold">%s</text>`+"\n", plotW/2, esc(p.title))
	fmt.Fprintf(&b, `<rect class="plot-area" x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>`+"\n",
		plotLeft, plotTop, plotRight-plotLeft, plotBottom-plotTop)
	// Grid and ticks.
	for i, t := range sx.ticks {
		x := f(sx.pos(t))
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#ddd"/>`+"\n", x, plotTop, x, plotBottom)
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#444"/>`+"\n", x, plotBottom, x, plotBottom+tickLen)
		fmt.Fprintf(&b, `<text class="xtick" x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", x, plotBottom+tickLen+14, esc(sx.tickLabels[i]))
	}
	for i, t := range sy.ticks {
		y := f(sy.pos(t))
		fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#ddd"/>`+"\n", plotLeft, y, plotRight, y)
		fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#444"/>`+"\n", plotLeft-tickLen, y, plotLeft, y)
		fmt.Fprintf(&b, `<text class="ytick" x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", plotLeft-tickLen-3, y, esc(sy.tickLabels[i]))
	}
	// Axis labels.
	xl, yl := p.x.label, p.y.label
	if p.x.log {
		xl += " (log scale)"
	}
	if p.y.log {
		yl += " (log scale)"
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="13">%s</text>`+"\n", (plotLeft+plotRight)/2, plotBottom+44, esc(xl))
	cy := (plotTop + plotBottom) / 2
	fmt.Fprintf(&b, `<text x="18" y="%d" text-anchor="middle" font-size="13" transform="rotate(-90 18 %d)">%s</text>`+"\n", cy, cy, esc(yl))
	// Series, then the legend.
	for _, s := range p.series {
		var pts []string
		for i := range min(len(s.x), len(s.y)) {
			if drawable(s.x[i], p.x.log) && drawable(s.y[i], p.y.log) {
				pts = append(pts, f(sx.pos(s.x[i]))+","+f(sy.pos(s.y[i])))
			}
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s"%s/>`+"\n", strings.Join(pts, " "), s.color, s.stroke())
		}
		for _, pt := range pts {
			x, y, _ := strings.Cut(pt, ",")
			fmt.Fprintf(&b, `<circle class="point" cx="%s" cy="%s" r="%.1f" fill="%s"/>`+"\n", x, y, pointRadius, s.color)
		}
	}
	for i, s := range p.series {
		y := plotTop + 10 + 20*i
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"%s/>`+"\n", legendX, y, legendX+28, y, s.color, s.stroke())
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="%.1f" fill="%s"/>`+"\n", legendX+14, y, pointRadius, s.color)
		fmt.Fprintf(&b, `<text class="legend" x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", legendX+36, y, esc(s.name))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// stroke is the width and dashes of a series' lines.
func (s *series) stroke() string {
	w := ` stroke-width="2"`
	if s.band {
		w = ` stroke-width="7" stroke-opacity="0.35"`
	}
	if s.dashed {
		w += ` stroke-dasharray="6 4"`
	}
	return w
}

// Tick label formats.

// fmtSI is 1, 20, 500, 1k, 2.5k, 10k, 1M.
func fmtSI(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return trimFloat(v/1e6) + "M"
	case a >= 1e3:
		return trimFloat(v/1e3) + "k"
	}
	return trimFloat(v)
}

func trimFloat(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.3g", v), ".0") }

// fmtSeconds is a duration tick: 100µs, 2ms, 1s.
func fmtSeconds(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1:
		return trimFloat(v) + "s"
	case v >= 1e-3:
		return trimFloat(v*1e3) + "ms"
	}
	return trimFloat(v*1e6) + "µs"
}
