// Command report runs ttlkit's comparative benchmark suites and writes
// doc/benchmarks.md and the SVG charts in doc/img/ from their output:
//
//	cd bench
//	go run ./cmd/report                     # full mode: rewrites ../doc/benchmarks.md and ../doc/img/
//	go run ./cmd/report -quick -out /tmp/r  # smoke test: -short sizes, tiny benchtimes, a few minutes
//
// The full mode takes about 11 minutes on a shared 2-core machine.
// Each suite (see suites.go) is one `go test -run '^$' -bench REGEXP`
// process in the bench module, so every implementation in it is measured
// side by side under the same conditions. The tool parses the standard
// benchmark lines, groups them by name without the "impl=" element, takes
// the median over -count runs, and writes per suite a table with ratios to
// the best peer and to go-zero, and the suite's charts. A suite whose
// benchmarks do not exist yet is reported as not run; one that fails is
// reported with the end of its output, and the tool then exits with status 1
// after writing the report. To add benchmarks to the report, add a suite to
// the table in suites.go.
//
// Flags:
//
//	-quick        tiny benchtimes and -short; needs -out (never overwrites doc/); the suites
//	              that mostly wait on the clock (Waits in suites.go) run beside the others
//	-out DIR      where benchmarks.md and img/ go (default: the doc directory next to bench)
//	-count N      runs of each benchmark; tables show the median (default 3;
//	              -quick, and suites that measure one round per process, run once)
//	-only REGEXP  run only the suites whose ID matches and replace their sections (and
//	              charts) in the existing benchmarks.md, keeping every other section,
//	              chart and row of the table of suites as an earlier run wrote it; the
//	              head names the run and what it regenerated, and each regenerated
//	              section its date, commit and load. A page it cannot split (a
//	              heading that is no suite's title, a code block left open) is an
//	              error before anything runs; without a page, the others are not run
//	-raw DIR      also save each suite's raw go test output as DIR/ID.txt (for
//	              benchstat) and the run's command, machine and times as DIR/run.json
//	-replay DIR   render the report again from the output -raw saved in DIR,
//	              without running anything; it shows the command, machine and
//	              times of the run that measured it
//	-v            echo go test's output while it runs
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// config is one invocation of the tool.
type config struct {
	benchDir string // the bench module
	outDir   string // benchmarks.md goes here, the charts in outDir/img
	quick    bool
	count    int
	only     *regexp.Regexp
	rawDir   string
	replay   string
	verbose  bool
	command  string    // the tool's command line as the report shows it
	log      io.Writer // progress
}

const benchModule = "github.com/ttlkit/ttlkit/bench"

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	cfg := &config{log: os.Stderr}
	var only string
	fs.BoolVar(&cfg.quick, "quick", false, "smoke test: tiny benchtimes and -short (needs -out)")
	fs.StringVar(&cfg.outDir, "out", "", "output directory for benchmarks.md and img/ (default: ../doc from the bench module)")
	fs.IntVar(&cfg.count, "count", 3, "runs of each benchmark; tables show the median (-quick and one-round suites: 1)")
	fs.StringVar(&only, "only", "", "run only the suites whose ID matches this regexp")
	fs.StringVar(&cfg.rawDir, "raw", "", "save each suite's raw go test output in this directory")
	fs.StringVar(&cfg.replay, "replay", "", "read raw outputs saved by -raw from this directory instead of running")
	fs.BoolVar(&cfg.verbose, "v", false, "echo go test's output")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.count < 1 {
		return nil, errors.New("-count must be at least 1")
	}
	if cfg.quick && cfg.outDir == "" {
		return nil, errors.New("-quick needs -out: quick-mode numbers must not replace doc/benchmarks.md")
	}
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			return nil, fmt.Errorf("-only: %v", err)
		}
		cfg.only = re
	}
	dir, err := findBenchModule()
	if err != nil {
		return nil, err
	}
	cfg.benchDir = dir
	if cfg.outDir == "" {
		cfg.outDir = filepath.Join(dir, "..", "doc")
	}
	cfg.command = shellJoin(append([]string{"go", "run", "./cmd/report"}, args...))
	return cfg, nil
}

// findBenchModule walks up from the working directory to the directory
// whose go.mod declares the bench module.
func findBenchModule() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePath(string(b)) == benchModule {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("not inside the %s module: run from bench/", benchModule)
		}
		dir = parent
	}
}

func modulePath(gomod string) string {
	for _, l := range strings.Split(gomod, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// runSuites runs every suite of list through runOne and returns their runs
// in list's order. Suites run one at a time, so that none measures beside
// another, except in -quick mode: there each suite marked Waits starts at
// once in a goroutine of its own, beside the others (which still run one
// at a time). Quick figures are a smoke test, not measurements, and the
// waiting suites barely use the CPU. Once ctx ends no further suite
// starts; the runs of those are nil.
func runSuites(ctx context.Context, quick bool, list []suite, runOne func(suite) *suiteRun) []*suiteRun {
	runs := make([]*suiteRun, len(list))
	var wg sync.WaitGroup
	for i, s := range list {
		if quick && s.Waits {
			wg.Go(func() { runs[i] = runOne(s) })
		}
	}
	for i, s := range list {
		if quick && s.Waits {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		runs[i] = runOne(s)
	}
	wg.Wait()
	return runs
}

// run runs (or replays) every suite and writes the report. It returns an
// error when the report could not be written or some suite failed; the
// report is written in either case.
func run(ctx context.Context, cfg *config) error {
	rep := &report{Quick: cfg.quick, Count: cfg.count, Command: cfg.command, Charts: map[string][]renderedChart{}}
	rep.Machine = probeMachine(ctx, cfg.benchDir)
	if src, err := suiteSources(cfg.benchDir); err == nil {
		rep.Sources = src
	} else {
		fmt.Fprintf(cfg.log, "report: reading the benchmark sources: %v (tables will not link them)\n", err)
	}
	mdPath := filepath.Join(cfg.outDir, "benchmarks.md")
	selected := func(string) bool { return true }
	var old *page // the page -only splices into; nil for a whole page
	if cfg.only != nil {
		selected = cfg.only.MatchString
		b, err := os.ReadFile(mdPath)
		switch {
		case errors.Is(err, os.ErrNotExist):
			// Nothing to keep: a whole page, the others not run.
		case err != nil:
			return err
		default:
			if old, err = parsePage(b); err == nil {
				err = checkSplice(old, suites)
			}
			if err != nil {
				return fmt.Errorf("-only keeps the other suites' sections of %s, but cannot split it: %v "+
					"(fix the page, or run without -only to rewrite all of it)", mdPath, err)
			}
		}
	}
	var rec runRecord
	haveRec := false
	if cfg.replay != "" {
		var err error
		if rec, haveRec, err = loadRecord(cfg.replay); err != nil {
			return err
		}
	}
	rep.Runs = runSuites(ctx, cfg.quick, suites, func(s suite) *suiteRun { return cfg.runSuite(ctx, s) })
	if err := ctx.Err(); err != nil {
		return err
	}
	rep.Machine.End = time.Now()
	rep.Machine.LoadEnd = loadAverage()
	for _, r := range rep.Runs {
		if r.Output != nil && r.Output.Header["cpu"] != "" {
			rep.Machine.CPUTesting = r.Output.Header["cpu"]
			break
		}
	}
	if cfg.rawDir != "" && cfg.replay == "" {
		if err := saveRecord(cfg.rawDir, rep); err != nil {
			return err
		}
	}
	if haveRec {
		// The figures are the measuring run's: so are the command, the
		// machine and the times shown with them.
		rep.ReplayCommand = rep.Command
		rep.Command, rep.Machine, rep.Quick = rec.Command, rec.Machine, rec.Quick
		for _, r := range rep.Runs {
			r.Elapsed = rec.Elapsed[r.Suite.ID]
			if args, ok := rec.Args[r.Suite.ID]; ok {
				r.Args = args
			}
		}
	}

	imgDir := filepath.Join(cfg.outDir, "img")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return err
	}
	var col colors
	for _, r := range rep.Runs {
		if !selected(r.Suite.ID) {
			continue // -only: its charts are the earlier run's
		}
		for _, ch := range r.Suite.Charts {
			path := filepath.Join(imgDir, ch.File)
			bc, ok := buildChart(r.Suite, ch, r.Tables, &col)
			if !ok {
				// No data: remove a chart left by an earlier run, so that
				// the report never shows figures it did not measure.
				if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
				continue
			}
			svg := bc.SVG()
			if err := os.WriteFile(path, svg, 0o644); err != nil {
				return err
			}
			rep.Charts[r.Suite.ID] = append(rep.Charts[r.Suite.ID], renderedChart{File: ch.File, Title: ch.Title, SVG: svg})
		}
	}

	var md bytes.Buffer
	var err error
	if old != nil {
		err = writeSpliced(&md, rep, old, selected)
	} else {
		err = writeMarkdown(&md, rep)
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(mdPath, md.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(cfg.log, "report: wrote %s and %d charts in %s\n", mdPath, countCharts(rep), imgDir)

	var failed []string
	for _, r := range rep.Runs {
		if r.Status == StatusFailed || r.Status == StatusPartial {
			failed = append(failed, r.Suite.ID)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("suites failed: %s (see the report)", strings.Join(failed, ", "))
	}
	return nil
}

func countCharts(rep *report) int {
	n := 0
	for _, cs := range rep.Charts {
		n += len(cs)
	}
	return n
}
