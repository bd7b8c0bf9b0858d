package timingwheel

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// The Scheduler.Cancel contract (issue 11, "Fix on the way"): no firing of
// a Timer begins after Cancel returns. Before the fix, a Cancel queued after
// the owner had taken its batches and before it fired the Timer was
// applied only after the firing.

// cancelScheduler starts a Scheduler whose fire records the Timers' names
// and runs the hook registered for a name, if any, before returning. A
// hook must be registered before its Timer is scheduled: the Schedule
// hands it over to the owner goroutine.
type cancelScheduler struct {
	s     *Scheduler[string]
	start time.Time
	fired []string // owner goroutine only; read after synctest.Wait
	hooks map[string]func()
}

func newCancelScheduler(t *testing.T, opts ...Option) *cancelScheduler {
	c := &cancelScheduler{start: time.Now(), hooks: map[string]func(){}}
	s, err := NewScheduler(iv, 8, func(tm *Timer[string], now time.Time) time.Duration {
		c.fired = append(c.fired, tm.Value+"@"+now.Sub(c.start).String())
		if h := c.hooks[tm.Value]; h != nil {
			h()
		}
		return 0
	}, opts...)
	must(t, err)
	t.Cleanup(s.Stop)
	c.s = s
	return c
}

// schedule schedules a new Timer and waits until the owner has linked it,
// so that Timers due on one tick fire in the order they were scheduled
// (each shard's commands are taken in turn, in no fixed order).
func (c *cancelScheduler) schedule(t *testing.T, name string, delay time.Duration) *Timer[string] {
	tm := &Timer[string]{Value: name}
	must(t, c.s.Schedule(tm, delay))
	synctest.Wait()
	return tm
}

func (c *cancelScheduler) check(t *testing.T, want ...string) {
	t.Helper()
	synctest.Wait()
	if !slices.Equal(c.fired, want) {
		t.Errorf("fired %v, want %v", c.fired, want)
	}
}

// TestCancelSiblingFromFire: a fire callback cancels a Timer due on the same
// tick, which the owner has already detached for firing.
func TestCancelSiblingFromFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCancelScheduler(t)
		b := &Timer[string]{Value: "b"}
		c.hooks["a"] = func() { must(t, c.s.Cancel(b)) }
		c.schedule(t, "a", iv)
		must(t, c.s.Schedule(b, iv))
		synctest.Wait()
		c.schedule(t, "c", iv)
		time.Sleep(2 * iv)
		c.check(t, "a@10ms", "c@10ms")
		if n := c.s.Len(); n != 0 {
			t.Errorf("Len = %d, want 0", n)
		}
	})
}

// TestCancelBetweenTakeAndAdvance: another goroutine cancels a due Timer
// after the owner has taken the queued commands and before it advances.
func TestCancelBetweenTakeAndAdvance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCancelScheduler(t)
		a := c.schedule(t, "a", iv)
		c.schedule(t, "b", iv)
		cancelNow, cancelled := make(chan struct{}), make(chan struct{})
		go func() {
			<-cancelNow
			must(t, c.s.Cancel(a))
			close(cancelled)
		}()
		hooked := make(chan bool, 1)
		hooked <- false
		hook := func() { // owner goroutine
			if !<-hooked && time.Since(c.start) >= iv {
				close(cancelNow)
				<-cancelled
				hooked <- true
				return
			}
			hooked <- false
		}
		c.s.d.beforeAdvance.Store(&hook)
		time.Sleep(2 * iv)
		c.check(t, "b@10ms")
		if !<-hooked {
			t.Fatal("the hook never ran at the due tick")
		}
	})
}

// TestCancelDuringSiblingFire: another goroutine cancels a Timer due on the
// tick whose firing is under way, while the fire of a sibling blocks.
func TestCancelDuringSiblingFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCancelScheduler(t)
		release := make(chan struct{})
		c.hooks["a"] = func() { <-release }
		c.schedule(t, "a", iv)
		b := c.schedule(t, "b", iv)
		time.Sleep(iv)
		synctest.Wait() // a's fire is blocked
		must(t, c.s.Cancel(b))
		close(release)
		c.check(t, "a@10ms")
	})
}

// TestCancelAndRescheduleBeforeAdvance: a Timer cancelled and scheduled
// again between the owner's take and its advance fires once, at the new
// deadline, not at the old one.
func TestCancelAndRescheduleBeforeAdvance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCancelScheduler(t)
		a := c.schedule(t, "a", iv)
		hooked := false // owner goroutine only
		hook := func() {
			if !hooked && time.Since(c.start) >= iv {
				hooked = true
				must(t, c.s.Cancel(a))
				must(t, c.s.Schedule(a, 3*iv))
			}
		}
		c.s.d.beforeAdvance.Store(&hook)
		time.Sleep(5 * iv)
		c.check(t, "a@40ms")
	})
}

// TestCancelUnderSlices: with a batch of one timer per slice, a Cancel made
// by the first fire reaches a sibling due later in the same tick.
func TestCancelUnderSlices(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCancelScheduler(t, WithBatch(1))
		d := &Timer[string]{Value: "d"}
		c.hooks["a"] = func() { must(t, c.s.Cancel(d)) }
		c.schedule(t, "a", iv)
		c.schedule(t, "b", iv)
		must(t, c.s.Schedule(d, iv))
		time.Sleep(2 * iv)
		c.check(t, "a@10ms", "b@10ms")
	})
}
