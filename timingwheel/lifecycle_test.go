package timingwheel

import (
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// TestDroppedWheelIsStopped checks that a TimingWheel that becomes
// unreachable without Stop has its owner goroutine stopped by its cleanup.
func TestDroppedWheelIsStopped(t *testing.T) {
	done := func() <-chan struct{} {
		tw, err := New(time.Millisecond, 8, func(string, int) {})
		if err != nil {
			t.Fatal(err)
		}
		tw.SetTimer("k", 1, time.Hour)
		return tw.k.d.done
	}()
	// The cleanup runs after a GC finds the wheel unreachable; the owner then
	// exits and closes done. Bounded: fail rather than hang.
	for range 200 {
		runtime.GC()
		select {
		case <-done:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatal("owner goroutine of a dropped TimingWheel still running after 200 GCs")
}

func TestHas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := New(10*time.Millisecond, 8, func(string, int) {})
		if err != nil {
			t.Fatal(err)
		}
		tw.SetTimer("a", 1, 50*time.Millisecond)
		if !tw.Has("a") {
			t.Error(`Has("a") = false right after SetTimer, want true`)
		}
		if tw.Has("b") {
			t.Error(`Has("b") = true, want false`)
		}
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		if tw.Has("a") {
			t.Error(`Has("a") = true after it fired, want false`)
		}
		tw.SetTimer("c", 1, time.Second)
		tw.RemoveTimer("c")
		if tw.Has("c") {
			t.Error(`Has("c") = true after RemoveTimer, want false`)
		}
		tw.Stop()
		if tw.Has("a") {
			t.Error("Has after Stop = true, want false")
		}
	})
}

func TestHasRefusedKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := New(10*time.Millisecond, 8, func(any, int) {})
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Stop()
		if tw.Has([]int{1}) {
			t.Error("Has(unhashable) = true, want false")
		}
	})
}

// TestSchedulerStopUnlinksTimers checks that Stop leaves no Timer linked
// into the stopped wheel, so the Timer can be scheduled on another one.
func TestSchedulerStopUnlinksTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tm Timer[int]
		noop := func(*Timer[int], time.Time) time.Duration { return 0 }
		s1, err := NewScheduler(10*time.Millisecond, 8, noop)
		if err != nil {
			t.Fatal(err)
		}
		s1.Schedule(&tm, time.Hour)
		s1.Len() // barrier
		s1.Stop()
		if tm.scheduled() {
			t.Fatal("Timer still linked after Stop")
		}
		fired := make(chan time.Time, 1)
		s2, err := NewScheduler(10*time.Millisecond, 8, func(*Timer[int], time.Time) time.Duration {
			fired <- time.Now()
			return 0
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Stop()
		start := time.Now()
		s2.Schedule(&tm, 30*time.Millisecond)
		if got := (<-fired).Sub(start); got != 30*time.Millisecond {
			t.Errorf("reused Timer fired after %v, want 30ms", got)
		}
		if n := s2.Len(); n != 0 {
			t.Errorf("Len = %d, want 0", n)
		}
	})
}

// TestSchedulerStopDisarmsTimers: Stop leaves every Timer not armed, its
// deadline dead and its queued bit clear, so that another Scheduler takes
// it up whatever the new deadline. Before the fix a Timer kept the stopped
// Scheduler's deadline, and a later deadline on the new one was taken as a
// lazy move of a Timer already linked: it never fired.
func TestSchedulerStopDisarmsTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var linked, queued Timer[int]
		noop := func(*Timer[int], time.Time) time.Duration { return 0 }
		s1, err := NewScheduler(10*time.Millisecond, 8, noop)
		if err != nil {
			t.Fatal(err)
		}
		s1.Schedule(&linked, time.Hour)
		s1.Len() // barrier: linked is in the wheel
		s1.Schedule(&queued, time.Hour)
		s1.Stop()
		for _, tm := range []*Timer[int]{&linked, &queued} {
			if got, want := tm.word.Load(), int64(0); got != want {
				t.Errorf("word after Stop = %#x, want %#x (dead, not queued)", got, want)
			}
		}
		fired := make(chan time.Duration, 2)
		start := time.Now()
		s2, err := NewScheduler(10*time.Millisecond, 8, func(*Timer[int], time.Time) time.Duration {
			fired <- time.Since(start)
			return 0
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Stop()
		s2.Schedule(&linked, 2*time.Hour)
		s2.Schedule(&queued, 2*time.Hour)
		for range 2 {
			if got, want := <-fired, 2*time.Hour; got != want {
				t.Errorf("reused Timer fired after %v, want %v", got, want)
			}
		}
	})
}
