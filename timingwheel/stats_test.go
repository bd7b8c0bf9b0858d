package timingwheel

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestStats: a wheel's counters after timers fired, one late behind an
// inline callback that blocks the owner, one removed, one pending.
func TestStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := New(10*time.Millisecond, 8, func(key string, _ int) {
			if key == "a" {
				time.Sleep(25 * time.Millisecond) // inline: holds the owner
			}
		}, WithInline())
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Stop()
		tw.SetTimer("a", 1, 20*time.Millisecond) // tick 2, on time
		tw.SetTimer("b", 2, 30*time.Millisecond) // tick 3: fired at 45ms
		tw.SetTimer("c", 3, 30*time.Millisecond) // with b
		tw.SetTimer("d", 4, time.Hour)           // removed
		tw.SetTimer("e", 5, time.Hour)           // pending
		tw.RemoveTimer("d")
		time.Sleep(5 * time.Second) // past lazyWait: the removal is taken
		synctest.Wait()
		got := tw.Stats()
		want := Stats{Pending: 1, Fired: 3, Removed: 1, LargestBatch: 2, WakeUps: got.WakeUps,
			Lateness: Durations{Count: 3, Sum: 30 * time.Millisecond, Max: 15 * time.Millisecond,
				Buckets: [7]uint64{0: 1, 3: 2}}}
		if got != want {
			t.Errorf("Stats() = %+v\nwant       %+v", got, want)
		}
		if got.WakeUps == 0 {
			t.Error("WakeUps = 0, want > 0")
		}
	})
}

// TestStatsDrain: Drain counts the timers it hands back as removed.
func TestStatsDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := New(time.Second, 8, func(string, int) {})
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Stop()
		tw.SetTimer("x", 1, time.Minute)
		tw.SetTimer("y", 2, time.Hour)
		if err := tw.Drain(func(string, int) {}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := tw.Stats(); got.Removed != 2 || got.Pending != 0 || got.Fired != 0 {
			t.Errorf("after Drain: Removed, Pending, Fired = %d, %d, %d; want 2, 0, 0", got.Removed, got.Pending, got.Fired)
		}
	})
}

// TestSchedulerStats: a periodic Timer fires three times, a cancelled one
// counts as removed, and Stats stays readable after Stop.
func TestSchedulerStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runs := 0
		s, err := NewScheduler(time.Millisecond, 16, func(tm *Timer[string], now time.Time) time.Duration {
			if tm.Value == "every" {
				runs++
				if runs < 3 {
					return 10 * time.Millisecond
				}
			}
			return 0
		})
		if err != nil {
			t.Fatal(err)
		}
		every, gone, later := &Timer[string]{Value: "every"}, &Timer[string]{Value: "gone"}, &Timer[string]{Value: "later"}
		s.Schedule(every, 10*time.Millisecond)
		s.Schedule(gone, 10*time.Millisecond)
		s.Schedule(later, time.Hour)
		s.Cancel(gone)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		s.Stop()
		got := s.Stats()
		if got.Fired != 3 || got.Removed != 1 || got.LargestBatch != 1 || got.Lateness.Count != 3 || got.Lateness.Max != 0 {
			t.Errorf("Stats() = %+v; want Fired 3, Removed 1, LargestBatch 1, Lateness.Count 3, Lateness.Max 0", got)
		}
		if got.Pending != 0 {
			t.Errorf("after Stop: Pending = %d, want 0", got.Pending)
		}
	})
}

func TestLatenessBuckets(t *testing.T) {
	var l Durations
	for _, d := range []time.Duration{0, 100 * time.Microsecond, 101 * time.Microsecond, time.Second, time.Minute} {
		l.observe(d)
	}
	want := [7]uint64{0: 2, 1: 1, 4: 1, 6: 1}
	if l.Buckets != want || l.Count != 5 || l.Max != time.Minute {
		t.Errorf("Lateness = %+v, want Buckets %v, Count 5, Max 1m", l, want)
	}
}

// TestStatsRemovalCountedOnce: every way a keyed timer can be removed (never
// linked, linked and taken, met by advance before the removal was taken,
// drained) counts once, and fired timers never count as removed.
func TestStatsRemovalCountedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := New(10*time.Millisecond, 8, func(string, int) {})
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Stop()
		tw.SetTimer("new", 1, time.Hour) // removed before the owner links it
		tw.RemoveTimer("new")
		tw.SetTimer("linked", 1, time.Hour)
		tw.SetTimer("due", 1, 20*time.Millisecond)
		tw.SetTimer("fires", 1, 20*time.Millisecond)
		synctest.Wait() // all linked
		tw.RemoveTimer("linked")
		time.Sleep(15 * time.Millisecond)
		tw.RemoveTimer("due") // lazy: advance meets it at 20ms first
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		tw.SetTimer("drained", 1, time.Hour)
		synctest.Wait()
		tw.Drain(func(string, int) {})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		got := tw.Stats()
		if got.Removed != 4 || got.Fired != 1 || got.Pending != 0 {
			t.Errorf("Removed, Fired, Pending = %d, %d, %d; want 4, 1, 0", got.Removed, got.Fired, got.Pending)
		}
	})
}

// TestSchedulerStatsRescheduleThenCancelOfDueSibling: a fire callback
// re-schedules and then cancels a sibling due on the same tick. The
// sibling is unscheduled once before it fires, so Removed is 1, not 2.
func TestSchedulerStatsRescheduleThenCancelOfDueSibling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s *Scheduler[int]
		a, b := &Timer[int]{Value: 0}, &Timer[int]{Value: 1}
		pair := [2]*Timer[int]{a, b}
		acted := false
		s, err := NewScheduler(time.Millisecond, 16, func(tm *Timer[int], _ time.Time) time.Duration {
			if !acted {
				acted = true
				other := pair[1-tm.Value]
				s.Schedule(other, time.Hour)
				s.Cancel(other)
			}
			return 0
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
		s.Schedule(a, 5*time.Millisecond)
		s.Schedule(b, 5*time.Millisecond)
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if got := s.Stats(); got.Fired != 1 || got.Removed != 1 || got.Pending != 0 {
			t.Errorf("Fired, Removed, Pending = %d, %d, %d; want 1, 1, 0", got.Fired, got.Removed, got.Pending)
		}
	})
}
