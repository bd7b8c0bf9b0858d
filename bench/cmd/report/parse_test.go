package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func parseFile(t *testing.T, name string) *Output {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "replay", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err := parseOutput(f)
	if err != nil {
		t.Fatalf("parseOutput(%s): %v", name, err)
	}
	return out
}

func findResult(t *testing.T, out *Output, name string) Result {
	t.Helper()
	for _, r := range out.Results {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no result named %q", name)
	return Result{}
}

func TestParseOutputWheel(t *testing.T) {
	out := parseFile(t, "wheel.txt")
	if got, want := len(out.Results), 12; got != want {
		t.Fatalf("got %d results, want %d", got, want)
	}
	if got, want := out.Header["cpu"], "Canned Test Processor"; got != want {
		t.Errorf("cpu header: got %q, want %q", got, want)
	}
	if got, want := out.Header["pkg"], "github.com/ttlkit/ttlkit/bench"; got != want {
		t.Errorf("pkg header: got %q, want %q", got, want)
	}
	if len(out.Failed) != 0 {
		t.Errorf("Failed: got %q, want none", out.Failed)
	}

	first := out.Results[0]
	if got, want := first.Name, "BenchmarkWheel/SetTimer/pending=1k/impl=ttlkit"; got != want {
		t.Errorf("first name: got %q, want %q", got, want)
	}
	if first.Procs != 2 || first.Iters != 1716384 {
		t.Errorf("first: got procs %d iters %d, want 2 and 1716384", first.Procs, first.Iters)
	}
	wantUnits := []string{"ns/op", "B/pending", "cpu-ns/op", "B/op", "allocs/op"}
	if !slices.Equal(first.Units, wantUnits) {
		t.Errorf("units: got %q, want %q", first.Units, wantUnits)
	}
	for unit, want := range map[string]float64{"ns/op": 200, "B/pending": 131.1, "cpu-ns/op": 250, "B/op": 48, "allocs/op": 1} {
		if got := first.Metrics[unit]; got != want {
			t.Errorf("first %s: got %v, want %v", unit, got, want)
		}
	}

	// The gozero line was split by a log line: name, log text, then the
	// figures on a line of their own.
	split := findResult(t, out, "BenchmarkWheel/MoveTimer/pending=1M/impl=gozero")
	if split.Iters != 189771 || split.Metrics["cpu-ns/op"] != 2000 || split.Metrics["B/pending"] != 240.9 {
		t.Errorf("split line: got iters %d cpu %v B/pending %v, want 189771, 2000, 240.9",
			split.Iters, split.Metrics["cpu-ns/op"], split.Metrics["B/pending"])
	}
	// Exponent notation.
	if got := findResult(t, out, "BenchmarkWheel/MoveTimer/pending=1M/impl=afterfunc").Metrics["cpu-ns/op"]; got != 1000 {
		t.Errorf("1.0e+03 parsed as %v, want 1000", got)
	}
}

func TestParseOutputFailures(t *testing.T) {
	out := parseFile(t, "cachemem.txt")
	var names []string
	for _, r := range out.Results {
		names = append(names, r.Name)
	}
	wantNames := []string{
		"BenchmarkCacheBytesPerEntry/impl=ttlkit",
		"BenchmarkCacheBytesPerEntry/impl=otter",
		"BenchmarkCacheBytesPerEntry/impl=gozero",
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("results: got %q, want %q", names, wantNames)
	}
	wantFailed := []string{"BenchmarkCacheBytesPerEntry/impl=theine", "BenchmarkCacheBytesPerEntry"}
	if !slices.Equal(out.Failed, wantFailed) {
		t.Errorf("Failed: got %q, want %q", out.Failed, wantFailed)
	}
	if got := out.Results[0].Metrics["held"]; got != 1048576 {
		t.Errorf("held: got %v, want 1048576", got)
	}
}

func TestParseOutputJoinsOnlyCounts(t *testing.T) {
	// A name line followed by lines that are not figures, then a new
	// result: the pending name must not swallow anything else.
	in := strings.Join([]string{
		"BenchmarkA/impl=x-2         \tsome text",
		"more text 12 ns/op",
		"BenchmarkB/impl=y-2   100   5.5 ns/op   3 widgets",
		"--- SKIP: BenchmarkC/impl=z",
		"    c_test.go:1: not on this platform",
		"PASS",
	}, "\n")
	out, err := parseOutput(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 1 || out.Results[0].Name != "BenchmarkB/impl=y" {
		t.Fatalf("got results %+v, want only BenchmarkB/impl=y", out.Results)
	}
	if got := out.Results[0].Metrics["widgets"]; got != 3 {
		t.Errorf("widgets: got %v, want 3", got)
	}
	if !slices.Equal(out.Skipped, []string{"BenchmarkC/impl=z"}) {
		t.Errorf("Skipped: got %q, want [BenchmarkC/impl=z]", out.Skipped)
	}
}

func TestParseFigures(t *testing.T) {
	tests := []struct {
		name   string
		fields string
		ok     bool
		iters  int64
		values map[string]float64
	}{
		{"ns and custom", "100 12.5 ns/op 3 cpu-ns/op", true, 100, map[string]float64{"ns/op": 12.5, "cpu-ns/op": 3}},
		{"custom only", "1 0.600 max-late-ms", true, 1, map[string]float64{"max-late-ms": 0.6}},
		{"negative value", "1 -2.5 p50-late-ms", true, 1, map[string]float64{"p50-late-ms": -2.5}},
		{"exponent", "7 1.5e-07 tiny", true, 7, map[string]float64{"tiny": 1.5e-7}},
		{"percent unit", "10 99.5 hit%", true, 10, map[string]float64{"hit%": 99.5}},
		{"count only", "100", false, 0, nil},
		{"dangling value", "100 12.5 ns/op 3", false, 0, nil},
		{"value not a number", "100 fast ns/op", false, 0, nil},
		{"count not a number", "many 12 ns/op", false, 0, nil},
		{"text", "--- FAIL: BenchmarkX", false, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, ok := parseFigures("BenchmarkX-2", strings.Fields(tt.fields))
			if ok != tt.ok {
				t.Fatalf("ok: got %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if res.Iters != tt.iters {
				t.Errorf("iters: got %d, want %d", res.Iters, tt.iters)
			}
			for u, want := range tt.values {
				if got := res.Metrics[u]; got != want {
					t.Errorf("%s: got %v, want %v", u, got, want)
				}
			}
			if len(res.Metrics) != len(tt.values) {
				t.Errorf("got %d metrics, want %d", len(res.Metrics), len(tt.values))
			}
		})
	}
}

func TestSplitProcs(t *testing.T) {
	tests := []struct {
		name, in, want string
		procs          int
	}{
		{"suffixed", "BenchmarkWheel/SetTimer/pending=1M/impl=ttlkit-2", "BenchmarkWheel/SetTimer/pending=1M/impl=ttlkit", 2},
		{"two digits", "BenchmarkX/impl=a-16", "BenchmarkX/impl=a", 16},
		{"no suffix", "BenchmarkX/impl=a", "BenchmarkX/impl=a", 1},
		{"hyphenated name", "BenchmarkX/impl=go-zero", "BenchmarkX/impl=go-zero", 1},
		{"hyphenated name suffixed", "BenchmarkX/impl=go-zero-4", "BenchmarkX/impl=go-zero", 4},
		{"only the last suffix", "BenchmarkX/size=1-2-8", "BenchmarkX/size=1-2", 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, procs := splitProcs(tt.in)
			if got != tt.want || procs != tt.procs {
				t.Errorf("splitProcs(%q): got %q, %d, want %q, %d", tt.in, got, procs, tt.want, tt.procs)
			}
		})
	}
}

func TestSplitName(t *testing.T) {
	tests := []struct {
		name, in, fn, group, impl string
	}{
		{"impl last", "BenchmarkWheel/SetTimer/pending=1M/impl=ttlkit", "Wheel", "SetTimer/pending=1M", "ttlkit"},
		{"impl only", "BenchmarkFiringAccuracy/impl=gozero", "FiringAccuracy", "", "gozero"},
		{"impl in the middle", "BenchmarkX/impl=a/size=1k", "X", "size=1k", "a"},
		{"no impl", "BenchmarkX/size=1k", "X", "size=1k", ""},
		{"function only", "BenchmarkX", "X", "", ""},
		{"impl-like group", "BenchmarkX/implicit=1/impl=b", "X", "implicit=1", "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn, group, impl := splitName(tt.in)
			if fn != tt.fn || group != tt.group || impl != tt.impl {
				t.Errorf("splitName(%q): got %q, %q, %q, want %q, %q, %q", tt.in, fn, group, impl, tt.fn, tt.group, tt.impl)
			}
		})
	}
}

func TestBuildTablesWheel(t *testing.T) {
	tables := buildTables(parseFile(t, "wheel.txt").Results)
	if len(tables) != 1 || tables[0].Func != "Wheel" {
		t.Fatalf("got %d tables (first %q), want 1 named Wheel", len(tables), tables[0].Func)
	}
	tb := tables[0]
	wantUnits := []string{"ns/op", "cpu-ns/op", "B/op", "allocs/op", "B/pending"}
	if !slices.Equal(tb.Units, wantUnits) {
		t.Errorf("units: got %q, want %q", tb.Units, wantUnits)
	}
	var groups []string
	for _, g := range tb.Groups {
		groups = append(groups, g.Name)
	}
	if want := []string{"SetTimer/pending=1k", "MoveTimer/pending=1M"}; !slices.Equal(groups, want) {
		t.Errorf("groups: got %q, want %q", groups, want)
	}
	var impls []string
	for _, r := range tb.Groups[0].Rows {
		impls = append(impls, r.Impl)
	}
	if want := []string{"ttlkit", "gozero", "afterfunc", "floor"}; !slices.Equal(impls, want) {
		t.Errorf("impls: got %q, want %q", impls, want)
	}
	// SetTimer/pending=1k ran twice: the medians of two samples.
	tk := tb.Groups[0].Rows[0]
	if tk.Samples != 2 {
		t.Errorf("ttlkit samples: got %d, want 2", tk.Samples)
	}
	for unit, want := range map[string]float64{"ns/op": 210, "cpu-ns/op": 260, "B/op": 48} {
		if got := tk.Values[unit]; got != want {
			t.Errorf("ttlkit %s median: got %v, want %v", unit, got, want)
		}
	}
	if got := tb.Groups[1].Rows[0].Samples; got != 1 {
		t.Errorf("MoveTimer ttlkit samples: got %d, want 1", got)
	}
}

func TestBuildTablesDropsZeroNsPerOp(t *testing.T) {
	in := "BenchmarkOne/impl=a-2 1 0 ns/op 5 B/entry\nBenchmarkOne/impl=b-2 1 0 ns/op 7 B/entry\n" +
		"BenchmarkTwo/impl=a-2 10 3 ns/op\nBenchmarkTwo/impl=b-2 10 0 ns/op\n"
	out, err := parseOutput(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	tables := buildTables(out.Results)
	if len(tables) != 2 {
		t.Fatalf("got %d tables, want 2", len(tables))
	}
	if got := tables[0].Units; !slices.Equal(got, []string{"B/entry"}) {
		t.Errorf("all-zero ns/op: got units %q, want [B/entry]", got)
	}
	if got := tables[1].Units; !slices.Equal(got, []string{"ns/op"}) {
		t.Errorf("some non-zero ns/op: got units %q, want [ns/op]", got)
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"one", []float64{3}, 3},
		{"odd", []float64{5, 1, 3}, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			if got := median(in); got != tt.want {
				t.Errorf("median(%v): got %v, want %v", tt.in, got, tt.want)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("median reordered its input: %v", in)
			}
		})
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median(nil): got %v, want NaN", got)
	}
}
