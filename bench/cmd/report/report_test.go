package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func wheelTables(t *testing.T) []Table {
	t.Helper()
	return buildTables(parseFile(t, "wheel.txt").Results)
}

func TestRatiosFor(t *testing.T) {
	g := wheelTables(t)[0].Groups[0] // SetTimer/pending=1k: cpu-ns/op medians 260, 3050, 380, 100
	tests := []struct {
		name      string
		unit      string
		baselines []string
		ref       string
		wantBest  string
		want      map[string]Ratios
	}{
		{
			name: "floor is a baseline", unit: "cpu-ns/op", baselines: []string{"floor"}, ref: "gozero", wantBest: "ttlkit",
			want: map[string]Ratios{
				"ttlkit":    {1, 260.0 / 3050},
				"gozero":    {3050.0 / 260, 1},
				"afterfunc": {380.0 / 260, 380.0 / 3050},
				"floor":     {100.0 / 260, 100.0 / 3050},
			},
		},
		{
			name: "no baseline", unit: "cpu-ns/op", ref: "gozero", wantBest: "floor",
			want: map[string]Ratios{"ttlkit": {2.6, 260.0 / 3050}, "floor": {1, 100.0 / 3050}},
		},
		{
			name: "every row a baseline", unit: "cpu-ns/op", baselines: []string{"ttlkit", "gozero", "afterfunc", "floor"}, ref: "gozero", wantBest: "floor",
			want: map[string]Ratios{"floor": {1, 100.0 / 3050}},
		},
		{
			name: "reference absent", unit: "cpu-ns/op", baselines: []string{"floor"}, ref: "nosuch", wantBest: "ttlkit",
			want: map[string]Ratios{"ttlkit": {1, math.NaN()}, "afterfunc": {380.0 / 260, math.NaN()}},
		},
		{
			name: "unit absent", unit: "hit%", ref: "gozero", wantBest: "",
			want: map[string]Ratios{"ttlkit": {math.NaN(), math.NaN()}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, best := ratiosFor(g, tt.unit, tt.baselines, tt.ref)
			if best != tt.wantBest {
				t.Errorf("best: got %q, want %q", best, tt.wantBest)
			}
			for impl, want := range tt.want {
				r := got[impl]
				if !sameFloat(r.ToBest, want.ToBest) || !sameFloat(r.ToRef, want.ToRef) {
					t.Errorf("%s: got %+v, want %+v", impl, r, want)
				}
			}
		})
	}
}

func TestRatiosHigherIsBetter(t *testing.T) {
	g := Group{Rows: []Row{
		{Impl: "ttlkit", Values: map[string]float64{"hit%": 90}},
		{Impl: "gozero", Values: map[string]float64{"hit%": 60}},
	}}
	got, best := ratiosFor(g, "hit%", nil, "gozero")
	if best != "ttlkit" {
		t.Errorf("best: got %q, want ttlkit", best)
	}
	if r := got["gozero"]; !sameFloat(r.ToBest, 60.0/90) || r.ToRef != 1 {
		t.Errorf("gozero: got %+v, want {%v 1}", r, 60.0/90)
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		name       string
		a, b, want float64
	}{
		{"plain", 3, 2, 1.5},
		{"both zero", 0, 0, 1},
		{"divide by zero", 3, 0, math.NaN()},
		{"numerator NaN", math.NaN(), 2, math.NaN()},
		{"denominator NaN", 2, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ratio(tt.a, tt.b); !sameFloat(got, tt.want) {
				t.Errorf("ratio(%v, %v): got %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b))
}

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		name string
		in   float64
		want string
	}{
		{"integer", 1716384, "1716384"},
		{"hundreds", 131.1, "131"},
		{"tens", 92.19, "92.2"},
		{"units", 5.5, "5.50"},
		{"fraction", 0.0123, "0.0123"},
		{"half", 0.5, "0.5"},
		{"tiny", 7.8e-05, "0.000078"},
		{"tiny negative", -0.000109, "-0.000109"},
		{"below twelve decimals", 1e-15, "0"},
		{"zero", 0, "0"},
		{"negative", -2.5, "-2.50"},
		{"NaN", math.NaN(), "—"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatNumber(tt.in); got != tt.want {
				t.Errorf("formatNumber(%v): got %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if got := formatRatio(260.0 / 3050); got != "0.085×" {
		t.Errorf("formatRatio: got %q, want 0.085×", got)
	}
	if got := formatRatio(123.4); got != "123×" {
		t.Errorf("formatRatio: got %q, want 123×", got)
	}
	if got := formatRatio(0.352 / 80); got != "0.0044×" {
		t.Errorf("formatRatio: got %q, want 0.0044×", got)
	}
}

func suiteByID(t *testing.T, id string) suite {
	t.Helper()
	for _, s := range suites {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no suite %q", id)
	return suite{}
}

func TestBuildChart(t *testing.T) {
	wheel := suiteByID(t, "wheel")
	acc := suiteByID(t, "accuracy")
	accTables := buildTables(parseFile(t, "accuracy.txt").Results)
	tests := []struct {
		name    string
		s       suite
		ch      chart
		tables  []Table
		ok      bool
		groups  []string
		series  []string
		values0 []float64 // the first series' values
	}{
		{
			name: "one unit, selected groups", s: wheel, ch: wheel.Charts[0], tables: wheelTables(t), ok: true,
			groups: []string{"SetTimer/pending=1k"}, series: []string{"ttlkit", "gozero", "afterfunc", "floor"},
			values0: []float64{260},
		},
		{
			name: "every group", s: wheel, ch: chart{Title: "all", Units: []string{"cpu-ns/op"}, Trim: "Wheel/"}, tables: wheelTables(t), ok: true,
			groups: []string{"SetTimer/pending=1k", "MoveTimer/pending=1M"}, series: []string{"ttlkit", "gozero", "afterfunc", "floor"},
			values0: []float64{260, 500},
		},
		{
			name: "one group, several units", s: acc, ch: acc.Charts[0], tables: accTables, ok: true,
			groups: []string{"p50-late-ms", "p99-late-ms", "max-late-ms"}, series: []string{"ttlkit", "gozero", "afterfunc"},
			values0: []float64{0.25, 0.5, 0.6},
		},
		{
			name: "several groups, several units", s: wheel, ch: chart{Title: "x", Units: []string{"cpu-ns/op", "B/op"}, Trim: "Wheel/"}, tables: wheelTables(t), ok: true,
			groups: []string{"SetTimer/pending=1k · cpu-ns/op", "SetTimer/pending=1k · B/op", "MoveTimer/pending=1M · cpu-ns/op", "MoveTimer/pending=1M · B/op"},
			series: []string{"ttlkit", "gozero", "afterfunc", "floor"}, values0: []float64{260, 48, 500, 0},
		},
		{
			name: "an impl without the unit is left out", s: wheel, ch: chart{Title: "x", Units: []string{"only-ttlkit"}}, ok: true,
			tables: []Table{{Func: "X", Units: []string{"only-ttlkit"}, Groups: []Group{{Rows: []Row{
				{Impl: "ttlkit", Values: map[string]float64{"only-ttlkit": 3}},
				{Impl: "gozero", Values: map[string]float64{"other": 4}},
			}}}}},
			groups: []string{"X"}, series: []string{"ttlkit"}, values0: []float64{3},
		},
		{
			name: "unit nobody reports", s: wheel, ch: chart{Title: "x", Units: []string{"cpu-ns/msg"}}, tables: wheelTables(t), ok: false,
		},
		{
			name: "no group matches", s: wheel, ch: chart{Title: "x", Units: []string{"cpu-ns/op"}, Groups: `^Nothing$`}, tables: wheelTables(t), ok: false,
		},
		{
			name: "suite not run", s: wheel, ch: wheel.Charts[0], tables: nil, ok: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var col colors
			bc, ok := buildChart(tt.s, tt.ch, tt.tables, &col)
			if ok != tt.ok {
				t.Fatalf("ok: got %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if !slices.Equal(bc.Groups, tt.groups) {
				t.Errorf("groups: got %q, want %q", bc.Groups, tt.groups)
			}
			var names []string
			for _, s := range bc.Series {
				names = append(names, s.Name)
				if len(s.Values) != len(bc.Groups) {
					t.Errorf("series %s: got %d values for %d groups", s.Name, len(s.Values), len(bc.Groups))
				}
				if !slices.ContainsFunc(s.Values, func(v float64) bool { return !math.IsNaN(v) }) {
					t.Errorf("series %s has no value", s.Name)
				}
			}
			if !slices.Equal(names, tt.series) {
				t.Errorf("series: got %q, want %q", names, tt.series)
			}
			if !slices.Equal(bc.Series[0].Values, tt.values0) {
				t.Errorf("first series values: got %v, want %v", bc.Series[0].Values, tt.values0)
			}
			checkSVG(t, bc.SVG())
		})
	}
}

func TestColorsStable(t *testing.T) {
	var c colors
	if got := c.of("otter", false); got != palette[0] {
		t.Errorf("first peer: got %s, want %s", got, palette[0])
	}
	if got := c.of("floor", true); got != "#9a9a9a" {
		t.Errorf("baseline: got %s, want grey", got)
	}
	if got := c.of("theine", false); got != palette[1] {
		t.Errorf("second peer: got %s, want %s", got, palette[1])
	}
	if got := c.of("otter", false); got != palette[0] {
		t.Errorf("otter again: got %s, want %s", got, palette[0])
	}
	if c.of("ttlkit", false) == c.of("gozero", false) {
		t.Errorf("ttlkit and gozero share a colour")
	}
}

// TestReplayReport runs the whole tool, except the go test processes, on
// saved output: one suite fully measured with two samples, one of custom
// metrics only, one partly failed, one that does not build, one whose
// benchmarks do not exist yet, and the rest with no saved output.
func TestReplayReport(t *testing.T) {
	out := t.TempDir()
	img := filepath.Join(out, "img")
	if err := os.MkdirAll(img, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(img, "safemap-cpu.svg")
	if err := os.WriteFile(stale, []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &config{benchDir: "../..", outDir: out, replay: filepath.Join("testdata", "replay"), count: 1,
		command: "go run ./cmd/report -replay cmd/report/testdata/replay", log: io.Discard}
	err := run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "cachemem, safemap") {
		t.Errorf("run: got error %v, want one naming the failed suites cachemem, safemap", err)
	}
	b, err := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	if !strings.HasPrefix(md, "<!-- Code generated by bench/cmd/report. DO NOT EDIT. -->\n") {
		t.Errorf("the report does not start with the generated-code header:\n%.200s", md)
	}
	wantLines := []string{
		"cd bench && go run ./cmd/report -replay cmd/report/testdata/replay",
		"| benchmark | impl | `ns/op` | `cpu-ns/op` | `B/op` | `allocs/op` | `B/pending` | × best | × gozero |",
		"| SetTimer/pending=1k | **ttlkit** | 210 | 260 | 48 | 1 | 131 | **1.00×** | 0.085× |",
		"|  | gozero | 2679 | 3050 | 159 | 5 | 229 | 11.73× | 1.00× |",
		"|  | floor (baseline) | 111 | 100 | 48 | 1 | 131 | 0.38× | 0.033× |",
		"| MoveTimer/pending=1M | **ttlkit** | 339 | 500 | 0 | 0 | 108 | **1.00×** | 0.25× |",
		"Ratios on `cpu-ns/op` (lower is better); baselines, never the best peer: floor, floor+clock. Each figure is the median of 2 runs.",
		"| impl | `dup` | `early` | `max-late-ms` | `p50-late-ms` | `p99-late-ms` | × best | × gozero |",
		"| gozero | 0 | 51234 | 1500 | -2 | 1000 | 2000× | 1.00× |",
		"| **ttlkit** | 60 | 1048576 | **1.00×** | 0.50× |",
		"**Partly failed**: go test failed: BenchmarkCacheBytesPerEntry/impl=theine, BenchmarkCacheBytesPerEntry.",
		"**Failed**: the bench package does not build.",
		"./idle_child_test.go:54:30: undefined: fdSlack",
		"**Not run**: no benchmark matches `^BenchmarkIdle` yet.",
		"![Timing wheel, 1k pending: CPU per operation](img/wheel-cpu-1k.svg)",
		"| [wheel](#timing-wheel-settimer-movetimer-removetimer) | ok | — | `go test -run '^$' -bench '^BenchmarkWheel$' -benchtime 300ms -count 1 -timeout 30m .` |",
		"| GOMAXPROCS | 2 (the benchmarks' TestMain sets it; read from the -N suffix of their names) |",
		"### BenchmarkWheel ([timingwheel_test.go](../bench/timingwheel_test.go))",
	}
	lines := strings.Split(md, "\n")
	for _, w := range wantLines {
		if !slices.Contains(lines, w) {
			t.Errorf("the report lacks the line\n%s", w)
		}
	}
	if !strings.Contains(md, "Canned Test Processor") {
		t.Errorf("the report does not show the CPU go test reported")
	}
	if !strings.Contains(md, "ratios matter") && !strings.Contains(md, "Compare implementations by their ratios") {
		t.Errorf("the report lacks the shared-machine note")
	}

	// Every image the report shows exists and is well-formed; charts
	// without data are neither shown nor left on disk.
	shown := regexp.MustCompile(`\]\(img/([^)]+)\)`).FindAllStringSubmatch(md, -1)
	var files []string
	for _, m := range shown {
		files = append(files, m[1])
		data, err := os.ReadFile(filepath.Join(img, m[1]))
		if err != nil {
			t.Errorf("shown image: %v", err)
			continue
		}
		checkSVG(t, data)
	}
	wantFiles := []string{"wheel-cpu-1k.svg", "wheel-cpu-1M.svg", "wheel-bytes.svg", "wheel-lateness.svg", "cache-bytes.svg"}
	if !slices.Equal(files, wantFiles) {
		t.Errorf("images shown: got %q, want %q", files, wantFiles)
	}
	entries, err := os.ReadDir(img)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range entries {
		onDisk = append(onDisk, e.Name())
	}
	slices.Sort(onDisk)
	slices.Sort(wantFiles)
	if !slices.Equal(onDisk, wantFiles) {
		t.Errorf("files in img/: got %q, want %q (the stale safemap-cpu.svg removed)", onDisk, wantFiles)
	}
}

func TestClassify(t *testing.T) {
	okOut := "goos: linux\nBenchmarkX/impl=a-2 10 5 ns/op\nPASS\nok  \tpkg\t1s\n"
	tests := []struct {
		name   string
		stdout string
		stderr string
		runErr error
		want   Status
		note   string
	}{
		{"ok", okOut, "", nil, StatusOK, ""},
		{"no match", "PASS\nok  \tpkg\t0.01s\n", "", nil, StatusNotRun, "no benchmark matches `^BenchmarkX$` yet"},
		{"build failed", "FAIL\tpkg [build failed]\nFAIL\n", "x.go:1: undefined: y\n", &exec.ExitError{}, StatusFailed, "the bench package does not build"},
		{"benchmark failed", "BenchmarkX/impl=a-2 10 5 ns/op\n--- FAIL: BenchmarkX/impl=b\nFAIL\n", "", &exec.ExitError{}, StatusPartial, "go test failed: BenchmarkX/impl=b"},
		{"panic before any result", "panic: boom\nFAIL\tpkg\t0.1s\nFAIL\n", "", &exec.ExitError{}, StatusFailed, "go test failed"},
		{"no go command", "", "", errors.New(`exec: "go": executable file not found in $PATH`), StatusFailed, `exec: "go": executable file not found in $PATH`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := parseOutput(strings.NewReader(tt.stdout))
			if err != nil {
				t.Fatal(err)
			}
			r := &suiteRun{Args: []string{"test", "-bench", "^BenchmarkX$"}, Output: out}
			r.classify([]byte(tt.stdout), []byte(tt.stderr), tt.runErr)
			if r.Status != tt.want || r.Note != tt.note {
				t.Errorf("got %s %q, want %s %q", r.Status, r.Note, tt.want, tt.note)
			}
			if tt.stderr != "" && !strings.Contains(r.Detail, strings.TrimSpace(tt.stderr)) {
				t.Errorf("Detail %q lacks the stderr %q", r.Detail, tt.stderr)
			}
		})
	}
}

func TestGoTestArgs(t *testing.T) {
	wheel := suiteByID(t, "wheel")
	full := (&config{count: 3}).goTestArgs(wheel)
	wantFull := []string{"test", "-run", "^$", "-bench", "^BenchmarkWheel$", "-benchtime", "300ms", "-count", "3", "-timeout", "30m", "."}
	if !slices.Equal(full, wantFull) {
		t.Errorf("full: got %q, want %q", full, wantFull)
	}
	quick := (&config{count: 3, quick: true}).goTestArgs(wheel)
	wantQuick := []string{"test", "-run", "^$", "-bench", "^BenchmarkWheel$//pending=1k", "-benchtime", "200x", "-count", "1", "-timeout", "30m", "-short", "."}
	if !slices.Equal(quick, wantQuick) {
		t.Errorf("quick: got %q, want %q", quick, wantQuick)
	}
	r := &suiteRun{Args: full}
	if got, want := r.Command(), "go test -run '^$' -bench '^BenchmarkWheel$' -benchtime 300ms -count 3 -timeout 30m ."; got != want {
		t.Errorf("Command: got %q, want %q", got, want)
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "300ms", "300ms"},
		{"path", "./cmd/report", "./cmd/report"},
		{"empty", "", "''"},
		{"regexp", "^BenchmarkWheel$", "'^BenchmarkWheel$'"},
		{"alternation", "Cache|SafeMap", "'Cache|SafeMap'"},
		{"quote", "it's", `'it'\''s'`},
		{"space", "a b", "'a b'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shellQuote(tt.in); got != tt.want {
				t.Errorf("shellQuote(%q): got %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestAnchor(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"punctuation", "Timing wheel: SetTimer, MoveTimer, RemoveTimer", "timing-wheel-settimer-movetimer-removetimer"},
		{"apostrophe", "an idle wheel's CPU", "an-idle-wheels-cpu"},
		{"hyphen kept", "per-op cost", "per-op-cost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := anchor(tt.in); got != tt.want {
				t.Errorf("anchor(%q): got %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"full", nil, ""},
		{"quick with out", []string{"-quick", "-out", "/tmp/x"}, ""},
		{"quick without out", []string{"-quick"}, "-quick needs -out"},
		{"count zero", []string{"-count", "0"}, "-count must be at least 1"},
		{"bad only", []string{"-only", "("}, "-only"},
		{"stray argument", []string{"wheel"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs("../..")
			if cfg.benchDir != abs {
				t.Errorf("benchDir: got %q, want %q", cfg.benchDir, abs)
			}
			if len(tt.args) == 0 && cfg.outDir != filepath.Join(abs, "..", "doc") {
				t.Errorf("outDir: got %q, want the doc directory next to bench", cfg.outDir)
			}
		})
	}
}

// TestSuites checks the suite table: unique IDs and chart files, regexps
// that compile, something to compute ratios on and times for both modes.
func TestSuites(t *testing.T) {
	ids := map[string]bool{}
	files := map[string]bool{}
	for _, s := range suites {
		t.Run(s.ID, func(t *testing.T) {
			if s.ID == "" || ids[s.ID] {
				t.Errorf("ID %q empty or repeated", s.ID)
			}
			ids[s.ID] = true
			for _, re := range []string{s.Bench, s.QuickBench} {
				if _, err := regexp.Compile(re); err != nil {
					t.Errorf("regexp %q: %v", re, err)
				}
			}
			if s.Bench == "" || s.Benchtime == "" || s.QuickBenchtime == "" || s.Title == "" || s.About == "" {
				t.Errorf("Bench, Benchtime, QuickBenchtime, Title and About are required")
			}
			if len(s.Ratio) == 0 {
				t.Errorf("no ratio unit")
			}
			for _, ch := range s.Charts {
				if !strings.HasSuffix(ch.File, ".svg") || strings.ContainsAny(ch.File, `/\`) || files[ch.File] {
					t.Errorf("chart file %q: not a plain .svg name, or repeated", ch.File)
				}
				files[ch.File] = true
				if len(ch.Units) == 0 || ch.Title == "" {
					t.Errorf("chart %s: needs a title and units", ch.File)
				}
				if _, err := regexp.Compile(ch.Groups); err != nil {
					t.Errorf("chart %s: %v", ch.File, err)
				}
			}
		})
	}
}

// TestEveryBenchmarkReported checks that every benchmark function of the
// bench package, and of each other module a suite runs in (suite.Dir),
// runs in some suite of its module, so that a new benchmark is not
// silently left out of doc/benchmarks.md.
func TestEveryBenchmarkReported(t *testing.T) {
	dirs := map[string][]*regexp.Regexp{"": nil}
	for _, s := range suites {
		// -bench splits its pattern at slashes, one part per level; the
		// first part selects the function.
		dirs[s.Dir] = append(dirs[s.Dir], regexp.MustCompile(strings.SplitN(s.Bench, "/", 2)[0]))
	}
	for dir, res := range dirs {
		sources, err := benchmarkSources(filepath.Join("../..", dir))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for n := range sources {
			names = append(names, n)
		}
		slices.Sort(names)
		if len(names) == 0 {
			t.Fatalf("found no benchmark functions in %s", filepath.Join("../..", dir))
		}
		for _, n := range names {
			if !slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(n) }) {
				t.Errorf("%s (module bench/%s) is in no suite of bench/cmd/report/suites.go with that Dir", n, dir)
			}
		}
	}
}

// TestSuiteInOtherModule: a suite with a Dir runs there, says so in its
// command and links its benchmarks' sources there.
func TestSuiteInOtherModule(t *testing.T) {
	s := suiteByID(t, "natsjobs")
	r := &suiteRun{Suite: s, Args: (&config{count: 1}).goTestArgs(s)}
	if got, want := r.Command(), "cd ../natsjobs && go test -run "; !strings.HasPrefix(got, want) {
		t.Errorf("Command() = %q, want it to start with %q", got, want)
	}
	src, err := suiteSources("../..")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := src[sourceKey("../natsjobs", "BenchmarkEnqueue")], "../natsjobs/bench_test.go"; got != want {
		t.Errorf("source of natsjobs' BenchmarkEnqueue: got %q, want %q", got, want)
	}
	var buf bytes.Buffer
	p := &mdWriter{w: &buf}
	writeTable(p, &report{Sources: src}, s, Table{Func: "Enqueue", Units: []string{"jobs/s"},
		Groups: []Group{{Rows: []Row{{Values: map[string]float64{"jobs/s": 1}}}}}})
	if want := "### BenchmarkEnqueue ([bench_test.go](../natsjobs/bench_test.go))"; !strings.Contains(buf.String(), want) {
		t.Errorf("table heading: want %q in\n%s", want, buf.String())
	}
}

// TestReplayRecord: a replay of output saved with its run record shows the
// measuring run's command, machine and times, and says it is a replay.
func TestReplayRecord(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"wheel.txt", "accuracy.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "replay", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	measured := &report{
		Command: "go run ./cmd/report -raw /somewhere",
		Quick:   true,
		Machine: machine{CPU: "Recorded CPU 9000", Cores: 64, OS: "linux/amd64", GoVersion: "go version go1.99",
			Start: start, End: start.Add(9 * time.Minute), LoadStart: "1.00, 1.00, 1.00", LoadEnd: "2.00, 2.00, 2.00"},
		Runs: []*suiteRun{{Suite: suiteByID(t, "wheel"), Elapsed: 95 * time.Second,
			Args: (&config{quick: true, count: 1}).goTestArgs(suiteByID(t, "wheel"))}},
	}
	if err := saveRecord(dir, measured); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cfg := &config{benchDir: "../..", outDir: out, replay: dir, count: 1, command: "go run ./cmd/report -replay " + dir, log: io.Discard}
	if err := run(context.Background(), cfg); err != nil {
		t.Fatalf("run: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for _, w := range []string{
		"cd bench && go run ./cmd/report -raw /somewhere",
		"This copy was rendered from that run's saved output by `go run ./cmd/report -replay " + dir + "`.",
		"| CPU | Recorded CPU 9000 |",
		"| cores | 64 |",
		"| Go | go version go1.99 |",
		"| date | 2030-01-02 03:04 UTC, the whole run took 9m0s |",
		"| load average | at start 1.00, 1.00, 1.00; at end 2.00, 2.00, 2.00 |",
		"| [wheel](#timing-wheel-settimer-movetimer-removetimer) | ok | 1m35s | `go test -run '^$' -bench '^BenchmarkWheel$//pending=1k' -benchtime 200x -count 1 -timeout 30m -short .` |",
	} {
		if !slices.Contains(lines, w) {
			t.Errorf("the replayed report lacks the line\n%s", w)
		}
	}
	if !strings.Contains(string(b), "**Quick mode**") {
		t.Errorf("the replay of a quick run does not say it is one")
	}
}

func TestGoTestArgsCount(t *testing.T) {
	tests := []struct {
		name  string
		suite string
		cfg   config
		want  string
	}{
		{"timed suite", "wheel", config{count: 5}, "5"},
		{"one-shot suite", "accuracy", config{count: 5}, "1"},
		{"quick", "wheel", config{count: 5, quick: true}, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.cfg.goTestArgs(suiteByID(t, tt.suite))
			i := slices.Index(args, "-count")
			if i < 0 || args[i+1] != tt.want {
				t.Errorf("got %q, want -count %s", args, tt.want)
			}
		})
	}
}

// idleRatioLine is a BenchmarkIdleEchoRatio result: every variant's figure
// is a unit of one line, there is no impl= element.
const idleRatioLine = "BenchmarkIdleEchoRatio/server=child-2         \t   13864\t     16279 bare-srv-ns/op\t     10000 conns\t" +
	"     17474 deadline-srv-ns/op\t         1.073 deadline/bare\t     15939 ttlkit-srv-ns/op\t         0.9791 ttlkit/bare\t" +
	"     15721 wrapper-srv-ns/op\t         0.9657 wrapper/bare\n"

func TestBuildUnitSeriesChart(t *testing.T) {
	out, err := parseOutput(strings.NewReader(idleRatioLine))
	if err != nil {
		t.Fatal(err)
	}
	tables := buildTables(out.Results)
	idle := suiteByID(t, "idle")
	i := slices.IndexFunc(idle.Charts, func(c chart) bool { return c.UnitSeries })
	if i < 0 {
		t.Fatal("the idle suite has no UnitSeries chart")
	}
	var col colors
	bc, ok := buildChart(idle, idle.Charts[i], tables, &col)
	if !ok {
		t.Fatal("no chart from an IdleEchoRatio line")
	}
	if want := []string{"server=child"}; !slices.Equal(bc.Groups, want) {
		t.Errorf("groups: got %q, want %q", bc.Groups, want)
	}
	want := map[string]float64{"bare": 16279, "ttlkit": 15939, "deadline": 17474, "wrapper": 15721}
	var names []string
	for _, s := range bc.Series {
		names = append(names, s.Name)
		if len(s.Values) != 1 || s.Values[0] != want[s.Name] {
			t.Errorf("series %s: got %v, want [%v]", s.Name, s.Values, want[s.Name])
		}
	}
	if w := []string{"bare", "ttlkit", "deadline", "wrapper"}; !slices.Equal(names, w) {
		t.Errorf("series: got %q, want %q", names, w)
	}
	if got := col.of("bare", true); got != "#9a9a9a" {
		t.Errorf("bare, a baseline: got colour %s, want grey", got)
	}
	if s := checkSVG(t, bc.SVG()); s.bars != 4 {
		t.Errorf("bars: got %d, want 4", s.bars)
	}

	// A unit the line lacks is left out; no unit at all, no chart.
	ch := idle.Charts[i]
	ch.Units = append([]string{"nosuch-srv-ns/op"}, ch.Units[:1]...)
	if bc, ok := buildChart(idle, ch, tables, &col); !ok || len(bc.Series) != 1 || bc.Series[0].Name != "bare" {
		t.Errorf("with a missing unit: got ok %v and %+v, want the bare series alone", ok, bc)
	}
	ch.Units = []string{"nosuch-srv-ns/op"}
	if _, ok := buildChart(idle, ch, tables, &col); ok {
		t.Errorf("a chart of units nobody reports: got ok, want no chart")
	}
}

func TestWriteTableWithoutImpls(t *testing.T) {
	out, err := parseOutput(strings.NewReader(idleRatioLine))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	p := &mdWriter{w: &b}
	writeTable(p, &report{}, suiteByID(t, "idle"), buildTables(out.Results)[0])
	lines := strings.Split(b.String(), "\n")
	for _, w := range []string{
		"| benchmark | `bare-srv-ns/op` | `conns` | `deadline-srv-ns/op` | `deadline/bare` | `ttlkit-srv-ns/op` | `ttlkit/bare` | `wrapper-srv-ns/op` | `wrapper/bare` |",
		"| server=child | 16279 | 10000 | 17474 | 1.07 | 15939 | 0.979 | 15721 | 0.966 |",
	} {
		if !slices.Contains(lines, w) {
			t.Errorf("the table lacks the line\n%s\ngot:\n%s", w, b.String())
		}
	}
}

// TestWriteTableColumns: a suite's Columns come first in its tables, in its
// order, whatever order go test printed the units in (sorted by name); the
// units it does not list follow.
func TestWriteTableColumns(t *testing.T) {
	const lines = "BenchmarkWheelMixed/1msx2048/impl=ttlkit-2 \t 3\t 1.314 added-ms/s\t 2.333 added-se-ms/s\t 5690 base-fires/s\t 53.17 base-ms/s\t 5690 far-fires/s\t 54.49 far-ms/s\t 7 other/s\n" +
		"BenchmarkWheelMixed/1msx2048/impl=gozero-2 \t 3\t 168.8 added-ms/s\t 4.095 added-se-ms/s\t 5213 base-fires/s\t 60.40 base-ms/s\t 5183 far-fires/s\t 229.2 far-ms/s\n"
	out, err := parseOutput(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	s := suiteByID(t, "wheelmixed")
	s.Columns = []string{"base-ms/s", "far-ms/s", "nosuch/s", "added-ms/s"}
	var b strings.Builder
	writeTable(&mdWriter{w: &b}, &report{}, s, buildTables(out.Results)[0])
	got := strings.Split(b.String(), "\n")
	for _, w := range []string{
		"| benchmark | impl | `base-ms/s` | `far-ms/s` | `added-ms/s` | `added-se-ms/s` | `base-fires/s` | `far-fires/s` | `other/s` | × best | × gozero |",
		"| 1msx2048 | **ttlkit** | 53.2 | 54.5 | 1.31 | 2.33 | 5690 | 5690 | 7 | **1.00×** | 0.24× |",
		"|  | gozero | 60.4 | 229 | 169 | 4.09 | 5213 | 5183 |  | 4.21× | 1.00× |",
	} {
		if !slices.Contains(got, w) {
			t.Errorf("the table lacks the line\n%s\ngot:\n%s", w, b.String())
		}
	}
}

const hitLines = "note: BenchmarkHitRatio: real traces skipped: no folder\n" +
	"BenchmarkHitRatio/trace=loop/cap=25%/impl=ttlkit-2 \t 1\t 0 hit%\t 252.0 max-held\t 246.4 ns/access\n" +
	"BenchmarkHitRatio/trace=loop/cap=25%/impl=otter-2 \t 1\t 23.86 hit%\t 252.0 max-held\t 511.4 ns/access\n" +
	"BenchmarkHitRatio/trace=loop/cap=25%/impl=arc-2 \t 1\t 0 hit%\t 253.0 max-held\t 589.5 ns/access\t 3 over-cap\n" +
	"BenchmarkHitRatio/trace=loop/cap=25%/impl=belady-2 \t 1\t 24.88 hit%\t 252.0 max-held\t 72.49 ns/access\n" +
	"BenchmarkHitRatio/trace=all/cap=mean/impl=ttlkit-2 \t 1\t 24 cells\t 42.55 hit%\n" +
	"BenchmarkHitRatio/trace=all/cap=mean/impl=otter-2 \t 1\t 24 cells\t 44.19 hit%\n" +
	"BenchmarkHitRatio/trace=all/cap=mean/impl=belady-2 \t 1\t 24 cells\t 55.49 hit%\n"

// TestWriteMatrix: a suite with a Matrix unit shows it as a table of groups
// by implementations, the best peer in bold (never a baseline, even when
// it is higher), followed by the full table folded away; the benchmark's
// notes are quoted.
func TestWriteMatrix(t *testing.T) {
	out, err := parseOutput(strings.NewReader(hitLines))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"BenchmarkHitRatio: real traces skipped: no folder"}; !slices.Equal(out.Notes, want) {
		t.Errorf("notes %q, want %q", out.Notes, want)
	}
	r := &suiteRun{Suite: suiteByID(t, "hitratio"), Status: StatusOK, Output: out, Tables: buildTables(out.Results)}
	var b strings.Builder
	writeSuite(&mdWriter{w: &b}, &report{}, r, "")
	md := b.String()
	got := strings.Split(md, "\n")
	for _, w := range []string{
		"> BenchmarkHitRatio: real traces skipped: no folder",
		"| benchmark | **ttlkit** | otter | arc | belady (ref) |",
		"| trace=loop/cap=25% | 0 | **23.9** | 0 | 24.9 |",
		"| trace=all/cap=mean | 42.5 | **44.2** |  | 55.5 |",
		"<details><summary>Every figure of BenchmarkHitRatio</summary>",
		"| benchmark | impl | `hit%` | `max-held` | `over-cap` | `ns/access` | `cells` | × best |",
		"|  | arc | 0 | 253 | 3 | 590 |  | 0.00× |",
	} {
		if !slices.Contains(got, w) {
			t.Errorf("the section lacks the line\n%s\ngot:\n%s", w, md)
		}
	}
	if strings.Index(md, "| benchmark | **ttlkit** |") > strings.Index(md, "<details>") {
		t.Errorf("the matrix does not come before the folded table:\n%s", md)
	}
}

// TestRunSuitesQuickWaitsBeside: in -quick mode the suites marked Waits
// run beside the others, which never overlap one another; in full mode no
// two suites overlap. Runs come back in the suites' order either way.
func TestRunSuitesQuickWaitsBeside(t *testing.T) {
	list := []suite{{ID: "a"}, {ID: "slow", Waits: true}, {ID: "b"}, {ID: "c"}}
	for _, quick := range []bool{false, true} {
		var mu sync.Mutex
		running := map[string]bool{}
		var overlaps []string
		// In quick mode b waits until the waiting suite has started, which
		// then waits until b has.
		started, release := make(chan struct{}), make(chan struct{})
		runOne := func(s suite) *suiteRun {
			mu.Lock()
			for id := range running {
				overlaps = append(overlaps, id+"+"+s.ID)
			}
			running[s.ID] = true
			mu.Unlock()
			if s.ID == "slow" && quick {
				close(started)
				<-release
			}
			if s.ID == "b" && quick {
				<-started
				close(release)
			}
			mu.Lock()
			delete(running, s.ID)
			mu.Unlock()
			return &suiteRun{Suite: s}
		}
		runs := runSuites(context.Background(), quick, list, runOne)
		for i, r := range runs {
			if r == nil || r.Suite.ID != list[i].ID {
				t.Fatalf("quick=%v: run %d is %+v, want suite %s", quick, i, r, list[i].ID)
			}
		}
		for _, o := range overlaps {
			if !quick || !strings.Contains(o, "slow") {
				t.Errorf("quick=%v: %s ran at the same time", quick, o)
			}
		}
		if quick && len(overlaps) == 0 {
			t.Errorf("quick: the waiting suite ran beside no other")
		}
	}
}
