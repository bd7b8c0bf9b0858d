package bench

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/bench/internal/harness"
	"github.com/ttlkit/ttlkit/timingwheel"
	"github.com/zeromicro/go-zero/core/collection"
	"github.com/zeromicro/go-zero/core/timex"
)

// stallWheel is a wheel whose due timers all fall due at one moment that
// the benchmark triggers.
type stallWheel struct {
	wheel
	trigger func() // makes every timer set with stallDelay due now
}

// stallDelay is the delay of the mass-expiry timers: two ticks of a
// ticker-driven wheel.
const stallDelay = 20 * time.Millisecond

// stallImpls build the wheels compared by BenchmarkWheelStall. ttlkit and
// go-zero run on a ticker the benchmark drives, so every timer lands in the
// same tick however long setting them took; afterfunc arms runtime timers
// for one absolute deadline.
var stallImpls = []struct {
	name string
	new  func(fire func(string, int)) (stallWheel, error)
}{
	{"ttlkit", func(fire func(string, int)) (stallWheel, error) {
		ticks := make(chan time.Time)
		tw, err := timingwheel.New[string, int](10*time.Millisecond, 1024, fire, timingwheel.WithTicker(ticks))
		if err != nil {
			return stallWheel{}, err
		}
		return stallWheel{ttlkitWheel{tw}, func() { ticks <- time.Time{}; ticks <- time.Time{} }}, nil
	}},
	{"gozero", func(fire func(string, int)) (stallWheel, error) {
		ticker := timex.NewFakeTicker()
		tw, err := collection.NewTimingWheelWithTicker(10*time.Millisecond, 1024, func(k, v any) {
			fire(k.(string), v.(int))
		}, ticker)
		if err != nil {
			return stallWheel{}, err
		}
		return stallWheel{gozeroWheel{tw}, func() { ticker.Tick(); ticker.Tick() }}, nil
	}},
	{"afterfunc", func(fire func(string, int)) (stallWheel, error) {
		// Each Set arms its timer for the same absolute deadline, fixed
		// when the wheel is made. trigger returns a little before it, so
		// the probe is already running when the runtime fires them.
		w := &afterFuncWheel{timers: make(map[string]*time.Timer), fire: fire}
		at := time.Now().Add(3 * time.Second)
		return stallWheel{absoluteWheel{w, at}, func() { time.Sleep(time.Until(at) - 5*time.Millisecond) }}, nil
	}},
}

// absoluteWheel sets every timer for one absolute deadline.
type absoluteWheel struct {
	*afterFuncWheel
	at time.Time
}

func (w absoluteWheel) Set(key string, value int, _ time.Duration) error {
	return w.afterFuncWheel.Set(key, value, time.Until(w.at))
}

// BenchmarkWheelStall measures how long SetTimer callers wait while a mass
// expiry is processed (issue 2: 1M timers due in one tick must not block a
// caller for more than about 10ms).
//
// n timers are set to fall due together; right after they fall due, a probe
// goroutine keeps setting fresh far-off timers and times each call until
// every one of the n has fired. Reported: the probe's p99 and max call
// latency, and how long the whole expiry took. One round per b.N.
func BenchmarkWheelStall(b *testing.B) {
	n := 1 << 20
	if testing.Short() {
		n = 1 << 16
	}
	keys := makeKeys("stall-", n)
	probeKeys := makeKeys("probe-", 1<<16)
	for _, im := range stallImpls {
		b.Run("impl="+im.name, func(b *testing.B) {
			var lat []time.Duration
			var total time.Duration
			for range b.N {
				l, d := stallRound(b, im.new, keys, probeKeys)
				lat = append(lat, l...)
				total += d
			}
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-call-us")
				b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1e3, "max-call-ms")
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "expiry-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func stallRound(b *testing.B, build func(func(string, int)) (stallWheel, error), keys, probeKeys []string) ([]time.Duration, time.Duration) {
	b.StopTimer()
	defer b.StartTimer()
	var fired atomic.Int64
	done := make(chan struct{})
	total := int64(len(keys))
	w, err := build(func(string, int) {
		if fired.Add(1) == total {
			close(done)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for i, k := range keys {
		if err := w.Set(k, i, stallDelay); err != nil {
			b.Fatal(err)
		}
	}
	w.Sync()
	runtime.GC() // no collection left over from the set-up
	triggered := make(chan struct{})
	go func() { w.trigger(); close(triggered) }()
	<-triggered
	expiryStart := time.Now()
	var lat []time.Duration
	deadline := time.After(60 * time.Second)
	for i := 0; ; i++ {
		select {
		case <-done:
			return lat, time.Since(expiryStart)
		case <-deadline:
			b.Fatalf("only %d of %d timers fired within 60s", fired.Load(), total)
		default:
		}
		t0 := time.Now()
		if err := w.Set(probeKeys[i%len(probeKeys)], i, time.Hour); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
}

// BenchmarkWheelIdleCPU measures the process CPU an idle wheel costs while
// n far-off timers are pending (issue 2: about the runtime's own). After the
// timers are set and the heap settled, the benchmark sleeps for a fixed
// window and reports CPU milliseconds per second of that window.
func BenchmarkWheelIdleCPU(b *testing.B) {
	n := 1 << 20
	window := 2 * time.Second
	if testing.Short() {
		n, window = 1<<14, 200*time.Millisecond
	}
	keys := makeKeys("idle-", n)
	for _, im := range impls {
		if !im.fires {
			continue
		}
		b.Run("impl="+im.name, func(b *testing.B) {
			w, err := im.new(10*time.Millisecond, 1024, func(string, int) {})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			for i, k := range keys {
				// Spread over hours: none falls due during the window.
				if err := w.Set(k, i, time.Hour+time.Duration(i)*time.Millisecond); err != nil {
					b.Fatal(err)
				}
			}
			w.Sync()
			runtime.GC() // let the heap settle: no collection inside the window
			var cpu time.Duration
			for range b.N {
				c0, _ := harness.ProcessCPU()
				time.Sleep(window)
				c1, _ := harness.ProcessCPU()
				cpu += c1 - c0
			}
			b.ReportMetric(float64(cpu.Microseconds())/1e3/window.Seconds()/float64(b.N), "cpu-ms/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
