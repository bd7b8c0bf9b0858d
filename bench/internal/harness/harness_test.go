package harness

import (
	"flag"
	"math"
	"runtime"
	"testing"
	"time"
)

// allocN returns a build function that allocates n values of T into keep,
// which the caller allocated beforehand so that its own size is not counted.
func allocN[T any](keep []*T) func() {
	return func() {
		for i := range keep {
			keep[i] = new(T)
		}
	}
}

func TestHeapPerItem(t *testing.T) {
	const n = 100_000
	tests := []struct {
		name string
		run  func() float64
		want float64 // bytes per item: the size class the runtime rounds to
	}{
		{
			name: "64-byte objects",
			run: func() float64 {
				keep := make([]*[64]byte, n)
				v := HeapPerItem(n, allocN(keep))
				runtime.KeepAlive(keep)
				return v
			},
			want: 64,
		},
		{
			name: "48-byte objects",
			run: func() float64 {
				keep := make([]*[48]byte, n)
				v := HeapPerItem(n, allocN(keep))
				runtime.KeepAlive(keep)
				return v
			},
			want: 48,
		},
		{
			name: "100-byte objects round up to the 112-byte class",
			run: func() float64 {
				keep := make([]*[100]byte, n)
				v := HeapPerItem(n, allocN(keep))
				runtime.KeepAlive(keep)
				return v
			},
			want: 112,
		},
		{
			name: "slice built inside counts 8 bytes per pointer",
			run: func() float64 {
				var keep []*[64]byte
				v := HeapPerItem(n, func() {
					keep = make([]*[64]byte, n)
					allocN(keep)()
				})
				runtime.KeepAlive(keep)
				return v
			},
			want: 64 + 8,
		},
		{
			name: "garbage is not counted",
			run: func() float64 {
				return HeapPerItem(n, func() {
					for range n {
						sinkGarbage = new([64]byte)
					}
					sinkGarbage = nil
				})
			},
			want: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.run()
			// A few partly used spans (8 KiB each) and runtime metadata may
			// move HeapInuse by some tens of KiB: allow 3% or 0.5 B/item.
			tol := math.Max(0.03*tt.want, 0.5)
			if math.Abs(got-tt.want) > tol {
				t.Errorf("HeapPerItem = %.2f B/item, want %.0f ± %.2f", got, tt.want, tol)
			}
		})
	}
}

var sinkGarbage *[64]byte

func TestHeapPerItemRejectsNonPositiveN(t *testing.T) {
	for _, n := range []int{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("HeapPerItem(%d, ...) did not panic, want a panic", n)
				}
			}()
			HeapPerItem(n, func() {})
		}()
	}
}

// spin does a fixed amount of CPU work that the compiler cannot remove.
func spin(iters int) uint64 {
	x := uint64(88172645463325252)
	for range iters {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

var sinkSpin uint64

func TestProcessCPUAdvancesWithWork(t *testing.T) {
	before, ok := ProcessCPU()
	if !ok {
		t.Skip("no process CPU time on this platform")
	}
	wallStart := time.Now()
	sinkSpin += spin(20_000_000)
	wall := time.Since(wallStart)
	after, _ := ProcessCPU()
	if after <= before {
		t.Fatalf("ProcessCPU after 20M iterations = %v, want more than before (%v)", after, before)
	}
	// The process cannot use more CPU than wall time times the number of
	// CPUs; the slack covers the coarse (tick-based on some kernels) clock.
	limit := wall*time.Duration(runtime.NumCPU()) + 20*time.Millisecond
	if got := after - before; got > limit {
		t.Errorf("CPU delta = %v over %v wall on %d CPUs, want at most %v", got, wall, runtime.NumCPU(), limit)
	}
}

// withBenchtime runs testing.Benchmark with -test.benchtime set to v.
func withBenchtime(t *testing.T, v string, f func(b *testing.B)) testing.BenchmarkResult {
	t.Helper()
	fl := flag.Lookup("test.benchtime")
	if fl == nil {
		t.Skip("test.benchtime flag not registered")
	}
	old := fl.Value.String()
	if err := fl.Value.Set(v); err != nil {
		t.Fatalf("set benchtime %q: %v", v, err)
	}
	defer fl.Value.Set(old)
	return testing.Benchmark(f)
}

func TestMeterReportsCPUPerOp(t *testing.T) {
	if _, ok := ProcessCPU(); !ok {
		t.Skip("no process CPU time on this platform")
	}
	syncs := 0
	r := withBenchtime(t, "200x", func(b *testing.B) {
		m := Start(b, func() { syncs++ })
		for range b.N {
			sinkSpin += spin(10_000)
		}
		m.Stop()
	})
	got, ok := r.Extra["cpu-ns/op"]
	if !ok {
		t.Fatalf("Extra = %v, want a cpu-ns/op metric", r.Extra)
	}
	if got <= 0 {
		t.Errorf("cpu-ns/op = %v, want > 0", got)
	}
	if syncs == 0 {
		t.Errorf("sync called %d times, want at least once per run", syncs)
	}
}

func TestMeterExcludesPausedWork(t *testing.T) {
	if _, ok := ProcessCPU(); !ok {
		t.Skip("no process CPU time on this platform")
	}
	var meterCPU, pausedCPU time.Duration
	withBenchtime(t, "20x", func(b *testing.B) {
		pausedCPU = 0
		m := Start(b, nil)
		for range b.N {
			sinkSpin += spin(1_000)
			m.Pause()
			c0, _ := ProcessCPU()
			sinkSpin += spin(1_000_000)
			c1, _ := ProcessCPU()
			pausedCPU += c1 - c0
			m.Resume()
		}
		m.Stop()
		meterCPU = m.CPU()
	})
	// The timed work is a thousandth of the paused work; even with GC and
	// clock granularity the meter must stay far below the paused total.
	if meterCPU*4 > pausedCPU {
		t.Errorf("meter CPU = %v, paused CPU = %v: want meter below a quarter of paused", meterCPU, pausedCPU)
	}
}

func TestMeterPauseResumeAreIdempotent(t *testing.T) {
	calls := 0
	withBenchtime(t, "1x", func(b *testing.B) {
		calls = 0
		m := Start(b, func() { calls++ })
		m.Resume() // running: no-op
		m.Pause()
		m.Pause() // paused: no-op, no second sync
		m.Resume()
		m.Stop()
	})
	if calls != 2 {
		t.Errorf("sync calls = %d, want 2 (one Pause, one Stop)", calls)
	}
}

func TestHeapAllocGrowth(t *testing.T) {
	var keep []*[1000]byte
	got := HeapAllocGrowth(func() {
		for range 100 {
			keep = append(keep, new([1000]byte))
		}
	})
	runtime.KeepAlive(keep)
	// 100 objects of the 1024-byte size class and the slice's backing
	// array: 102,400 bytes and about 1 KiB. The runtime and the testing
	// package allocate a little meanwhile: allow 8 KiB either way.
	if want := int64(100*1024 + 1024); got < want-8<<10 || got > want+8<<10 {
		t.Errorf("growth %d bytes, want about %d", got, want)
	}
	var dropped []byte
	if got := HeapAllocGrowth(func() { dropped = make([]byte, 1<<20); dropped = nil }); got > 8<<10 {
		t.Errorf("growth %d bytes after dropping what was built, want about 0", got)
	}
	_ = dropped
}
