package timingwheel

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// TestShutdownWaitsForCallbacks pins issue 12 item 11: Stop returns while
// callbacks handed to workers still run; Shutdown waits for them, or for
// its context.
func TestShutdownWaitsForCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		finished := make(chan string, 2)
		tw, err := New(iv, 8, func(key string, _ int) {
			<-release
			finished <- key
		})
		must(t, err)
		must(t, tw.SetTimer("a", 1, iv))
		must(t, tw.SetTimer("b", 2, iv))
		time.Sleep(iv)
		synctest.Wait() // both callbacks are blocked in release

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		if err := tw.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown with callbacks blocked = %v, want DeadlineExceeded", err)
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("Shutdown returned after %v, want the context's 1s", got)
		}
		if err := tw.SetTimer("c", 3, iv); err != ErrClosed {
			t.Errorf("SetTimer after a timed-out Shutdown = %v, want ErrClosed", err)
		}

		done := make(chan error, 1)
		go func() { done <- tw.Shutdown(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Shutdown returned %v while callbacks still run", err)
		default:
		}
		close(release)
		if err := <-done; err != nil {
			t.Errorf("Shutdown = %v, want nil", err)
		}
		if n := len(finished); n != 2 {
			t.Errorf("%d callbacks finished when Shutdown returned, want 2", n)
		}
		tw.Stop() // after Shutdown: nothing to do
		if err := tw.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown again = %v, want nil", err)
		}
	})
}

// TestSchedulerShutdownWaitsForFire: a Scheduler's fire runs on the owner
// goroutine, which Shutdown waits for (bounded by its context).
func TestSchedulerShutdownWaitsForFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		returned := false
		s, err := NewScheduler(iv, 8, func(*Timer[int], time.Time) time.Duration {
			<-release
			returned = true
			return 0
		})
		must(t, err)
		must(t, s.Schedule(&Timer[int]{}, iv))
		time.Sleep(iv)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown with fire blocked = %v, want DeadlineExceeded", err)
		}
		close(release)
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown = %v, want nil", err)
		}
		if !returned {
			t.Error("Shutdown returned nil before fire returned")
		}
	})
}

// TestRemaining covers issue 16's remaining time of a key: a pending key
// reports the time to the tick it fires at, an absent one false.
func TestRemaining(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, _ := newTestWheel(t, iv, 8)
		check := func(what, key string, want time.Duration, wantOK bool) {
			t.Helper()
			if got, ok := tw.Remaining(key); got != want || ok != wantOK {
				t.Errorf("%s: Remaining(%q) = %v, %v; want %v, %v", what, key, got, ok, want, wantOK)
			}
		}
		check("never set", "a", 0, false)
		must(t, tw.SetTimer("a", 1, 25*time.Millisecond))
		check("just set", "a", 30*time.Millisecond, true) // rounded up to tick 3
		time.Sleep(13 * time.Millisecond)
		check("13ms later", "a", 17*time.Millisecond, true)
		must(t, tw.MoveTimer("a", 100*time.Millisecond))
		check("moved later", "a", 107*time.Millisecond, true) // 113ms: tick 12
		must(t, tw.MoveTimer("a", 5*time.Millisecond))
		check("moved earlier", "a", 7*time.Millisecond, true) // 18ms: tick 2
		time.Sleep(7 * time.Millisecond)
		synctest.Wait()
		check("fired", "a", 0, false)
		must(t, tw.SetTimer("b", 2, time.Hour))
		must(t, tw.RemoveTimer("b"))
		check("removed", "b", 0, false)
		must(t, tw.SetTimer("c", 3, math.MaxInt64))
		if got, ok := tw.Remaining("c"); !ok || got < maxDelay-iv {
			t.Errorf("Remaining of the largest delay = %v, %v; want about %v, true", got, ok, maxDelay)
		}
		tw.Stop()
		check("after Stop", "c", 0, false)
	})
}

// TestRemainingOfDueTimer: a timer whose deadline has passed but whose
// callback has not been handed out reports 0 and true. Under WithInline a
// blocked callback holds the owner, so the next timer stays due.
func TestRemainingOfDueTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		tw, err := New(iv, 8, func(key string, _ int) {
			if key == "block" {
				<-release
			}
		}, WithInline())
		must(t, err)
		defer tw.Stop()
		must(t, tw.SetTimer("block", 0, iv))
		must(t, tw.SetTimer("due", 0, 2*iv))
		time.Sleep(3 * iv)
		if got, ok := tw.Remaining("due"); got != 0 || !ok {
			t.Errorf("Remaining of a due timer = %v, %v; want 0, true", got, ok)
		}
		close(release)
		synctest.Wait()
		if got, ok := tw.Remaining("due"); got != 0 || ok {
			t.Errorf("Remaining after it fired = %v, %v; want 0, false", got, ok)
		}
	})
}

// TestRemainingUnderTicker: with WithTicker, time is the ticks received.
func TestRemainingUnderTicker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ticks := make(chan time.Time)
		tw, _ := newTestWheel(t, iv, 8, WithTicker(ticks))
		must(t, tw.SetTimer("a", 1, 25*time.Millisecond))
		if got, ok := tw.Remaining("a"); got != 3*iv || !ok {
			t.Errorf("before the owner took it: Remaining = %v, %v; want %v, true", got, ok, 3*iv)
		}
		synctest.Wait()
		if got, ok := tw.Remaining("a"); got != 3*iv || !ok {
			t.Errorf("placed: Remaining = %v, %v; want %v, true", got, ok, 3*iv)
		}
		ticks <- time.Time{}
		synctest.Wait()
		if got, ok := tw.Remaining("a"); got != 2*iv || !ok {
			t.Errorf("one tick later: Remaining = %v, %v; want %v, true", got, ok, 2*iv)
		}
	})
}

// TestHugeInterval: an interval of math.MaxInt64 (a cache's Resolution may
// be that) neither overflows into the past nor panics: nothing fires, and
// the time left is huge.
func TestHugeInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, r := newTestWheel(t, math.MaxInt64, 8)
		must(t, tw.SetTimer("a", 1, time.Second))
		if got, ok := tw.Remaining("a"); !ok || got < maxDelay {
			t.Errorf("Remaining = %v, %v; want at least %v, true", got, ok, maxDelay)
		}
		time.Sleep(1000 * time.Hour)
		if got := r.take(); len(got) != 0 {
			t.Errorf("runs %v, want none", got)
		}
	})
}

// TestHugeIntervalUnderTicker: under WithTicker the wheel's time is the
// ticks received, however large the interval: a timer set after the third
// tick of a math.MaxInt64 interval (whose time in ns no longer fits an
// int64) still fires on the next tick.
func TestHugeIntervalUnderTicker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ticks := make(chan time.Time)
		tw, r := newTestWheel(t, math.MaxInt64, 8, WithTicker(ticks))
		for i := range 4 {
			must(t, tw.SetTimer("a", i, time.Second))
			synctest.Wait()
			if got, ok := tw.Remaining("a"); got != math.MaxInt64 || !ok {
				t.Errorf("after %d ticks: Remaining = %v, %v; want %v, true", i, got, ok, time.Duration(math.MaxInt64))
			}
			ticks <- time.Time{}
			if got := r.take(); len(got) != 1 || got[0].value != i {
				t.Fatalf("tick %d: runs %v, want a=%d", i+1, got, i)
			}
		}
	})
}
