package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// machine describes where and when the report was made.
type machine struct {
	CPU        string // model name from /proc/cpuinfo
	CPUTesting string // what go test printed as "cpu:", when it differs
	Cores      int    // logical CPUs the report process can use
	OS         string // GOOS/GOARCH and kernel release
	GoVersion  string // `go version` in the bench module
	Commit     string // git HEAD, short; "" outside a checkout
	EnvProcs   string // GOMAXPROCS from the environment, if set
	Start, End time.Time
	LoadStart  string // /proc/loadavg 1, 5, 15 minute averages
	LoadEnd    string
}

func probeMachine(ctx context.Context, benchDir string) machine {
	m := machine{
		CPU:       cpuModel(),
		Cores:     runtime.NumCPU(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
		EnvProcs:  os.Getenv("GOMAXPROCS"),
		Start:     time.Now(),
		LoadStart: loadAverage(),
	}
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.OS += ", Linux " + strings.TrimSpace(string(rel))
	}
	m.GoVersion = command(ctx, benchDir, "go", "version")
	m.Commit = command(ctx, benchDir, "git", "rev-parse", "--short", "HEAD")
	return m
}

// command runs a short command and returns its trimmed output, "" on error.
func command(ctx context.Context, dir, name string, args ...string) string {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or GOARCH
// where there is none.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// loadAverage returns the 1, 5 and 15 minute load averages, "" if unknown.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], ", ")
}

// benchProcs lists the distinct GOMAXPROCS values the benchmarks ran with
// (the -N suffix of their names), ascending.
func benchProcs(runs []*suiteRun) []int {
	var ps []int
	for _, r := range runs {
		if r.Output == nil {
			continue
		}
		for _, res := range r.Output.Results {
			if !slices.Contains(ps, res.Procs) {
				ps = append(ps, res.Procs)
			}
		}
	}
	slices.Sort(ps)
	return ps
}

func joinInts(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}
