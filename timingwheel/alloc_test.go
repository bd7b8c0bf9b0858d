package timingwheel

import (
	"fmt"
	"testing"
	"time"
)

// These run on the real clock with delays of an hour or more, so nothing
// fires while they measure. testing.AllocsPerRun counts the allocations of
// every goroutine, the owner's included.

func TestKeyedMoveAndRemoveDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const n = 1000
	tw, err := New(time.Second, 1024, func(string, int) {})
	must(t, err)
	defer tw.Stop()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint("key", i)
		must(t, tw.SetTimer(keys[i], i, time.Hour+time.Duration(i)*time.Second))
	}
	tw.Len()
	i := 0
	later := testing.AllocsPerRun(200, func() {
		_ = tw.MoveTimer(keys[i%n], 2*time.Hour+time.Duration(i)*time.Second)
		i++
	})
	earlier := testing.AllocsPerRun(200, func() {
		_ = tw.MoveTimer(keys[i%n], time.Hour+time.Duration(i%n)*time.Millisecond)
		i++
	})
	unknown := testing.AllocsPerRun(200, func() { _ = tw.MoveTimer("unknown", time.Hour) })
	tw.Len()
	i = 0
	remove := testing.AllocsPerRun(200, func() {
		_ = tw.RemoveTimer(keys[i])
		i++
	})
	tw.Len()
	for _, c := range []struct {
		name   string
		allocs float64
	}{{"MoveTimer later", later}, {"MoveTimer earlier", earlier}, {"MoveTimer unknown key", unknown}, {"RemoveTimer", remove}} {
		if c.allocs != 0 {
			t.Errorf("%s: %v allocs per call, want 0", c.name, c.allocs)
		}
	}
	if got, want := tw.Len(), n-201; got != want {
		t.Errorf("Len = %d, want %d", got, want)
	}
}

func TestSchedulerScheduleAndCancelDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s, err := NewScheduler(time.Second, 1024, func(*Timer[int], time.Time) time.Duration { return 0 })
	must(t, err)
	defer s.Stop()
	timers := make([]Timer[int], 1000)
	i := 0
	schedule := testing.AllocsPerRun(500, func() {
		_ = s.Schedule(&timers[i%len(timers)], time.Hour+time.Duration(i)*time.Second)
		i++
	})
	i = 0
	cancel := testing.AllocsPerRun(500, func() {
		_ = s.Cancel(&timers[i%len(timers)])
		i++
	})
	if schedule != 0 || cancel != 0 {
		t.Errorf("allocs per call: Schedule %v, Cancel %v; want 0", schedule, cancel)
	}
	if n := s.Len(); n != 0 {
		t.Errorf("Len = %d, want 0", n)
	}
}
