package bench

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/bench/internal/traces"
)

// Hit-ratio replay (issue 27): real traces, read-through, one goroutine,
// nothing expires, every cache held to its capacity at every access.
const (
	hitTraceLen  = 1_000_000 // accesses replayed from each trace
	hitShortLen  = 20_000    // under -short
	hitMinCap    = 16
	hitZipfCount = 1_000_000 // counted accesses of the synthetic Zipf row
)

// hitShares are the capacities of a trace, as parts of its distinct keys.
var hitShares = []struct {
	label string
	share float64
}{
	{"0.1%", 0.001}, {"1%", 0.01}, {"5%", 0.05}, {"10%", 0.1}, {"25%", 0.25},
}

// A hitCell is one trace at one capacity.
type hitCell struct {
	trace string // traces.Trace.Name, or "zipf"
	label string // the capacity's label: "0.1%", ..., or "100k"
	cap   int
}

// hitCells returns the cells of a trace with distinct keys: a capacity
// per share (at least hitMinCap), and a share whose capacity equals the one
// before it (a small trace's minimum) is left out, not measured twice.
func hitCells(trace string, distinct int) []hitCell {
	var cells []hitCell
	for _, s := range hitShares {
		c := max(int(float64(distinct)*s.share), hitMinCap)
		if len(cells) > 0 && cells[len(cells)-1].cap == c {
			continue
		}
		cells = append(cells, hitCell{trace, s.label, c})
	}
	return cells
}

// A hitRun is what one replay of one cell by one cache measured.
type hitRun struct {
	hits, counted int
	maxHeld       int
	overCap       int           // Sets after which the cache held more than its capacity
	elapsed       time.Duration // the whole replay, warm-up included
	accesses      int
}

func (r hitRun) ratio() float64 { return 100 * float64(r.hits) / float64(r.counted) }

// replayHits replays trace through c, read-through: Get, and Set after a
// miss. Hits are counted from access countFrom on (the ones before warm
// the cache). After every Set it counts in overCap the times the cache held
// more than capacity entries; beyond capacity + slack the replay stops with
// an error saying where.
func replayHits(c hitCache, trace []uint64, countFrom, capacity, slack int) (hitRun, error) {
	r := hitRun{accesses: len(trace), counted: len(trace) - countFrom}
	start := time.Now()
	for i, k := range trace {
		if c.Get(k) {
			if i >= countFrom {
				r.hits++
			}
			continue
		}
		c.Set(k)
		n := c.Len()
		if n > capacity+slack {
			return r, fmt.Errorf("after access %d (key %d) it holds %d entries, capacity %d (+%d allowed)", i, k, n, capacity, slack)
		}
		if n > capacity {
			r.overCap++
		}
		r.maxHeld = max(r.maxHeld, n)
	}
	r.elapsed = time.Since(start)
	return r, nil
}

// hitData is what BenchmarkHitRatio has loaded and measured in this
// process: traces and ratios are shared by the sub-benchmarks and the means.
var hitData = struct {
	traces  map[string][]uint64
	ratios  map[hitKey]float64
	optimal map[hitCell]int // Belady's hits per cell, the ceiling every cache is checked against
}{map[string][]uint64{}, map[hitKey]float64{}, map[hitCell]int{}}

type hitKey struct {
	cell hitCell
	impl string
}

// loadHitTrace returns the first hitTraceLen (hitShortLen under -short)
// accesses of t, read once per process.
func loadHitTrace(dir string, t traces.Trace) ([]uint64, error) {
	if keys, ok := hitData.traces[t.Name]; ok {
		return keys, nil
	}
	n := hitTraceLen
	if testing.Short() {
		n = hitShortLen
	}
	keys, err := traces.Load(dir, t, n)
	if err != nil {
		return nil, err
	}
	hitData.traces[t.Name] = keys
	return keys, nil
}

// BenchmarkHitRatio replays real cache traces (the shared folder of
// internal/traces: ../shared/traces from the repository root, or
// $TTLKIT_TRACES) through every cache of hitImpls: the first 1M accesses of
// each trace (20k under -short), read-through (Get, then Set after a miss),
// one goroutine, nothing expires, at capacities of 0.1, 1, 5, 10 and 25% of
// the distinct keys of the replayed accesses (at least 16; a capacity equal
// to the previous one is not measured twice, so loop has four cells and
// the five traces 24). Every cache is held to its capacity: buffered writes
// and evictions are drained inside Set (see hitratio_adapters_test.go), and
// the replay fails if a cache ever holds more than its capacity after a Set
// (plus its hitImpl.slack: 1 for ARC, 0 for every other). A cache that gets more hits than Belady's optimum on a cell fails too (its
// adapter counts hits it did not have).
//
// Sub-benchmarks trace=<name>/cap=<share>/impl=<name> report:
//
//	hit%        hits / accesses, the cold misses included
//	max-held    the most entries the cache held after a Set
//	ns/access   wall time of the replay per access, the drains included
//	over-cap    only for a cache with hitImpl.slack (one that cannot be
//	            held exactly to its capacity): the Sets after which it
//	            held more
//
// trace=<name>/cap=mean reports the mean hit% over the trace's cells and
// trace=all/cap=mean the mean over every cell of every trace, for the
// caches that ran them all. trace=zipf/cap=100k is the synthetic workload of
// BenchmarkCacheGetOrSet replayed the same way: 1M keys with Zipf s = 1.01,
// capacity 100k, warmed by 4 × capacity accesses that are not counted, then
// 1M counted accesses (-short: its smaller shape). Without the trace folder
// the real traces are skipped with a message saying where they were looked
// for, and only the Zipf row runs. One round per process; reports no ns/op.
func BenchmarkHitRatio(b *testing.B) {
	dir, err := traces.Dir(".")
	if err != nil {
		b.Run("trace=real", func(b *testing.B) {
			if errors.Is(err, traces.ErrNoTraces) {
				// go test shows a benchmark's skip message only with -v:
				// the note line reaches the report (cmd/report) too.
				fmt.Printf("note: BenchmarkHitRatio: real traces skipped: %v\n", err)
				b.Skipf("real traces skipped: %v", err)
			}
			b.Fatal(err)
		})
	} else {
		var all []hitCell
		for _, t := range traces.All {
			keys, err := loadHitTrace(dir, t)
			if err != nil {
				b.Fatal(err)
			}
			cells := hitCells(t.Name, traces.Distinct(keys))
			all = append(all, cells...)
			for _, cell := range cells {
				benchHitCell(b, cell, keys, 0)
			}
			benchHitMean(b, "trace="+t.Name+"/cap=mean", cells)
		}
		benchHitMean(b, "trace=all/cap=mean", all)
	}

	sh := shape()
	warm := cachedTrace("zipf", sh.gsKeys, 4*sh.gsCapacity, 2)
	counted := min(hitZipfCount, sh.gsKeys)
	zipf := slices.Concat(warm, cachedTrace("zipf", sh.gsKeys, traceLen, 1)[:counted])
	label := strconv.Itoa(sh.gsCapacity/1000) + "k"
	benchHitCell(b, hitCell{"zipf", label, sh.gsCapacity}, zipf, len(warm))
}

// benchHitCell runs one cell's sub-benchmarks, one per cache.
func benchHitCell(b *testing.B, cell hitCell, trace []uint64, countFrom int) {
	b.Run("trace="+cell.trace+"/cap="+cell.label, func(b *testing.B) {
		optimal, ok := hitData.optimal[cell]
		if !ok {
			r, err := replayHits(newBeladyHit(cell.cap, trace), trace, countFrom, cell.cap, 0)
			if err != nil {
				b.Fatalf("belady: %v", err)
			}
			optimal = r.hits
			hitData.optimal[cell] = optimal
		}
		for _, im := range hitImpls {
			b.Run("impl="+im.name, func(b *testing.B) {
				reportOneShot(b, func() map[string]float64 {
					c := im.new(cell.cap, trace)
					r, err := replayHits(c, trace, countFrom, cell.cap, im.slack)
					c.Close()
					if err != nil {
						b.Fatalf("%s, capacity %d: %v", im.name, cell.cap, err)
					}
					if r.hits > optimal {
						b.Fatalf("%s, capacity %d: %d hits, more than Belady's optimum %d", im.name, cell.cap, r.hits, optimal)
					}
					hitData.ratios[hitKey{cell, im.name}] = r.ratio()
					m := map[string]float64{
						"hit%":      r.ratio(),
						"max-held":  float64(r.maxHeld),
						"ns/access": float64(r.elapsed.Nanoseconds()) / float64(r.accesses),
					}
					if im.slack > 0 {
						m["over-cap"] = float64(r.overCap)
					}
					return m
				})
			})
		}
	})
}

// benchHitMean reports each cache's mean hit% over cells, for the caches
// that have measured every one of them in this process.
func benchHitMean(b *testing.B, name string, cells []hitCell) {
	b.Run(name, func(b *testing.B) {
		for _, im := range hitImpls {
			sum, n := 0.0, 0
			for _, c := range cells {
				if r, ok := hitData.ratios[hitKey{c, im.name}]; ok {
					sum += r
					n++
				}
			}
			if n < len(cells) || n == 0 {
				continue // some cells were not run (a -bench filter)
			}
			b.Run("impl="+im.name, func(b *testing.B) {
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(sum/float64(n), "hit%")
				b.ReportMetric(float64(n), "cells")
			})
		}
	})
}
