package timingwheel

import (
	"math/bits"
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// heapPer returns the heap bytes that each of n values built by build keeps
// alive, measured after garbage collections.
func heapPer(n int, build func() func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	stops := make([]func(), n)
	for i := range stops {
		stops[i] = build()
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	for _, stop := range stops {
		stop()
	}
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return (after.HeapAlloc - before.HeapAlloc) / uint64(n)
}

// coreBytes returns what the pure core's slot heads and occupancy words
// take, as the allocator rounds them: they grow with numSlots and the
// levels made so far, not with processors.
func coreBytes[T any](w *wheel[T]) uint64 {
	head := uint64(unsafe.Sizeof(Timer[T]{}))
	n := allocSize(uint64(cap(w.slots))*head) + allocSize(uint64(cap(w.occ))*8) +
		allocSize(uint64(cap(w.coarse))*uint64(unsafe.Sizeof(w.coarse[0])))
	for _, lv := range w.coarse {
		if lv != nil {
			n += allocSize(uint64(cap(lv)) * head)
		}
	}
	return n
}

// allocSize approximates the size the runtime allocates for n bytes: whole
// 8 KiB pages above 32 KiB, below that size classes about 1/8 apart.
func allocSize(n uint64) uint64 {
	if n > 32<<10 {
		return (n + 8<<10 - 1) &^ (8<<10 - 1)
	}
	step := max(uint64(1)<<bits.Len64(n)/8, 16)
	return (n + step - 1) / step * step
}

// TestEmptyWheelIsSmallAtGOMAXPROCS64 pins issue 12 item 9: a wheel that
// holds no timer must not pay for the shards that many processors would
// use under load (at GOMAXPROCS=64 an empty TimingWheel took 189 KiB, an
// empty Scheduler 80 KiB, nearly all of it shards). Each must stay under
// 16 KiB in all, and what the layers and the driver add to the core's slot
// heads (which depend on numSlots and the levels made, logged) is bounded
// on its own.
func TestEmptyWheelIsSmallAtGOMAXPROCS64(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds to every allocation")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(64))
	for _, slots := range []int{8, 64} {
		var keyedCore, schedCore uint64
		keyed := heapPer(20, func() func() {
			tw, err := New(time.Second, slots, func(string, int) {})
			must(t, err)
			keyedCore = coreBytes(tw.k.d.w)
			return tw.Stop
		})
		sched := heapPer(20, func() func() {
			s, err := NewScheduler(time.Second, slots, func(*Timer[int], time.Time) time.Duration { return 0 })
			must(t, err)
			schedCore = coreBytes(s.d.w)
			return s.Stop
		})
		t.Logf("%d slots: empty TimingWheel[string, int] %d B (core slot heads %d B), empty Scheduler[int] %d B (core %d B)",
			slots, keyed, keyedCore, sched, schedCore)
		// The whole of it: the core makes a coarse level only when a timer
		// first goes there, so an empty wheel has level 0's heads only.
		if keyed > 16<<10 || sched > 16<<10 {
			t.Errorf("%d slots: an empty TimingWheel takes %d B and a Scheduler %d B, want each <= 16 KiB", slots, keyed, sched)
		}
		if got, limit := keyed-min(keyed, keyedCore), uint64(8<<10); got > limit {
			t.Errorf("%d slots: an empty TimingWheel takes %d B besides the core's slot heads, want <= %d", slots, got, limit)
		}
		if got, limit := sched-min(sched, schedCore), uint64(6<<10); got > limit {
			t.Errorf("%d slots: an empty Scheduler takes %d B besides the core's slot heads, want <= %d", slots, got, limit)
		}
	}
}

// TestTimerSizes pins the sizes doc/design/timingwheel.md and
// timingwheel-protocol.md quote (64-bit platforms): a Timer is its two
// links and its deadline word, 24 bytes, plus Value (a zero-size Value is
// padded to 8); the keyed wheel's
// node for a string key and an int value is 48 bytes (64 before issue 22
// moved the hand-off into the deadline word), the bulk of the ~67 bytes a
// pending keyed timer takes at 1M (BenchmarkWheel in bench/, B/pending;
// issue 22's budget is 91).
func TestTimerSizes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are for 64-bit platforms")
	}
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"Timer[*int] (a handle timer with a back pointer)", unsafe.Sizeof(Timer[*int]{}), 32},
		{"node[string, int] (a keyed timer)", unsafe.Sizeof(node[string, int]{}), 48},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %d bytes, want %d", c.name, c.got, c.want)
		}
	}
}
