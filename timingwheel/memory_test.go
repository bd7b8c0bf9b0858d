package timingwheel

import (
	"runtime"
	"testing"
	"time"
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

// TestEmptyWheelIsSmallAtGOMAXPROCS64 pins issue 12 item 9: a wheel that
// holds no timer must not pay for the shards that many processors would
// use under load (at GOMAXPROCS=64 an empty TimingWheel took 189 KiB, an
// empty Scheduler 80 KiB). The slots themselves cost one sentinel Timer
// and one visit bound each, so the Scheduler's bound is checked at 8.
func TestEmptyWheelIsSmallAtGOMAXPROCS64(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds to every allocation")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(64))
	for _, c := range []struct {
		slots        int
		keyed, sched uint64 // bounds in bytes
	}{
		{8, 16 << 10, 6 << 10},
		{64, 16 << 10, 10 << 10},
	} {
		keyed := heapPer(20, func() func() {
			tw, err := New(time.Second, c.slots, func(string, int) {})
			must(t, err)
			return tw.Stop
		})
		sched := heapPer(20, func() func() {
			s, err := NewScheduler(time.Second, c.slots, func(*Timer[int], time.Time) time.Duration { return 0 })
			must(t, err)
			return s.Stop
		})
		t.Logf("%d slots: empty TimingWheel[string, int] %d B, empty Scheduler[int] %d B", c.slots, keyed, sched)
		if keyed > c.keyed {
			t.Errorf("%d slots: empty TimingWheel takes %d B of heap, want <= %d", c.slots, keyed, c.keyed)
		}
		if sched > c.sched {
			t.Errorf("%d slots: empty Scheduler takes %d B of heap, want <= %d", c.slots, sched, c.sched)
		}
	}
}
