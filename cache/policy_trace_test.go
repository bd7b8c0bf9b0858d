package cache

import (
	"bufio"
	"compress/gzip"
	"container/list"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The policy's design loop: real third-party traces replayed through the
// cache, one goroutine, Get and Set on a miss, capacities 0.1, 1, 5, 10 and
// 25% of each trace's distinct keys (at least 16), first 1M accesses. The
// traces live outside the repository, in ../shared/traces (see its
// README); a clone without them skips. The bench module compares the
// cache with its peers on the same traces.

// traceDir is where the traces are: $TTLKIT_TRACES, or ../shared/traces
// beside the repository.
func traceDir() string {
	if d := os.Getenv("TTLKIT_TRACES"); d != "" {
		return d
	}
	return "../../shared/traces"
}

// traceSpec describes one trace file.
type traceSpec struct {
	name, file string
	format     string // arc, lirs, int64 or int32 (see the traces' README)
}

var traceSpecs = []traceSpec{
	{"oltp", "OLTP.lis.zst", "arc"},
	{"scarab", "scarab-recs.trace.xz", "int64"},
	{"web12", "web12.trace.xz", "int32"},
	{"loop", "loop.trace.gz", "lirs"},
	{"sprite", "sprite.trace.gz", "lirs"},
}

// trace is a decoded trace: its first maxAccesses keys and the number of
// distinct keys in the whole file.
type trace struct {
	name     string
	keys     []uint64
	distinct int
}

const maxAccesses = 1_000_000

var (
	tracesOnce sync.Once
	traces     []trace
	tracesErr  error
)

// loadTraces decodes every trace once per test binary, or skips t.
func loadTraces(t *testing.T) []trace {
	t.Helper()
	dir := traceDir()
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no traces at %s (they are not part of the repository: put them in ../shared/traces beside it, or name their folder in TTLKIT_TRACES): %v", dir, err)
	}
	for _, tool := range []string{"zstd", "xz"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the %s command, needed to decompress the traces, is missing", tool)
		}
	}
	tracesOnce.Do(func() {
		for _, sp := range traceSpecs {
			tr, err := readTrace(filepath.Join(dir, sp.file), sp)
			if err != nil {
				tracesErr = fmt.Errorf("%s: %w", sp.file, err)
				return
			}
			traces = append(traces, tr)
		}
	})
	if tracesErr != nil {
		t.Fatal(tracesErr)
	}
	return traces
}

// readTrace decompresses and decodes one trace file.
func readTrace(path string, sp traceSpec) (trace, error) {
	tr := trace{name: sp.name}
	var r io.Reader
	switch filepath.Ext(path) {
	case ".gz":
		f, err := os.Open(path)
		if err != nil {
			return tr, err
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			return tr, err
		}
		r = z
	case ".zst", ".xz":
		tool := map[string]string{".zst": "zstd", ".xz": "xz"}[filepath.Ext(path)]
		cmd := exec.Command(tool, "-dc", path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			return tr, err
		}
		if err := cmd.Start(); err != nil {
			return tr, err
		}
		defer cmd.Wait()
		defer out.Close()
		r = out
	default:
		return tr, fmt.Errorf("unknown compression")
	}
	seen := map[uint64]struct{}{}
	add := func(k uint64) {
		seen[k] = struct{}{}
		if len(tr.keys) < maxAccesses {
			tr.keys = append(tr.keys, k)
		}
	}
	br := bufio.NewReaderSize(r, 1<<16)
	switch sp.format {
	case "arc", "lirs":
		sc := bufio.NewScanner(br)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 || f[0] == "*" {
				continue
			}
			start, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return tr, fmt.Errorf("line %q: %w", sc.Text(), err)
			}
			count := uint64(1)
			if sp.format == "arc" {
				if len(f) < 2 {
					return tr, fmt.Errorf("line %q: no count", sc.Text())
				}
				if count, err = strconv.ParseUint(f[1], 10, 64); err != nil {
					return tr, fmt.Errorf("line %q: %w", sc.Text(), err)
				}
			}
			for i := range count {
				add(start + i)
			}
		}
		if err := sc.Err(); err != nil {
			return tr, err
		}
	case "int64", "int32":
		size := 8
		if sp.format == "int32" {
			size = 4
		}
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(br, buf); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return tr, err
			}
			if size == 8 {
				add(binary.BigEndian.Uint64(buf))
			} else {
				add(uint64(binary.BigEndian.Uint32(buf)))
			}
		}
	}
	tr.distinct = len(seen)
	return tr, nil
}

// traceCapacities returns the capacities of the cells of tr, without
// duplicates (loop's 0.1% and 1% are both the minimum, 16).
func traceCapacities(tr trace) []int {
	var caps []int
	for _, pct := range []float64{0.1, 1, 5, 10, 25} {
		c := max(int(float64(tr.distinct)*pct/100), 16)
		if len(caps) == 0 || caps[len(caps)-1] != c {
			caps = append(caps, c)
		}
	}
	return caps
}

// replayCache returns the cache's hit ratio on keys with the given Limit.
func replayCache(t *testing.T, keys []uint64, limit int) float64 {
	c, err := New(Options[uint64, uint64]{TTL: 24 * time.Hour, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hits := 0
	for i, k := range keys {
		if _, ok := c.Get(k); ok {
			hits++
		} else {
			c.Set(k, k)
		}
		if i%4096 == 0 {
			if n := c.Len(); n > limit {
				t.Fatalf("after %d accesses: Len() = %d, over Limit %d", i+1, n, limit)
			}
		}
	}
	return float64(hits) / float64(len(keys))
}

// replayLRU returns an exact LRU's hit ratio on keys with capacity limit.
func replayLRU(keys []uint64, limit int) float64 {
	l := list.New()
	m := make(map[uint64]*list.Element, limit)
	hits := 0
	for _, k := range keys {
		if e, ok := m[k]; ok {
			hits++
			l.MoveToFront(e)
			continue
		}
		if l.Len() >= limit {
			b := l.Back()
			delete(m, b.Value.(uint64))
			l.Remove(b)
		}
		m[k] = l.PushFront(k)
	}
	return float64(hits) / float64(len(keys))
}

// TestTraceHitRatio replays the traces through the cache and an exact
// LRU side by side and logs the hit ratio of every cell. It holds the
// cache to what frequency-aware eviction must give: per trace, the mean
// over its capacities at least the LRU's minus one point, never stuck at
// 0% where the LRU is (the loop); over all cells, a mean at least two
// points above the LRU's. For reference, otter v2.4.0 on the same replay
// (inline maintenance, 2026-11-27): oltp 20.51 44.61 58.39 64.28 67.16,
// scarab 22.97 41.88 54.15 59.18 67.36, web12 17.44 40.60 63.38 70.04
// 76.73, loop 0.00 0.00 7.85 23.46, sprite 6.66 20.97 66.25 82.13 89.34;
// mean 44.39%.
func TestTraceHitRatio(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("replays 24M accesses: not with -short or -race")
	}
	var sum, sumLRU float64
	cells := 0
	for _, tr := range loadTraces(t) {
		var tsum, tlru float64
		caps := traceCapacities(tr)
		for _, limit := range caps {
			got, lru := replayCache(t, tr.keys, limit), replayLRU(tr.keys, limit)
			t.Logf("%-7s capacity %6d: cache %6.2f%%  LRU %6.2f%%  (%+.2f)", tr.name, limit, 100*got, 100*lru, 100*(got-lru))
			tsum += got
			tlru += lru
		}
		n := float64(len(caps))
		t.Logf("%-7s mean: cache %6.2f%%  LRU %6.2f%%", tr.name, 100*tsum/n, 100*tlru/n)
		if tsum/n < tlru/n-0.01 {
			t.Errorf("%s: mean hit ratio %.2f%%, want at least the LRU's %.2f%% minus one point", tr.name, 100*tsum/n, 100*tlru/n)
		}
		if tsum == 0 {
			t.Errorf("%s: 0%% at every capacity", tr.name)
		}
		sum += tsum
		sumLRU += tlru
		cells += len(caps)
	}
	mean, meanLRU := sum/float64(cells), sumLRU/float64(cells)
	t.Logf("mean over %d cells: cache %.2f%%, LRU %.2f%%", cells, 100*mean, 100*meanLRU)
	if mean < meanLRU+0.02 {
		t.Errorf("mean hit ratio %.2f%%, want at least the LRU's %.2f%% plus two points", 100*mean, 100*meanLRU)
	}
}
