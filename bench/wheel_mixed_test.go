package bench

import (
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
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
// lazy marks a wheel that drops removed timers only when it next scans
// their slot (go-zero marks a removed timer and unlinks it there), which
// would charge the far timers' removal to the next base window: after a
// removal, it gets one rotation (interval × slots) before that window.
// ttlkit unlinks removed timers when it takes the removals (Sync waits for
// that) and the runtime drops stopped timers from its heap as soon as they
// are a quarter of it.
var mixedImpls = []struct {
	name string
	lazy bool
	new  func(interval time.Duration, slots int, fire func(string, int)) (wheel, error)
}{
	{"ttlkit", false, func(interval time.Duration, slots int, fire func(string, int)) (wheel, error) {
		tw, err := timingwheel.New[string, int](interval, slots, fire, timingwheel.WithInline())
		if err != nil {
			return nil, err
		}
		return ttlkitWheel{tw}, nil
	}},
	{"afterfunc", false, newAfterFunc},
	{"gozero", true, newGoZero},
}

// mixedSizes are the full run's and -short's: far timers, the measured
// window, the pause between settling the heap and a window, and whether a
// lazy wheel gets a rotation to drop removed timers (see mixedImpls).
type mixedSizes struct {
	far            int
	window, settle time.Duration
	drain          bool
}

var (
	mixedFull  = mixedSizes{far: 1_000_000, window: 2 * time.Second, settle: 500 * time.Millisecond, drain: true}
	mixedSmall = mixedSizes{far: 1 << 14, window: 200 * time.Millisecond, settle: 50 * time.Millisecond}
)

// BenchmarkWheelMixed measures what 1M pending far timers (uniform 1 h –
// 30 d, none due during the run) add to the process CPU of a wheel that is
// busy with 2,000 short timers, each re-armed on every firing with a delay
// of 200–500 ms: BenchmarkWheelMixed/<config>/impl=<name>, at 10 ms × 1024
// and 1 ms × 2048.
//
// Each implementation gets one wheel whose short timers run throughout.
// Every iteration (b.N: -benchtime 3x runs three) is a cycle of four
// measuring windows, base, far, far, base: the far timers are set before
// the first far window and removed after the second, so that a drift of
// the machine's load across a cycle cancels out of the difference. Before
// each window the heap is collected and returned to the system
// (debug.FreeOSMemory), so that neither setting nor removing a million
// timers leaves a collection, sweep or scavenge to fall into a window, and
// the wheel is left alone for a moment. The cost of collecting a heap that
// holds the far timers is thus not counted; B/pending in BenchmarkWheel
// measures the heap they take.
//
// Reported: base-ms/s and far-ms/s, the mean process CPU (getrusage) per
// second of the windows without and with the far timers; added-ms/s, their
// difference, which is also the mean of the cycles' differences;
// added-se-ms/s, its standard error from the spread of the cycles'
// differences (reported with two cycles or more); base-fires/s and far-fires/s, the short timers fired per second,
// which check that every implementation kept up with the same work. -short
// uses 16Ki far timers and 200 ms windows.
func BenchmarkWheelMixed(b *testing.B) {
	sz := mixedFull
	if testing.Short() {
		sz = mixedSmall
	}
	farKeys := cachedKeys("far-", sz.far)
	shortKeys := cachedKeys("short-", mixedShort)
	for _, cfg := range mixedConfigs {
		for _, im := range mixedImpls {
			b.Run(cfg.name+"/impl="+im.name, func(b *testing.B) {
				m := &mixedRun{sz: sz, farKeys: farKeys}
				if im.lazy && sz.drain {
					m.drain = cfg.interval * time.Duration(cfg.slots)
				}
				fire := func(key string, value int) {
					m.fired.Add(1)
					if !m.stopped.Load() {
						_ = m.w.Set(key, value, shortDelay())
					}
				}
				w, err := im.new(cfg.interval, cfg.slots, fire)
				if err != nil {
					b.Fatal(err)
				}
				m.w = w
				defer func() {
					m.stopped.Store(true)
					w.Close()
					runtime.GC()
				}()
				for i, k := range shortKeys {
					if err := w.Set(k, i, shortDelay()); err != nil {
						b.Fatal(err)
					}
				}
				// Every short timer fires and re-arms once before the
				// first window's settling pause.
				time.Sleep(mixedShortMax)
				for b.Loop() {
					b1 := m.measure()
					m.setFar(b)
					f1, f2 := m.measure(), m.measure()
					m.removeFar(b)
					b2 := m.measure()
					m.base = append(m.base, b1, b2)
					m.far = append(m.far, f1, f2)
					m.added = append(m.added, (f1.cpu+f2.cpu-b1.cpu-b2.cpu)/2)
				}
				m.report(b)
			})
		}
	}
}

// mixedRun is one implementation's wheel under one config, and the windows
// measured on it.
type mixedRun struct {
	sz      mixedSizes
	w       wheel
	farKeys []string
	drain   time.Duration // the wait after a removal, see mixedImpls

	fired   atomic.Int64 // short timers fired
	stopped atomic.Bool  // no more re-arming: the wheel is closing

	removed   time.Time // when the far timers were last removed
	base, far []mixedWindow
	added     []float64 // per cycle, the far windows' mean CPU minus the base ones'
}

// A mixedWindow is one measuring window's CPU and firings per second.
type mixedWindow struct{ cpu, fires float64 }

func (m *mixedRun) setFar(b *testing.B) {
	for i, k := range m.farKeys {
		d := mixedFarMin + rand.N[time.Duration](mixedFarMax-mixedFarMin)
		if err := m.w.Set(k, i, d); err != nil {
			b.Fatal(err)
		}
	}
	m.w.Sync()
}

func (m *mixedRun) removeFar(b *testing.B) {
	for _, k := range m.farKeys {
		if err := m.w.Remove(k); err != nil {
			b.Fatal(err)
		}
	}
	m.w.Sync()
	m.removed = time.Now()
}

// measure settles the process and measures one window.
func (m *mixedRun) measure() mixedWindow {
	if !m.removed.IsZero() {
		time.Sleep(time.Until(m.removed.Add(m.drain)))
		m.removed = time.Time{}
	}
	debug.FreeOSMemory() // a full collection, then the scavenger's work
	time.Sleep(m.sz.settle)
	f0 := m.fired.Load()
	c0, _ := harness.ProcessCPU()
	t0 := time.Now()
	time.Sleep(m.sz.window)
	c1, _ := harness.ProcessCPU()
	secs := time.Since(t0).Seconds()
	f1 := m.fired.Load()
	return mixedWindow{
		cpu:   float64((c1 - c0).Microseconds()) / 1e3 / secs,
		fires: float64(f1-f0) / secs,
	}
}

func (m *mixedRun) report(b *testing.B) {
	b.Logf("cpu-ms/s of each window: base %s, far %s", windowList(m.base), windowList(m.far))
	bCPU, bFires := windowStats(m.base)
	fCPU, fFires := windowStats(m.far)
	b.ReportMetric(bCPU, "base-ms/s")
	b.ReportMetric(fCPU, "far-ms/s")
	b.ReportMetric(fCPU-bCPU, "added-ms/s") // the mean of m.added
	if n := len(m.added); n > 1 {
		mean := fCPU - bCPU
		var ss float64
		for _, a := range m.added {
			ss += (a - mean) * (a - mean)
		}
		b.ReportMetric(math.Sqrt(ss/float64(n-1)/float64(n)), "added-se-ms/s")
	}
	b.ReportMetric(bFires, "base-fires/s")
	b.ReportMetric(fFires, "far-fires/s")
	b.ReportMetric(0, "ns/op")
}

// windowStats returns the mean CPU and firing rate of ws.
func windowStats(ws []mixedWindow) (cpu, fires float64) {
	for _, w := range ws {
		cpu += w.cpu
		fires += w.fires
	}
	n := float64(len(ws))
	return cpu / n, fires / n
}

// windowList formats the windows' CPU, in the order measured.
func windowList(ws []mixedWindow) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = strconv.FormatFloat(w.cpu, 'f', 1, 64)
	}
	return strings.Join(s, " ")
}

// shortDelay returns a short timer's next delay, uniform in 200–500 ms.
func shortDelay() time.Duration {
	return mixedShortMin + rand.N[time.Duration](mixedShortMax-mixedShortMin)
}
