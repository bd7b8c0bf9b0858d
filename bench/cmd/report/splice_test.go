package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// abcSuites are three suites for the splice tests.
var abcSuites = []suite{
	{ID: "a", Title: "Suite A", About: "About A.", Bench: "^BenchmarkA$", Benchtime: "1x", OneShot: true},
	{ID: "b", Title: "Suite B", About: "About B, as the tool now writes it.", Bench: "^BenchmarkB$", Benchtime: "1x", OneShot: true},
	{ID: "c", Title: "Suite C", About: "About C.", Bench: "^BenchmarkC$", Benchtime: "1x", OneShot: true},
}

const oldHead = generatedMarker + `

# Benchmarks

Regenerate it with:

` + "```sh\ncd bench && go run ./cmd/report -raw /tmp/full\n```" + `

**Last partial run**: an older one, which this run's paragraph replaces.

The metrics are defined elsewhere.

## Machine

| | |
| --- | --- |
| date | 2026-01-01 00:00 UTC, the whole run took 10m0s |

## Suites

| suite | status | time | command (from ` + "`bench/`" + `) |
| --- | --- | ---: | --- |
`

const (
	rowA     = "| [a](#suite-a) | ok | 1s | `go test -run '^$' -bench '^BenchmarkA$' -benchtime 1x -count 1 -timeout 30m .` |"
	rowB     = "| [b](#suite-b) | ok | 2s | `go test -run '^$' -bench '^BenchmarkB$' -benchtime 1x -count 1 -timeout 30m .` |"
	rowC     = "| [c](#suite-c) | ok | 3s | `go test -run '^$' -bench '^BenchmarkC$' -benchtime 1x -count 1 -timeout 30m .` |"
	sectionA = "## Suite A\n\n> A note added by hand after the run, with a fence:\n\n```\n## not a heading\n```\n\n" +
		"![A chart](img/a.svg)\n\n### BenchmarkA\n\n| impl | `x/op` |\n| --- | ---: |\n| one | 1 |\n\n"
	sectionB = "## Suite B\n\nAbout B, as the old run wrote it.\n\n> OLD NOTE on B.\n\n### BenchmarkB\n\n| impl | `x/op` |\n| --- | ---: |\n| one | 999 |\n\n"
	sectionC = "## Suite C\n\nAbout C.\n\n### BenchmarkC\n\n| impl | `x/op` |\n| --- | ---: |\n| one | 3 |\n"
)

// abcReport is a run of the abc suites in which only b was selected and
// measured.
func abcReport(t *testing.T) *report {
	t.Helper()
	out, err := parseOutput(strings.NewReader("BenchmarkB/impl=one-2 \t 1\t 42.00 x/op\nPASS\n"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	rep := &report{Command: "go run ./cmd/report -only '^b$'", Count: 1,
		Machine: machine{Commit: "abc1234", Start: start, End: start.Add(39 * time.Minute), LoadStart: "9.00, 9.00, 9.00", LoadEnd: "8.00, 8.00, 8.00"}}
	cfg := &config{count: 1}
	for _, s := range abcSuites {
		r := &suiteRun{Suite: s, Args: cfg.goTestArgs(s), Status: StatusNotRun, Note: "not selected by -only ^b$"}
		if s.ID == "b" {
			r.Status, r.Note, r.Output, r.Tables, r.Elapsed = StatusOK, "", out, buildTables(out.Results), 5*time.Second
		}
		rep.Runs = append(rep.Runs, r)
	}
	return rep
}

func splice(t *testing.T, old string) string {
	t.Helper()
	pg, err := parsePage([]byte(old))
	if err != nil {
		t.Fatalf("parsePage: %v", err)
	}
	if err := checkSplice(pg, abcSuites); err != nil {
		t.Fatalf("checkSplice: %v", err)
	}
	var b bytes.Buffer
	if err := writeSpliced(&b, abcReport(t), pg, regexp.MustCompile(`^b$`).MatchString); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

const bRun = "Regenerated on 2026-11-28 02:00 UTC by `cd bench && go run ./cmd/report -only '^b$'` " +
	"(commit `abc1234`; the run took 39m0s; load average at start 9.00, 9.00, 9.00, at end 8.00, 8.00, 8.00)."

func TestSpliceReplacesOnlySelected(t *testing.T) {
	old := oldHead + rowA + "\n" + rowB + "\n" + rowC + "\n\n" + sectionA + sectionB + sectionC
	got := splice(t, old)

	// A and C, the machine table and the rows of a and c: byte for byte.
	for _, keep := range []string{sectionA, sectionC, rowA + "\n", rowC + "\n",
		"## Machine\n\n| | |\n| --- | --- |\n| date | 2026-01-01 00:00 UTC, the whole run took 10m0s |\n\n"} {
		if !strings.Contains(got, keep) {
			t.Errorf("the spliced page lost\n%s\n--- page:\n%s", keep, got)
		}
	}
	// B: the new section, with the run that measured it.
	wantB := "## Suite B\n\nAbout B, as the tool now writes it.\n\n```sh\n" +
		"go test -run '^$' -bench '^BenchmarkB$' -benchtime 1x -count 1 -timeout 30m .\n```\n\n" + bRun + "\n\n"
	if !strings.Contains(got, wantB) {
		t.Errorf("the spliced page lacks B's new section opening\n%s\n--- page:\n%s", wantB, got)
	}
	if !strings.Contains(got, "| one | 42 |") {
		t.Errorf("B's new figure is missing:\n%s", got)
	}
	for _, gone := range []string{"OLD NOTE", "| one | 999 |", rowB, "an older one"} {
		if strings.Contains(got, gone) {
			t.Errorf("the spliced page still has %q", gone)
		}
	}
	wantRow := "| [b](#suite-b) | ok (regenerated 2026-11-28 02:00 UTC with -only) | 5s | `go test -run '^$' -bench '^BenchmarkB$' -benchtime 1x -count 1 -timeout 30m .` |"
	if !strings.Contains(got, rowA+"\n"+wantRow+"\n"+rowC+"\n") {
		t.Errorf("the table of suites: want rows a (old), b (new), c (old) in order; page:\n%s", got)
	}
	// The head keeps the full run's command and gets the same note from
	// every partial run, so that branches regenerating different suites
	// do not conflict over it.
	wantHead := "```sh\ncd bench && go run ./cmd/report -raw /tmp/full\n```\n\n" + partialNote + "\n\nThe metrics"
	if !strings.Contains(got, wantHead) {
		t.Errorf("the head does not keep the full run's command with the partial-run note:\n%s", got)
	}
	if n := strings.Count(got, partialPrefix); n != 1 {
		t.Errorf("%q appears %d times, want 1", partialPrefix, n)
	}
	head := got[:strings.Index(got, "## Machine")]
	if strings.Contains(head, "-only") && !strings.Contains(partialNote, "-only") || strings.Contains(head, "'^b$'") {
		t.Errorf("the head names this run, so two branches' partial runs would conflict over it:\n%s", head)
	}
	// Sections in suite order.
	if a, b, c := strings.Index(got, "## Suite A"), strings.Index(got, "## Suite B"), strings.Index(got, "## Suite C"); !(a < b && b < c) {
		t.Errorf("sections at %d, %d, %d: want A, B, C in order", a, b, c)
	}
	// Splicing the spliced page again changes nothing but B.
	if again := splice(t, got); again != got {
		t.Errorf("a second identical splice changed the page:\n%s\n--- was:\n%s", again, got)
	}
}

func TestSpliceAddsMissingSectionInSuiteOrder(t *testing.T) {
	old := oldHead + rowA + "\n" + rowC + "\n\n" + sectionA + sectionC
	got := splice(t, old)
	a, b, c := strings.Index(got, "## Suite A"), strings.Index(got, "## Suite B"), strings.Index(got, "## Suite C")
	if !(a >= 0 && a < b && b < c) {
		t.Errorf("sections at %d, %d, %d: want B between A and C\n%s", a, b, c, got)
	}
	if !strings.Contains(got, sectionA+"## Suite B\n") || !strings.Contains(got, sectionA) || !strings.HasSuffix(got, sectionC) {
		t.Errorf("A and C not kept around the new B:\n%s", got)
	}
	if !strings.Contains(got, rowA+"\n| [b](#suite-b) | ok (regenerated") {
		t.Errorf("b's row not inserted after a's:\n%s", got)
	}
}

func TestSpliceRefusesMalformedPage(t *testing.T) {
	good := oldHead + rowA + "\n\n" + sectionA + sectionC
	for _, tc := range []struct {
		name, page, want string
	}{
		{"no marker", strings.TrimPrefix(good, generatedMarker), "does not start with"},
		{"open code block", good + "```\n## Suite B\n", "line 52: a code block is never closed"},
		{"heading twice", good + sectionA, "the heading \"Suite A\" appears again (first on line 27)"},
		{"unknown section", good + "## Suite D\n\ntext\n", "line 52: the section \"Suite D\" is no suite's title"},
		{"no suites table", strings.Replace(good, "## Suites\n", "Suites\n", 1), "it has no \"## Suites\" section"},
		{"no command", strings.Replace(good, "```sh\n", "```\n", 1), "no ```sh block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg, err := parsePage([]byte(tc.page))
			if err == nil {
				err = checkSplice(pg, abcSuites)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
	pg, err := parsePage([]byte(good))
	if err == nil {
		err = checkSplice(pg, abcSuites)
	}
	if err != nil {
		t.Errorf("the well-formed page: %v", err)
	}
}

// TestOnlyKeepsOtherSections runs the tool with -only on a page an earlier
// run wrote: the other suites' sections and charts stay as they were.
func TestOnlyKeepsOtherSections(t *testing.T) {
	out := t.TempDir()
	replay := filepath.Join("testdata", "replay")
	full := &config{benchDir: "../..", outDir: out, replay: replay, count: 1, command: "go run ./cmd/report -raw /tmp/full", log: io.Discard}
	run(context.Background(), full) // some canned suites fail: the page is written anyway
	mdPath := filepath.Join(out, "benchmarks.md")
	b, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	// Notes added by hand to wheel's and accuracy's sections, and an older
	// wheel chart: -only accuracy keeps the first two, drops the second.
	wheelNote := "> Measured again by hand: kept.\n\n"
	accNote := "> OLD accuracy note: replaced.\n\n"
	page := strings.Replace(string(b), "![Timing wheel, 1k pending", wheelNote+"![Timing wheel, 1k pending", 1)
	page = strings.Replace(page, "### BenchmarkFiringAccuracy", accNote+"### BenchmarkFiringAccuracy", 1)
	if err := os.WriteFile(mdPath, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	oldChart := []byte("<svg>an earlier run's</svg>")
	wheelChart := filepath.Join(out, "img", "wheel-cpu-1k.svg")
	if err := os.WriteFile(wheelChart, oldChart, 0o644); err != nil {
		t.Fatal(err)
	}
	accChart := filepath.Join(out, "img", "wheel-lateness.svg")
	if err := os.WriteFile(accChart, oldChart, 0o644); err != nil {
		t.Fatal(err)
	}

	cfg := &config{benchDir: "../..", outDir: out, replay: replay, count: 1, only: regexp.MustCompile(`^accuracy$`),
		command: "go run ./cmd/report -only '^accuracy$'", log: io.Discard}
	if err := run(context.Background(), cfg); err != nil {
		t.Fatalf("run -only accuracy: %v", err)
	}
	b, err = os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	oldPage, _ := parsePage([]byte(page))
	newPage, err := parsePage(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range oldPage.sections {
		if s.title == "Suites" || s.title == "Timing wheel: firing accuracy" {
			continue
		}
		ns, ok := newPage.section(s.title)
		if !ok || strings.Join(ns.lines, "\n") != strings.Join(s.lines, "\n") {
			t.Errorf("section %q changed or lost", s.title)
		}
	}
	if !strings.Contains(got, wheelNote) || strings.Contains(got, accNote) {
		t.Errorf("want the wheel note kept and the accuracy note replaced")
	}
	if !strings.Contains(got, "| [cachemem](#cache-bytes-per-entry) | partly failed") {
		t.Errorf("the other suites' rows of the table are not kept")
	}
	if c, _ := os.ReadFile(wheelChart); !bytes.Equal(c, oldChart) {
		t.Errorf("-only accuracy rewrote wheel's chart")
	}
	if c, _ := os.ReadFile(accChart); bytes.Equal(c, oldChart) {
		t.Errorf("-only accuracy did not redraw its own chart")
	}

	// A page it cannot split: an error before anything runs, the page as it was.
	bad := strings.Replace(got, "## Timing wheel: firing accuracy", "## Timing wheel: firing accuracy (renamed)", 1)
	if err := os.WriteFile(mdPath, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "is no suite's title") || !strings.Contains(err.Error(), "run without -only") {
		t.Errorf("run on a page with an unknown section: got %v, want an error naming it", err)
	}
	if b, _ := os.ReadFile(mdPath); string(b) != bad {
		t.Errorf("the page was changed after the error")
	}
}
