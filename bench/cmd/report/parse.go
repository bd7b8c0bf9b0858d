package main

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// A Result is one benchmark result line of `go test -bench` output:
//
//	BenchmarkWheel/SetTimer/pending=1k/impl=ttlkit-2   1716384   208.1 ns/op   265.6 cpu-ns/op
//
// With -count N the same Name appears N times, as N Results.
type Result struct {
	Name  string // full name without the -GOMAXPROCS suffix
	Procs int    // the suffix; 1 when there was none (GOMAXPROCS 1)
	Iters int64
	// Metrics maps each unit ("ns/op", "cpu-ns/op", "B/pending", ...) to its
	// value. Units keep the order they had on the line in Units.
	Metrics map[string]float64
	Units   []string
}

// Output is everything parseOutput understood in one `go test` run.
type Output struct {
	Results []Result
	// Failed and Skipped hold the names from "--- FAIL: name" and
	// "--- SKIP: name" lines (suffix stripped), in order of appearance.
	Failed, Skipped []string
	// Notes are the lines a benchmark printed starting with "note: ", without
	// that prefix: what it wants the report to say (a part skipped, and why).
	// go test shows a skipped benchmark's message only with -v.
	Notes []string
	// Header holds the "key: value" lines go test prints before the first
	// benchmark: goos, goarch, pkg, cpu.
	Header map[string]string
}

// procsSuffix is the "-N" the testing package appends to a benchmark name
// when GOMAXPROCS is not 1.
var procsSuffix = regexp.MustCompile(`-(\d+)$`)

// splitProcs strips the GOMAXPROCS suffix from a benchmark name. A name
// that itself ends in "-<digits>" is indistinguishable from a suffixed one;
// the benchmarks in this module do not use such names.
func splitProcs(name string) (string, int) {
	m := procsSuffix.FindStringSubmatchIndex(name)
	if m == nil {
		return name, 1
	}
	n, err := strconv.Atoi(name[m[2]:m[3]])
	if err != nil {
		return name, 1
	}
	return name[:m[0]], n
}

// parseOutput reads the standard output of `go test -bench`. Lines it does
// not recognise (logs, PASS, ok) are ignored. A result whose name and
// figures were split over two lines by output the benchmark printed in
// between (the testing package writes the name before running it) is
// joined again: a "Benchmark..." line with no figures is remembered, and a
// following line that starts with an iteration count completes it.
func parseOutput(r io.Reader) (*Output, error) {
	out := &Output{Header: map[string]string{}}
	pending := "" // a name still waiting for its figures
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch {
		case strings.HasPrefix(fields[0], "Benchmark"):
			if res, ok := parseFigures(fields[0], fields[1:]); ok {
				out.Results = append(out.Results, res)
				pending = ""
			} else {
				pending = fields[0]
			}
		case pending != "" && isCount(fields[0]):
			if res, ok := parseFigures(pending, fields); ok {
				out.Results = append(out.Results, res)
				pending = ""
			}
		case strings.HasPrefix(line, notePrefix):
			out.Notes = append(out.Notes, strings.TrimSpace(strings.TrimPrefix(line, notePrefix)))
		case strings.HasPrefix(strings.TrimSpace(line), "--- FAIL: ") && len(fields) >= 3:
			name, _ := splitProcs(fields[2])
			out.Failed = append(out.Failed, name)
		case strings.HasPrefix(strings.TrimSpace(line), "--- SKIP: ") && len(fields) >= 3:
			name, _ := splitProcs(fields[2])
			out.Skipped = append(out.Skipped, name)
		case len(out.Results) == 0 && pending == "":
			if k, v, ok := strings.Cut(line, ": "); ok && isHeaderKey(k) {
				out.Header[k] = strings.TrimSpace(v)
			}
		}
	}
	return out, sc.Err()
}

// notePrefix starts a line a benchmark prints for the report (Output.Notes).
const notePrefix = "note: "

func isHeaderKey(k string) bool {
	switch k {
	case "goos", "goarch", "pkg", "cpu":
		return true
	}
	return false
}

func isCount(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// parseFigures parses "<iterations> <value> <unit> <value> <unit>..." for
// the benchmark name. It fails unless there is an iteration count and at
// least one complete value/unit pair, and every value is a number.
func parseFigures(name string, f []string) (Result, bool) {
	if len(f) < 3 || len(f)%2 != 1 {
		return Result{}, false
	}
	iters, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return Result{}, false
	}
	base, procs := splitProcs(name)
	res := Result{Name: base, Procs: procs, Iters: iters, Metrics: map[string]float64{}}
	for i := 1; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Result{}, false
		}
		unit := f[i+1]
		if _, dup := res.Metrics[unit]; !dup {
			res.Units = append(res.Units, unit)
		}
		res.Metrics[unit] = v
	}
	return res, true
}

// splitName splits a benchmark name into the benchmark function (without
// its "Benchmark" prefix), the group (the other path elements except the
// implementation, joined by "/") and the implementation (the value of the
// "impl=" element, "" if there is none):
//
//	BenchmarkWheel/SetTimer/pending=1M/impl=ttlkit → "Wheel", "SetTimer/pending=1M", "ttlkit"
func splitName(name string) (fn, group, impl string) {
	elems := strings.Split(name, "/")
	fn = strings.TrimPrefix(elems[0], "Benchmark")
	var rest []string
	for _, e := range elems[1:] {
		if v, ok := strings.CutPrefix(e, "impl="); ok && impl == "" {
			impl = v
			continue
		}
		rest = append(rest, e)
	}
	return fn, strings.Join(rest, "/"), impl
}
