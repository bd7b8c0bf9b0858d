package bench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/bench/internal/harness"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// Mixed workload (issue 11): short timers re-armed on every firing, next to
// many far-off timers that only wait. A wheel that relinks waiting timers
// whenever their slot is scanned pays for the far timers on every rotation;
// a hierarchical wheel or a heap barely notices them.
const (
	mixedShort    = 2_000
	mixedShortMin = 200 * time.Millisecond
	mixedShortMax = 500 * time.Millisecond
	mixedFarMin   = time.Hour
	mixedFarMax   = 30 * 24 * time.Hour
)

var mixedConfigs = []struct {
	name     string
	interval time.Duration
	slots    int
}{
	{"10msx1024", 10 * time.Millisecond, 1024},
	{"1msx2048", time.Millisecond, 2048},
}

// mixedImpls are the wheels compared. ttlkit runs its callbacks inline on
// the owner goroutine (the callback only re-arms), the others as they do.
var mixedImpls = []struct {
	name string
	new  func(interval time.Duration, slots int, fire func(string, int)) (wheel, error)
}{
	{"ttlkit", func(interval time.Duration, slots int, fire func(string, int)) (wheel, error) {
		tw, err := timingwheel.New[string, int](interval, slots, fire, timingwheel.WithInline())
		if err != nil {
			return nil, err
		}
		return ttlkitWheel{tw}, nil
	}},
	{"afterfunc", newAfterFunc},
	{"gozero", newGoZero},
}

// mixedBase remembers each config and implementation's CPU without far
// timers, so the run with them can report what they added.
var mixedBase = map[string]float64{}

// BenchmarkWheelMixed reports process CPU per second of wall time
// (cpu-ms/s) while 2,000 short timers are re-armed on every firing with a
// delay of 200–500 ms, without far timers and with 1M pending far timers
// (uniform 1 h – 30 d, none due during the run), at 10 ms × 1024 and
// 1 ms × 2048: BenchmarkWheelMixed/<config>/far=<n>/impl=<name>. The run with
// far timers also reports added-ms/s, its CPU minus the run without them.
// fires/s checks that every implementation did the same work. -short uses
// 16Ki far timers and shorter windows.
func BenchmarkWheelMixed(b *testing.B) {
	far, settle, window := 1_000_000, time.Second, 3*time.Second
	if testing.Short() {
		far, settle, window = 1<<14, 300*time.Millisecond, 500*time.Millisecond
	}
	farKeys := cachedKeys("far-", far)
	shortKeys := cachedKeys("short-", mixedShort)
	for _, cfg := range mixedConfigs {
		for _, nFar := range []int{0, far} {
			for _, im := range mixedImpls {
				name := fmt.Sprintf("%s/far=%s/impl=%s", cfg.name, countName(nFar), im.name)
				b.Run(name, func(b *testing.B) {
					var w wheel
					var stopped atomic.Bool
					var fired atomic.Int64
					fire := func(key string, value int) {
						fired.Add(1)
						if !stopped.Load() {
							_ = w.Set(key, value, shortDelay())
						}
					}
					w, err := im.new(cfg.interval, cfg.slots, fire)
					if err != nil {
						b.Fatal(err)
					}
					defer func() {
						stopped.Store(true)
						w.Close()
						runtime.GC()
					}()
					for i, k := range farKeys[:nFar] {
						d := mixedFarMin + rand.N[time.Duration](mixedFarMax-mixedFarMin)
						if err := w.Set(k, i, d); err != nil {
							b.Fatal(err)
						}
					}
					w.Sync()
					runtime.GC() // no collection of the setup inside the window
					for i, k := range shortKeys {
						if err := w.Set(k, i, shortDelay()); err != nil {
							b.Fatal(err)
						}
					}
					time.Sleep(settle) // every short timer has fired and re-armed once
					var cpu time.Duration
					var fires int64
					for range b.N {
						f0 := fired.Load()
						c0, _ := harness.ProcessCPU()
						time.Sleep(window)
						c1, _ := harness.ProcessCPU()
						cpu += c1 - c0
						fires += fired.Load() - f0
					}
					perSec := float64(cpu.Microseconds()) / 1e3 / window.Seconds() / float64(b.N)
					b.ReportMetric(perSec, "cpu-ms/s")
					b.ReportMetric(float64(fires)/window.Seconds()/float64(b.N), "fires/s")
					b.ReportMetric(0, "ns/op")
					key := cfg.name + "/" + im.name
					if nFar == 0 {
						mixedBase[key] = perSec
					} else if base, ok := mixedBase[key]; ok {
						b.ReportMetric(perSec-base, "added-ms/s")
					}
				})
			}
		}
	}
}

// shortDelay returns a short timer's next delay, uniform in 200–500 ms.
func shortDelay() time.Duration {
	return mixedShortMin + rand.N[time.Duration](mixedShortMax-mixedShortMin)
}

// countName writes 1_000_000 as "1M", 16384 as "16k", 0 as "0".
func countName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
