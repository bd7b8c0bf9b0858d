package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strings"
)

// A BarChart is a grouped horizontal bar chart: one block per group, top to
// bottom, holding one bar per series that has a value in that group. Bars
// are horizontal so that long implementation names and values stay
// readable at any number of bars; the value axis runs along the bottom.
type BarChart struct {
	Title    string
	Subtitle string   // one line under the title, e.g. "lower is better"
	Axis     string   // the value axis label
	Groups   []string // group labels, top to bottom
	Series   []Series // in legend order; each has one value per group
	Log      bool     // logarithmic value axis; bars need positive values
}

// A Series is one implementation across the groups of a chart.
type Series struct {
	Name   string
	Color  string    // any SVG color, e.g. "#0072b2"
	Values []float64 // Values[i] belongs to Groups[i]; NaN: no bar
}

// Geometry, in SVG user units (pixels at 100%).
const (
	chartWidth   = 760
	marginX      = 12
	rightRoom    = 64 // room after the longest bar for its value label
	barHeight    = 14
	rowPitch     = 18
	groupHeader  = 20
	groupGap     = 8
	legendPitch  = 18
	fontSize     = 12
	smallFont    = 11
	charWidthEst = 0.6 // average glyph width as a fraction of the font size
)

func textWidth(s string, size float64) float64 {
	return float64(len([]rune(s))) * size * charWidthEst
}

// SVG renders the chart as a standalone SVG document. It never fails: a
// chart with no values renders its frame and a "no data" note.
func (c *BarChart) SVG() []byte {
	var w svgWriter
	// Legend rows.
	type item struct {
		x, y float64
		s    Series
	}
	var legend []item
	y := 62.0
	x := float64(marginX)
	for _, s := range c.Series {
		wd := 16 + textWidth(s.Name, smallFont) + 18
		if x+wd > chartWidth-marginX && x > marginX {
			x, y = marginX, y+legendPitch
		}
		legend = append(legend, item{x, y, s})
		x += wd
	}
	plotTop := y + 16

	// The gutter holds the series names left of the bars.
	gutter := 80.0
	for _, s := range c.Series {
		gutter = max(gutter, marginX+textWidth(s.Name, smallFont)+10)
	}
	x0, x1 := gutter, float64(chartWidth-rightRoom)

	lo, hi, has := c.extent()
	sc := newScale(lo, hi, x0, x1, c.Log)

	// Rows: the group headers and bars, top to bottom.
	type bar struct {
		y    float64
		s    Series
		v    float64
		name string
	}
	type header struct {
		y     float64
		label string
	}
	var bars []bar
	var headers []header
	yy := plotTop
	for gi, g := range c.Groups {
		headers = append(headers, header{yy + 14, g})
		yy += groupHeader
		for _, s := range c.Series {
			if gi >= len(s.Values) || math.IsNaN(s.Values[gi]) {
				continue
			}
			bars = append(bars, bar{yy, s, s.Values[gi], s.Name})
			yy += rowPitch
		}
		yy += groupGap
	}
	plotBottom := max(yy, plotTop+40)
	height := plotBottom + 46

	w.printf(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	w.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="Helvetica, Arial, sans-serif" font-size="%d">`+"\n",
		chartWidth, height, chartWidth, height, fontSize)
	w.printf("<title>%s</title>\n", esc(c.Title))
	w.printf(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	w.printf(`<text x="%d" y="26" font-size="16" font-weight="bold" fill="#222">%s</text>`+"\n", marginX, esc(c.Title))
	if c.Subtitle != "" {
		w.printf(`<text x="%d" y="44" font-size="%d" fill="#555">%s</text>`+"\n", marginX, smallFont, esc(c.Subtitle))
	}
	w.printf(`<g class="legend">` + "\n")
	for _, it := range legend {
		w.printf(`<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`, it.x, it.y-10, esc(it.s.Color))
		w.printf(`<text x="%.1f" y="%.1f" font-size="%d" fill="#222">%s</text>`+"\n", it.x+16, it.y, smallFont, esc(it.s.Name))
	}
	w.printf("</g>\n")

	// Grid and value axis.
	w.printf(`<g class="axis" font-size="%d" fill="#555">`+"\n", smallFont)
	for _, t := range sc.ticks() {
		tx := sc.pos(t)
		w.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`, tx, plotTop, tx, plotBottom)
		w.printf(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", tx, plotBottom+15, esc(formatNumber(t)))
	}
	w.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>`+"\n", x0, plotBottom, x1, plotBottom)
	w.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>`+"\n", sc.pos(sc.base()), plotTop, sc.pos(sc.base()), plotBottom)
	w.printf(`<text x="%.1f" y="%.1f" text-anchor="middle" font-size="%d" fill="#222">%s</text>`+"\n", (x0+x1)/2, plotBottom+36, fontSize, esc(c.Axis))
	w.printf("</g>\n")

	// Group headers, bars and their values.
	for _, h := range headers {
		w.printf(`<text class="group" x="%d" y="%.1f" font-weight="bold" fill="#222">%s</text>`+"\n", marginX, h.y, esc(h.label))
	}
	for _, b := range bars {
		label := formatNumber(b.v)
		w.printf(`<text x="%.1f" y="%.1f" text-anchor="end" font-size="%d" fill="#333">%s</text>`, x0-6, b.y+11, smallFont, esc(b.name))
		start, end := sc.pos(sc.base()), sc.pos(b.v)
		if c.Log && b.v <= 0 {
			end = start // nothing to draw on a log axis
		}
		left, width := min(start, end), math.Abs(end-start)
		w.printf(`<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>`,
			left, b.y, width, barHeight, esc(b.s.Color), esc(b.name), esc(label))
		w.printf(`<text class="value" x="%.1f" y="%.1f" font-size="%d" fill="#222">%s</text>`+"\n", max(start, end)+4, b.y+11, smallFont, esc(label))
	}
	if !has {
		w.printf(`<text x="%.1f" y="%.1f" text-anchor="middle" fill="#888">no data</text>`+"\n", (x0+x1)/2, plotTop+24)
	}
	w.printf("</svg>\n")
	return w.buf.Bytes()
}

// extent returns the smallest and largest value of the chart, and whether
// there is any (for a log axis, only positive values count).
func (c *BarChart) extent() (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) || (c.Log && v <= 0) {
				continue
			}
			lo, hi, ok = min(lo, v), max(hi, v), true
		}
	}
	if !ok {
		return 0, 1, false
	}
	return lo, hi, true
}

// scale maps values to x positions, linear from a domain that includes 0 or
// logarithmic over whole decades.
type scale struct {
	lo, hi, x0, x1 float64
	log            bool
	step           float64 // linear tick step
}

func newScale(lo, hi, x0, x1 float64, log bool) scale {
	if log {
		l := math.Pow(10, math.Floor(math.Log10(lo)))
		if lo < 2*l {
			l /= 10 // leave the smallest bar a visible length
		}
		h := math.Pow(10, math.Ceil(math.Log10(hi)))
		if h <= l {
			h = l * 10
		}
		return scale{lo: l, hi: h, x0: x0, x1: x1, log: true}
	}
	lo, hi = min(lo, 0), max(hi, 0)
	if hi == lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / 5)
	return scale{lo: math.Floor(lo/step) * step, hi: math.Ceil(hi/step) * step, x0: x0, x1: x1, step: step}
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func (s scale) pos(v float64) float64 {
	if s.log {
		v = max(v, s.lo)
		return s.x0 + (s.x1-s.x0)*(math.Log10(v)-math.Log10(s.lo))/(math.Log10(s.hi)-math.Log10(s.lo))
	}
	return s.x0 + (s.x1-s.x0)*(v-s.lo)/(s.hi-s.lo)
}

// base is where bars start: 0 on a linear axis, the lowest decade on a log
// axis.
func (s scale) base() float64 {
	if s.log {
		return s.lo
	}
	return 0
}

func (s scale) ticks() []float64 {
	var out []float64
	if s.log {
		for v := s.lo; v <= s.hi*(1+1e-9); v *= 10 {
			out = append(out, v)
		}
		return out
	}
	n := int(math.Round((s.hi - s.lo) / s.step))
	for i := 0; i <= n; i++ {
		v := s.lo + float64(i)*s.step
		if math.Abs(v) < s.step*1e-9 {
			v = 0
		}
		out = append(out, v)
	}
	return out
}

type svgWriter struct{ buf bytes.Buffer }

func (w *svgWriter) printf(format string, args ...any) { fmt.Fprintf(&w.buf, format, args...) }

// esc escapes s for XML character data and attribute values.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // writing to a strings.Builder cannot fail
	return b.String()
}
