package compare

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"
)

// colors of the backends' curves, in order.
var colors = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// Plot geometry, in SVG user units.
const (
	plotW, plotH                   = 640, 300
	padL, padR, padT, padB         = 56, 16, 12, 40
	innerW, innerH                 = plotW - padL - padR, plotH - padT - padB
	maxPoints                      = 400
	logScaleRatio          float64 = 20 // use a log axis when max/min exceeds this
)

// curve is one backend's samples of a workload.
type curve struct {
	name    string
	color   string
	samples []time.Duration // sorted
}

// cdfSVG draws the empirical CDFs of curves as an inline SVG element: x the
// latency in milliseconds (logarithmic when the range is wide), y the
// fraction of samples at or below it, one step line per backend.
func cdfSVG(workload string, curves []curve) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range curves {
		if n := len(c.samples); n > 0 {
			lo, hi = math.Min(lo, ms(c.samples[0])), math.Max(hi, ms(c.samples[n-1]))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="cdf" data-workload="%s" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img">`,
		html.EscapeString(workload), plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<title>%s: CDF of latency</title>`, html.EscapeString(workload))
	if math.IsInf(lo, 1) {
		fmt.Fprintf(&b, `<text x="%d" y="%d">no samples</text></svg>`, plotW/2-40, plotH/2)
		return b.String()
	}
	ax := newAxis(lo, hi)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`, padL, padT, innerW, innerH)
	for _, t := range ax.ticks() {
		x := padL + ax.pos(t)*innerW
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`, x, padT, x, padT+innerH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%s</text>`, x, padT+innerH+14, tickLabel(t))
	}
	for _, f := range []float64{0, 0.25, 0.5, 0.75, 0.9, 1} {
		y := padT + (1-f)*innerH
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`, padL, y, padL+innerW, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" text-anchor="end">%g</text>`, padL-4, y+4, f)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" text-anchor="middle">latency, ms%s</text>`, padL+innerW/2, plotH-4, ax.note())
	for _, c := range curves {
		if len(c.samples) > 0 {
			fmt.Fprintf(&b, `<polyline class="series" data-backend="%s" fill="none" stroke="%s" stroke-width="2" points="%s"/>`,
				html.EscapeString(c.name), c.color, points(ax, c.samples))
		}
	}
	return b.String() + "</svg>"
}

// points returns the step line of the CDF of sorted, at most maxPoints
// steps (the samples are thinned evenly, the last one kept).
func points(ax axis, sorted []time.Duration) string {
	n := len(sorted)
	step := max(1, n/maxPoints)
	var b strings.Builder
	prevY := float64(padT + innerH)
	for i := 0; i < n; i += step {
		if i+step >= n {
			i = n - 1
		}
		x := padL + ax.pos(ms(sorted[i]))*innerW
		y := padT + (1-float64(i+1)/float64(n))*innerH
		fmt.Fprintf(&b, "%.1f,%.1f %.1f,%.1f ", x, prevY, x, y)
		prevY = y
	}
	return strings.TrimSpace(b.String())
}

// axis maps milliseconds in [lo, hi] to [0, 1], linearly or logarithmically.
type axis struct {
	lo, hi float64
	log    bool
}

func newAxis(lo, hi float64) axis {
	lo = math.Max(lo, 0.001)
	if hi <= lo {
		hi = lo * 1.1
	}
	if hi/lo > logScaleRatio {
		return axis{lo: math.Pow(10, math.Floor(math.Log10(lo))), hi: math.Pow(10, math.Ceil(math.Log10(hi))), log: true}
	}
	span := hi - lo
	return axis{lo: math.Max(0, lo-span*0.05), hi: hi + span*0.05}
}

func (a axis) pos(v float64) float64 {
	if a.log {
		return (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	}
	return (v - a.lo) / (a.hi - a.lo)
}

func (a axis) note() string {
	if a.log {
		return " (log scale)"
	}
	return ""
}

// ticks returns the tick values: the powers of ten on a log axis, five
// round values on a linear one.
func (a axis) ticks() []float64 {
	var out []float64
	if a.log {
		for v := a.lo; v <= a.hi*1.0001; v *= 10 {
			out = append(out, v)
		}
		return out
	}
	step := math.Pow(10, math.Floor(math.Log10((a.hi-a.lo)/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if (a.hi-a.lo)/(step*m) <= 6 {
			step *= m
			break
		}
	}
	for v := math.Ceil(a.lo/step) * step; v <= a.hi; v += step {
		out = append(out, v)
	}
	return out
}

func tickLabel(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%g", math.Round(v*100)/100)
	}
	return fmt.Sprintf("%.3g", v)
}
