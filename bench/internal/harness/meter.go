package harness

import (
	"testing"
	"time"
)

// Meter measures one benchmark run: wall time through b's own timer and
// process CPU time through [ProcessCPU], over the same segments. Create it
// with [Start] just before the loop, optionally Pause and Resume around
// untimed bookkeeping inside the loop, and call Stop after the loop.
//
// A Meter is not safe for concurrent use; it belongs to the benchmark
// goroutine.
type Meter struct {
	b       *testing.B
	sync    func()
	cpu     time.Duration // CPU time of the closed segments
	mark    time.Duration // ProcessCPU at the start of the open segment
	running bool
	ok      bool
}

// Start resets b's timer and opens the first timed segment. sync must return
// once every operation submitted before the call has been fully applied; it
// runs inside the timed region at the end of each segment, so asynchronous
// work is charged to the segment that caused it. A nil sync means the
// operations are synchronous.
func Start(b *testing.B, sync func()) *Meter {
	m := &Meter{b: b, sync: sync}
	b.ResetTimer()
	b.StartTimer()
	m.mark, m.ok = ProcessCPU()
	m.running = true
	return m
}

// Pause calls sync and then closes the open segment: the wall timer stops
// and the CPU consumed since the last Start or Resume is added to the total.
// Pause on a paused Meter does nothing.
func (m *Meter) Pause() {
	if !m.running {
		return
	}
	if m.sync != nil {
		m.sync()
	}
	now, _ := ProcessCPU()
	m.b.StopTimer()
	m.cpu += now - m.mark
	m.running = false
}

// Resume opens a new segment. The caller must make sure that the untimed work
// done while paused has completed (call its sync function) before Resume, or
// that work will be charged to the new segment. Resume on a running Meter
// does nothing.
func (m *Meter) Resume() {
	if m.running {
		return
	}
	m.b.StartTimer()
	m.mark, _ = ProcessCPU()
	m.running = true
}

// Stop closes the open segment like Pause and reports the CPU time per
// operation as the "cpu-ns/op" metric (b.N operations). It reports nothing on
// platforms without process CPU time. The wall timer stays stopped, so
// teardown after Stop is not measured.
func (m *Meter) Stop() {
	m.Pause()
	if m.ok && m.b.N > 0 {
		m.b.ReportMetric(float64(m.cpu.Nanoseconds())/float64(m.b.N), "cpu-ns/op")
	}
}

// CPU returns the process CPU time of the closed segments so far.
func (m *Meter) CPU() time.Duration { return m.cpu }
