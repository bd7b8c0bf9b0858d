package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// smokeEnv turns on TestQuickSmoke, which runs the real suites.
const smokeEnv = "TTLKIT_REPORT_SMOKE"

// TestQuickSmoke runs the tool end to end in quick mode: every suite as a
// real go test process with -short and tiny benchtimes, then the report.
// It takes a few minutes, so it runs only when TTLKIT_REPORT_SMOKE=1:
//
//	cd bench && TTLKIT_REPORT_SMOKE=1 go test -run TestQuickSmoke -count 1 -timeout 15m ./cmd/report
func TestQuickSmoke(t *testing.T) {
	if os.Getenv(smokeEnv) != "1" {
		t.Skip("runs the benchmark suites; set " + smokeEnv + "=1 to run it")
	}
	out := t.TempDir()
	cfg := &config{benchDir: "../..", outDir: out, quick: true, count: 1,
		command: "go run ./cmd/report -quick -out " + out, log: testLog{t}}
	if err := run(context.Background(), cfg); err != nil {
		t.Errorf("run: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	if !strings.Contains(md, "**Quick mode**") {
		t.Errorf("the quick report does not say it is one")
	}
	for _, id := range []string{"wheel", "accuracy", "hitratio"} {
		if !strings.Contains(md, "| ["+id+"](") || strings.Contains(md, "| ["+id+"]("+"#"+anchor(suiteByID(t, id).Title)+") | not run") {
			t.Errorf("suite %s did not run", id)
		}
	}
	shown := regexp.MustCompile(`\]\(img/([^)]+)\)`).FindAllStringSubmatch(md, -1)
	if len(shown) == 0 {
		t.Errorf("the quick report shows no chart")
	}
	for _, m := range shown {
		data, err := os.ReadFile(filepath.Join(out, "img", m[1]))
		if err != nil {
			t.Errorf("shown image: %v", err)
			continue
		}
		if s := checkSVG(t, data); s.bars == 0 {
			t.Errorf("%s has no bars", m[1])
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", md)
	}
}

// testLog sends the tool's progress lines to t.Log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
