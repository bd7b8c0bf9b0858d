package durable

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// go test -run '^$' -bench . -benchtime 1x -timeout 60m
//
// Every workload runs once per implementation, each against a fresh server
// of its own; a round's figures are reported again when the benchmark
// framework calls the function again (one round per process).

var rounds sync.Map

func oneRound(b *testing.B, round func() map[string]float64) {
	m, ok := rounds.Load(b.Name())
	if !ok {
		m, _ = rounds.LoadOrStore(b.Name(), round())
	}
	for unit, v := range m.(map[string]float64) {
		b.ReportMetric(v, unit)
	}
	// The round's own time is in its metrics; ns/op means nothing here.
	b.ReportMetric(0, "ns/op")
}

// size picks the full or the -short (smoke) size.
func size(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

func ids(prefix string, n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = prefix + strconv.Itoa(i)
	}
	return s
}

// forImpls runs body as one sub-benchmark per implementation.
func forImpls(b *testing.B, body func(b *testing.B, e *env) map[string]float64) {
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			oneRound(b, func() map[string]float64 { return body(b, im.open(b)) })
		})
	}
}

// BenchmarkEnqueue: jobs due now stored one call at a time from 1 or 8
// goroutines, or in batches of 1000 through each system's bulk call.
// jobs/s counts a job once the call that stored it returned; cpu-us/job
// is the CPU of this process and of the server's processes (cpu_test.go).
func BenchmarkEnqueue(b *testing.B) {
	n := size(20_000, 500)
	for _, g := range []int{1, 8} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			forImpls(b, func(b *testing.B, e *env) map[string]float64 {
				ctx := context.Background()
				p := payloadAt(64, time.Time{})
				cpu := startCPU(e)
				start := time.Now()
				if err := fanOut(ctx, ids("e", n), g, func(id string) error { return e.sys.Enqueue(ctx, id, p) }); err != nil {
					b.Fatal(err)
				}
				return addCPU(map[string]float64{"jobs/s": float64(n) / time.Since(start).Seconds()}, cpu, n)
			})
		})
	}
	b.Run("batch=1000", func(b *testing.B) {
		forImpls(b, func(b *testing.B, e *env) map[string]float64 {
			ctx := context.Background()
			p := payloadAt(64, time.Time{})
			all := ids("b", n)
			cpu := startCPU(e)
			start := time.Now()
			for i := 0; i < n; i += 1000 {
				if err := e.sys.EnqueueBatch(ctx, all[i:min(i+1000, n)], p); err != nil {
					b.Fatal(err)
				}
			}
			return addCPU(map[string]float64{"jobs/s": float64(n) / time.Since(start).Seconds()}, cpu, n)
		})
	})
}

// runCap bounds the time a workload waits for its jobs to run.
const runCap = 60 * time.Second

// tally counts the runs of each job.
type tally struct {
	mu   sync.Mutex
	runs map[string]int
	n    atomic.Int64 // distinct jobs run
	want int64
	all  chan struct{} // closed when n reaches want
}

func newTally(want int) *tally {
	return &tally{runs: make(map[string]int), want: int64(want), all: make(chan struct{})}
}

func (t *tally) ran(id string) {
	t.mu.Lock()
	t.runs[id]++
	first := t.runs[id] == 1
	t.mu.Unlock()
	if first && t.n.Add(1) == t.want {
		close(t.all)
	}
}

// twice counts the jobs that ran more than once.
func (t *tally) twice() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := 0
	for _, r := range t.runs {
		if r > 1 {
			k++
		}
	}
	return k
}

// wait waits for every job or d; it returns the jobs never run.
func (t *tally) wait(d time.Duration) int {
	select {
	case <-t.all:
	case <-time.After(d):
	}
	return int(t.want - t.n.Load())
}

// BenchmarkRun: n no-op jobs due now are stored first; then 2 or 8
// handlers run them. runs/s is the jobs run over the time from starting
// the workers to the last handler's return, or to runCap, whichever comes
// first; unrun counts the jobs not run by then (river's default fetch
// cadence runs at most MaxWorkers jobs per 100 ms). cpu-us/job is the CPU
// of this process and the server's over the same time, per job run.
func BenchmarkRun(b *testing.B) {
	n := size(20_000, 500)
	for _, w := range []int{2, 8} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			forImpls(b, func(b *testing.B, e *env) map[string]float64 {
				ctx := context.Background()
				all := ids("r", n)
				p := payloadAt(64, time.Time{})
				for i := 0; i < n; i += 1000 {
					if err := e.sys.EnqueueBatch(ctx, all[i:min(i+1000, n)], p); err != nil {
						b.Fatal(err)
					}
				}
				t := newTally(n)
				cpu := startCPU(e)
				start := time.Now()
				stop, err := e.sys.Work(ctx, w, func(_ context.Context, id string, _ []byte) error {
					t.ran(id)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				unrun := t.wait(runCap)
				elapsed := time.Since(start)
				m := addCPU(map[string]float64{"runs/s": float64(n-unrun) / elapsed.Seconds(),
					"unrun": float64(unrun), "twice": float64(t.twice())}, cpu, n-unrun)
				stop()
				return m
			})
		})
	}
}

// BenchmarkDelayed: jobs due one after the other at 1k or 5k jobs/s, from
// 2 s after the first is enqueued, stored by 8 goroutines while 8 handlers
// run them. Lateness is a handler's start minus the job's due time; early
// counts starts before it (there must be none for any system).
func BenchmarkDelayed(b *testing.B) {
	for _, rate := range []int{1000, 5000} {
		n := size(10_000, 500)
		b.Run(fmt.Sprintf("rate=%dk", rate/1000), func(b *testing.B) {
			forImpls(b, func(b *testing.B, e *env) map[string]float64 {
				ctx := context.Background()
				var mu sync.Mutex
				late := make([]time.Duration, 0, n)
				t := newTally(n)
				stop, err := e.sys.Work(ctx, 8, func(_ context.Context, id string, p []byte) error {
					now := time.Now()
					mu.Lock()
					late = append(late, now.Sub(dueOf(p)))
					mu.Unlock()
					t.ran(id)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				defer stop()
				base := time.Now().Add(2 * time.Second)
				all := ids("d", n)
				var idx atomic.Int64
				idx.Store(-1)
				err = fanOut(ctx, all, 8, func(id string) error {
					i, _ := strconv.Atoi(id[1:])
					due := base.Add(time.Duration(i) * time.Second / time.Duration(rate))
					return e.sys.EnqueueAt(ctx, id, due, payloadAt(16, due))
				})
				if err != nil {
					b.Fatal(err)
				}
				lost := t.wait(time.Duration(n/rate)*time.Second + 2*time.Minute)
				mu.Lock()
				defer mu.Unlock()
				return latenessMetrics(late, lost, t.twice())
			})
		})
	}
}

func latenessMetrics(late []time.Duration, lost, twice int) map[string]float64 {
	m := map[string]float64{"lost": float64(lost), "twice": float64(twice)}
	if len(late) == 0 {
		return m
	}
	early := 0
	for _, d := range late {
		if d < 0 {
			early++
		}
	}
	slices.Sort(late)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	k := len(late)
	m["p50-late-ms"] = ms(late[k/2])
	m["p99-late-ms"] = ms(late[k*99/100])
	m["max-late-ms"] = ms(late[k-1])
	m["early"] = float64(early)
	return m
}
