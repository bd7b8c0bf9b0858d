package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

// svgSummary is what checkSVG read from a well-formed SVG document.
type svgSummary struct {
	bars   int      // <rect class="bar">
	values []string // text of <text class="value">, in order
	groups []string // text of <text class="group">, in order
	texts  []string // every text element's content
}

// checkSVG decodes data as XML to the end, failing the test on any syntax
// error, and checks that the root is an <svg> element in the SVG namespace.
func checkSVG(t *testing.T, data []byte) svgSummary {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	var s svgSummary
	depth := 0
	var textClass string
	inText := false
	var cur strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if depth == 0 && (tok.Name.Local != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("root element: got {%s}%s, want {http://www.w3.org/2000/svg}svg", tok.Name.Space, tok.Name.Local)
			}
			depth++
			class := ""
			for _, a := range tok.Attr {
				if a.Name.Local == "class" {
					class = a.Value
				}
			}
			switch tok.Name.Local {
			case "rect":
				if class == "bar" {
					s.bars++
				}
			case "text":
				inText, textClass = true, class
				cur.Reset()
			}
		case xml.CharData:
			if inText {
				cur.Write(tok)
			}
		case xml.EndElement:
			depth--
			if tok.Name.Local == "text" {
				inText = false
				s.texts = append(s.texts, cur.String())
				switch textClass {
				case "value":
					s.values = append(s.values, cur.String())
				case "group":
					s.groups = append(s.groups, cur.String())
				}
			}
		}
	}
	if depth != 0 {
		t.Fatalf("unbalanced elements: depth %d at the end", depth)
	}
	return s
}

func TestBarChartSVG(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		chart  BarChart
		bars   int
		values []string
		groups []string
	}{
		{
			name: "linear",
			chart: BarChart{
				Title: "CPU <per> op & more", Subtitle: "lower is better", Axis: "ns",
				Groups: []string{"SetTimer", "MoveTimer"},
				Series: []Series{
					{Name: "ttlkit", Color: "#0072b2", Values: []float64{260, 155}},
					{Name: "gozero", Color: "#d55e00", Values: []float64{3050, nan}},
					{Name: "a<b>&c", Color: "#999", Values: []float64{0, 26.9}},
				},
			},
			bars:   5,
			values: []string{"260", "3050", "0", "155", "26.9"},
			groups: []string{"SetTimer", "MoveTimer"},
		},
		{
			name: "log with a negative and a zero",
			chart: BarChart{
				Title: "lateness", Axis: "ms", Log: true,
				Groups: []string{"p50", "p99"},
				Series: []Series{
					{Name: "ttlkit", Color: "#0072b2", Values: []float64{0.25, 0.5}},
					{Name: "gozero", Color: "#d55e00", Values: []float64{-2, 1000}},
					{Name: "zero", Color: "#999", Values: []float64{0, 1}},
				},
			},
			bars:   6,
			values: []string{"0.25", "-2", "0", "0.5", "1000", "1"},
			groups: []string{"p50", "p99"},
		},
		{
			name: "negative linear",
			chart: BarChart{
				Title: "B/entry", Groups: []string{"all"},
				Series: []Series{{Name: "a", Color: "#000", Values: []float64{-12.5}}, {Name: "b", Color: "#111", Values: []float64{40}}},
			},
			bars:   2,
			values: []string{"-12.5", "40"},
			groups: []string{"all"},
		},
		{
			name:   "no data",
			chart:  BarChart{Title: "empty", Groups: []string{"g"}, Series: []Series{{Name: "a", Color: "#000", Values: []float64{nan}}}},
			bars:   0,
			groups: []string{"g"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svg := tt.chart.SVG()
			s := checkSVG(t, svg)
			if s.bars != tt.bars {
				t.Errorf("bars: got %d, want %d", s.bars, tt.bars)
			}
			if !slices.Equal(s.values, tt.values) {
				t.Errorf("value labels: got %q, want %q", s.values, tt.values)
			}
			if !slices.Equal(s.groups, tt.groups) {
				t.Errorf("group labels: got %q, want %q", s.groups, tt.groups)
			}
			if !slices.Contains(s.texts, tt.chart.Title) {
				t.Errorf("title %q not among the texts %q", tt.chart.Title, s.texts)
			}
			for _, se := range tt.chart.Series {
				if !slices.Contains(s.texts, se.Name) {
					t.Errorf("legend: series %q not among the texts", se.Name)
				}
			}
			if tt.bars == 0 && !slices.Contains(s.texts, "no data") {
				t.Errorf("an empty chart should say %q; texts %q", "no data", s.texts)
			}
			if bytes.Contains(svg, []byte("NaN")) || bytes.Contains(svg, []byte("Inf")) {
				t.Errorf("SVG holds NaN or Inf coordinates")
			}
		})
	}
}

func TestScaleTicks(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		log    bool
		want   []float64
	}{
		{"linear from 0", 26.9, 3182, false, []float64{0, 1000, 2000, 3000, 4000}},
		{"linear small", 0.1, 0.9, false, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{"linear negative", -12.5, 40, false, []float64{-20, 0, 20, 40}},
		{"log decades", 0.25, 1500, true, []float64{0.1, 1, 10, 100, 1000, 10000}},
		{"log one value", 5, 5, true, []float64{1, 10}},
		{"log a decade below a value near a power of ten", 0.101, 125, true, []float64{0.01, 0.1, 1, 10, 100, 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScale(tt.lo, tt.hi, 0, 100, tt.log)
			got := s.ticks()
			if len(got) != len(tt.want) {
				t.Fatalf("ticks: got %v, want %v", got, tt.want)
			}
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-9*math.Max(1, math.Abs(tt.want[i])) {
					t.Fatalf("ticks: got %v, want %v", got, tt.want)
				}
			}
			if p := s.pos(s.lo); math.Abs(p-0) > 1e-9 {
				t.Errorf("pos(lo): got %v, want 0", p)
			}
			if p := s.pos(s.hi); math.Abs(p-100) > 1e-9 {
				t.Errorf("pos(hi): got %v, want 100", p)
			}
			if s.lo > tt.lo && !(tt.log && tt.lo <= 0) {
				t.Errorf("domain starts at %v, above the smallest value %v", s.lo, tt.lo)
			}
			if s.hi < tt.hi {
				t.Errorf("domain ends at %v, below the largest value %v", s.hi, tt.hi)
			}
		})
	}
}

func TestNiceStep(t *testing.T) {
	tests := []struct {
		name      string
		raw, want float64
	}{
		{"exact", 1000, 1000},
		{"up to the next decade", 636, 1000},
		{"up to 2 small", 0.16, 0.2},
		{"up to 5", 3.1, 5},
		{"up to 10", 7, 10},
		{"zero", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := niceStep(tt.raw); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("niceStep(%v): got %v, want %v", tt.raw, got, tt.want)
			}
		})
	}
}
