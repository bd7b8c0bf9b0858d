package timingwheel

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestQueueScheduleAndCancelLocked: changes made with a Queue locked fire
// and cancel as the Scheduler's own calls do, and reach the owner in the
// order they were made: a later deadline then an earlier one under one
// hold leaves the earlier.
func TestQueueScheduleAndCancelLocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRecorder(t, 8)
		q := r.s.Queue(3)
		a, b, c := &Timer[string]{Value: "a"}, &Timer[string]{Value: "b"}, &Timer[string]{Value: "c"}
		start := r.start
		q.Lock()
		must(t, q.ScheduleAtLocked(a, start.Add(5*iv)))
		must(t, q.ScheduleAtLocked(a, start.Add(2*iv))) // earlier: moves it
		must(t, q.ScheduleAtLocked(b, start.Add(3*iv)))
		must(t, q.ScheduleAtLocked(c, start.Add(4*iv)))
		must(t, q.CancelLocked(c))
		must(t, q.CancelLocked(c)) // twice: a no-op
		q.Unlock()
		time.Sleep(10 * iv)
		if got, want := names(r.take()), []string{"a@20ms", "b@30ms"}; !slices.Equal(got, want) {
			t.Fatalf("firings %v, want %v", got, want)
		}
		if n := r.s.Len(); n != 0 {
			t.Fatalf("Len = %d, want 0", n)
		}
	})
}

// TestQueueUnlockWakesTheOwner: a change due before the owner's next
// wake-up asks Unlock to wake it; one made while the owner sleeps long,
// not due soon, does not, and still fires on time.
func TestQueueUnlockWakesTheOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRecorder(t, 8)
		q := r.s.Queue(0)
		synctest.Wait() // the owner sleeps: nothing is scheduled
		before := r.s.Stats().WakeUps
		q.Lock()
		must(t, q.ScheduleAtLocked(&Timer[string]{Value: "soon"}, time.Now().Add(iv)))
		if q.signal != true {
			t.Errorf("an urgent change left signal %v, want true", q.signal)
		}
		q.Unlock()
		synctest.Wait()
		if got := r.s.Stats().WakeUps; got != before+1 {
			t.Errorf("WakeUps %d after an urgent change, want %d", got, before+1)
		}
		time.Sleep(2 * iv)
		if got, want := names(r.take()), []string{"soon@10ms"}; !slices.Equal(got, want) {
			t.Fatalf("firings %v, want %v", got, want)
		}
	})
}

// TestQueueAnyTimerAnyQueue: one Timer scheduled through the Scheduler
// (which picks a Queue from its address), moved earlier through one Queue
// and cancelled through another: the state word decides, so the last
// call wins wherever it was queued.
func TestQueueAnyTimerAnyQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRecorder(t, 8, WithQueues(4))
		a, b := &Timer[string]{Value: "a"}, &Timer[string]{Value: "b"}
		must(t, r.s.Schedule(a, 6*iv))
		must(t, r.s.Schedule(b, 6*iv))
		for i, tm := range []*Timer[string]{a, b} {
			q := r.s.Queue(i)
			q.Lock()
			must(t, q.ScheduleAtLocked(tm, r.start.Add(2*iv)))
			q.Unlock()
		}
		q := r.s.Queue(3)
		q.Lock()
		must(t, q.CancelLocked(b))
		q.Unlock()
		time.Sleep(10 * iv)
		if got, want := names(r.take()), []string{"a@20ms"}; !slices.Equal(got, want) {
			t.Fatalf("firings %v, want %v", got, want)
		}
		if st := r.s.Stats(); st.Removed != 1 {
			t.Errorf("Removed %d, want 1", st.Removed)
		}
	})
}

// TestQueueConcurrentWriters: goroutines each holding a Queue's lock for
// data of their own schedule, move and cancel Timers shared between
// Queues; at the end exactly the Timers left scheduled fire, once each.
func TestQueueConcurrentWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		timers := make([]Timer[int], 64)
		fired := make([]atomic.Int32, len(timers))
		s, err := NewScheduler(iv, 8, func(tm *Timer[int], _ time.Time) time.Duration {
			fired[tm.Value].Add(1)
			return 0
		}, WithQueues(4))
		must(t, err)
		defer s.Stop()
		for i := range timers {
			timers[i].Value = i
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				q := s.Queue(g)
				for round := range 50 {
					q.Lock()
					for i := range timers {
						tm := &timers[i]
						switch (i + g + round) % 3 {
						case 0:
							must(t, q.ScheduleAtLocked(tm, time.Now().Add(time.Duration(1+i%5)*iv)))
						case 1:
							must(t, q.CancelLocked(tm))
						}
					}
					q.Unlock()
				}
			})
		}
		wg.Wait()
		// The final word: even Timers scheduled, odd ones cancelled.
		q := s.Queue(1)
		q.Lock()
		for i := range timers {
			if i%2 == 0 {
				must(t, q.ScheduleAtLocked(&timers[i], time.Now().Add(10*iv)))
			} else {
				must(t, q.CancelLocked(&timers[i]))
			}
		}
		q.Unlock()
		if n := s.Len(); n != 32 {
			t.Fatalf("Len = %d, want 32", n)
		}
		for i := range fired {
			fired[i].Store(0)
		}
		time.Sleep(20 * iv)
		synctest.Wait()
		for i := range timers {
			if got, want := fired[i].Load(), int32(1-i%2); got != want {
				t.Errorf("timer %d fired %d times, want %d", i, got, want)
			}
		}
	})
}

// TestQueueArguments: WithQueues rounds up to a power of two and refuses
// n outside 1 to 1<<16; the Locked calls refuse a nil Timer and return
// ErrClosed after Stop; Queue(i) is the same Queue each time.
func TestQueueArguments(t *testing.T) {
	fire := func(*Timer[int], time.Time) time.Duration { return 0 }
	for _, c := range []struct{ n, want int }{{1, 1}, {3, 4}, {16, 16}, {1000, 1024}, {1 << 16, 1 << 16}} {
		s, err := NewScheduler(iv, 8, fire, WithQueues(c.n))
		must(t, err)
		if got := s.Queues(); got != c.want {
			t.Errorf("WithQueues(%d): Queues() = %d, want %d", c.n, got, c.want)
		}
		if s.Queue(c.want-1) != s.Queue(c.want-1) {
			t.Errorf("WithQueues(%d): Queue(%d) differs between calls", c.n, c.want-1)
		}
		s.Stop()
	}
	for _, n := range []int{0, -1, 1<<16 + 1} {
		s, err := NewScheduler(iv, 8, fire, WithQueues(n))
		if s != nil {
			s.Stop()
		}
		if !errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), fmt.Sprintf("queues %d,", n)) {
			t.Errorf("WithQueues(%d): got %v, want ErrArgument naming %d", n, err, n)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		s, err := NewScheduler(iv, 8, fire)
		must(t, err)
		q := s.Queue(0)
		q.Lock()
		if err := q.ScheduleAtLocked(nil, time.Now()); !errors.Is(err, ErrArgument) {
			t.Errorf("ScheduleAtLocked(nil): got %v, want ErrArgument", err)
		}
		if err := q.CancelLocked(nil); !errors.Is(err, ErrArgument) {
			t.Errorf("CancelLocked(nil): got %v, want ErrArgument", err)
		}
		q.Unlock()
		s.Stop()
		q.Lock()
		if err := q.ScheduleAtLocked(&Timer[int]{}, time.Now()); !errors.Is(err, ErrClosed) {
			t.Errorf("ScheduleAtLocked after Stop: got %v, want ErrClosed", err)
		}
		if err := q.CancelLocked(&Timer[int]{}); !errors.Is(err, ErrClosed) {
			t.Errorf("CancelLocked after Stop: got %v, want ErrClosed", err)
		}
		q.Unlock()
	})
}
