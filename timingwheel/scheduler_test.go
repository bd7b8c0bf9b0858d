package timingwheel

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// sfiring is one call of a Scheduler's fire, with the now it was given and
// the bubble's clock, both since start.
type sfiring struct {
	name    string
	now, at time.Duration
	rearmed time.Duration
}

func (f sfiring) String() string { return fmt.Sprintf("%s@%v", f.name, f.at) }

// schedRecorder is a Scheduler whose Timers carry their names; rearm says
// what fire returns for each name, consumed one value per call.
type schedRecorder struct {
	start time.Time
	s     *Scheduler[string]
	rearm map[string][]time.Duration
	panic map[string]bool
	got   []sfiring // appended on the owner goroutine, read after synctest.Wait
}

func newSchedRecorder(t *testing.T, numSlots int, opts ...Option) *schedRecorder {
	t.Helper()
	r := &schedRecorder{start: time.Now(), rearm: map[string][]time.Duration{}, panic: map[string]bool{}}
	s, err := NewScheduler(iv, numSlots, r.fire, opts...)
	must(t, err)
	t.Cleanup(s.Stop)
	r.s = s
	return r
}

func (r *schedRecorder) fire(tm *Timer[string], now time.Time) time.Duration {
	if tm.scheduled() {
		panic("fire got a scheduled Timer")
	}
	name := tm.Value
	if r.panic[name] {
		panic("boom " + name)
	}
	var d time.Duration
	if q := r.rearm[name]; len(q) > 0 {
		d, r.rearm[name] = q[0], q[1:]
	}
	r.got = append(r.got, sfiring{name, now.Sub(r.start), time.Since(r.start), d})
	return d
}

func (r *schedRecorder) take() []sfiring {
	synctest.Wait()
	got := r.got
	r.got = nil
	return got
}

func names(fs []sfiring) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.String())
	}
	return out
}

func TestSchedulerFiresOnExactTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRecorder(t, 8)
		a, b, c := &Timer[string]{Value: "a"}, &Timer[string]{Value: "b"}, &Timer[string]{Value: "c"}
		time.Sleep(3 * time.Millisecond)
		must(t, r.s.Schedule(a, 1))
		must(t, r.s.Schedule(b, 17*time.Millisecond))
		must(t, r.s.Schedule(c, 9*8*iv))
		time.Sleep(time.Second)
		got := r.take()
		if want := []string{"a@10ms", "b@20ms", "c@730ms"}; !slices.Equal(names(got), want) {
			t.Fatalf("firings %v, want %v", names(got), want)
		}
		for _, f := range got {
			if f.now != f.at {
				t.Errorf("%s: fire got now %v, want the tick %v", f.name, f.now, f.at)
			}
		}
	})
}

func TestSchedulerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRecorder(t, 8)
		a, b, never := &Timer[string]{Value: "a"}, &Timer[string]{Value: "b"}, &Timer[string]{Value: "never"}
		must(t, r.s.Schedule(a, 5*iv))
		must(t, r.s.Schedule(b, 2*iv))
		must(t, r.s.Cancel(never)) // never scheduled: a no-op
		time.Sleep(iv)
		must(t, r.s.Cancel(a))
		must(t, r.s.Cancel(a)) // twice: a no-op
		time.Sleep(5 * iv)
		must(t, r.s.Cancel(b)) // already fired: a no-op
		time.Sleep(10 * iv)
		if got, want := names(r.take()), []string{"b@20ms"}; !slices.Equal(got, want) {
			t.Fatalf("firings %v, want %v", got, want)
		}
		if n := r.s.Len(); n != 0 {
			t.Fatalf("Len = %d, want 0", n)
		}
		// A cancelled Timer can be scheduled again.
		must(t, r.s.Schedule(a, iv))
		time.Sleep(2 * iv)
		if got, want := names(r.take()), []string{"a@170ms"}; !slices.Equal(got, want) {
			t.Fatalf("firings %v, want %v", got, want)
		}
	})
}

// TestSchedulerRearmByReturn: a duration returned by fire re-arms the Timer
// that far after the tick, exactly, with no trip through the channel.
func TestSchedulerRearmByReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRecorder(t, 4)
		a := &Timer[string]{Value: "a"}
		r.rearm["a"] = []time.Duration{3 * iv, 1, 25 * time.Millisecond, 4 * iv, -time.Second}
		must(t, r.s.Schedule(a, iv))
		time.Sleep(time.Second)
		want := []string{"a@10ms", "a@40ms", "a@50ms", "a@80ms", "a@120ms"}
		if got := names(r.take()); !slices.Equal(got, want) {
			t.Fatalf("firings %v, want %v", got, want)
		}
		if n := r.s.Len(); n != 0 {
			t.Fatalf("Len = %d after fire returned a negative duration, want 0", n)
		}
	})
}

// TestSchedulerRescheduleScheduledTimer: Schedule of a scheduled Timer moves
// it, later or earlier, and it fires once, at the new time.
func TestSchedulerRescheduleScheduledTimer(t *testing.T) {
	cases := []struct {
		name  string
		delay time.Duration
		want  string
	}{
		{"later", 40 * iv, "a@430ms"},
		{"a rotation later", 5*iv + 8*iv, "a@160ms"},
		{"earlier", iv, "a@40ms"},
		{"the same tick", 2 * iv, "a@50ms"},
		{"below one interval", 1, "a@40ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newSchedRecorder(t, 8)
				a := &Timer[string]{Value: "a"}
				must(t, r.s.Schedule(a, 5*iv))
				time.Sleep(3 * iv)
				must(t, r.s.Schedule(a, c.delay))
				if n := r.s.Len(); n != 1 {
					t.Errorf("Len = %d, want 1", n)
				}
				time.Sleep(time.Second)
				if got := names(r.take()); !slices.Equal(got, []string{c.want}) {
					t.Fatalf("firings %v, want [%s]", got, c.want)
				}
			})
		})
	}
}

// TestSchedulerPanicInFire: the panic is reported with the Timer's Value,
// the Timer is left unscheduled (and can be scheduled again), and the other
// Timers of the same and later ticks fire.
func TestSchedulerPanicInFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var panics []*PanicError
		r := newSchedRecorder(t, 8, WithPanicHandler(func(p *PanicError) { panics = append(panics, p) }))
		r.panic["bad"] = true
		bad, same, later := &Timer[string]{Value: "bad"}, &Timer[string]{Value: "same"}, &Timer[string]{Value: "later"}
		must(t, r.s.Schedule(bad, iv))
		must(t, r.s.Schedule(same, iv))
		must(t, r.s.Schedule(later, 2*iv))
		time.Sleep(5 * iv)
		if got, want := names(r.take()), []string{"same@10ms", "later@20ms"}; !slices.Equal(got, want) {
			t.Fatalf("firings %v, want %v", got, want)
		}
		if len(panics) != 1 || panics[0].Key != "bad" || panics[0].Value != "boom bad" {
			t.Fatalf("panics %+v, want one for bad", panics)
		}
		if !strings.Contains(string(panics[0].Stack), "schedRecorder") {
			t.Errorf("stack does not show fire:\n%s", panics[0].Stack)
		}
		if n := r.s.Len(); n != 0 {
			t.Fatalf("Len = %d, want 0", n)
		}
		r.panic["bad"] = false
		must(t, r.s.Schedule(bad, iv))
		time.Sleep(2 * iv)
		if got, want := names(r.take()), []string{"bad@60ms"}; !slices.Equal(got, want) {
			t.Fatalf("firings after re-scheduling %v, want %v", got, want)
		}
	})
}

func TestSchedulerLenAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRecorder(t, 8)
		timers := make([]Timer[string], 10)
		for i := range timers {
			timers[i].Value = fmt.Sprint(i)
			must(t, r.s.Schedule(&timers[i], time.Duration(i+1)*iv))
		}
		must(t, r.s.Schedule(&timers[0], time.Hour)) // rescheduling does not count twice
		if n := r.s.Len(); n != 10 {
			t.Fatalf("Len = %d, want 10", n)
		}
		time.Sleep(5*iv + 5*time.Millisecond)
		if n := r.s.Len(); n != 6 {
			t.Fatalf("Len after 5 ticks = %d, want 6", n)
		}
		r.s.Stop()
		r.s.Stop()
		if err := r.s.Schedule(&timers[1], iv); !errors.Is(err, ErrClosed) {
			t.Errorf("Schedule after Stop: got %v, want ErrClosed", err)
		}
		if err := r.s.Cancel(&timers[1]); !errors.Is(err, ErrClosed) {
			t.Errorf("Cancel after Stop: got %v, want ErrClosed", err)
		}
		if n := r.s.Len(); n != 0 {
			t.Errorf("Len after Stop = %d, want 0", n)
		}
		r.take()
		time.Sleep(2 * time.Hour)
		if got := r.take(); len(got) != 0 {
			t.Errorf("firings after Stop: %v", names(got))
		}
	})
}

func TestSchedulerArguments(t *testing.T) {
	fire := func(*Timer[int], time.Time) time.Duration { return 0 }
	for _, c := range []struct {
		name     string
		interval time.Duration
		slots    int
		fire     func(*Timer[int], time.Time) time.Duration
		opts     []Option
	}{
		{"zero interval", 0, 8, fire, nil},
		{"negative slots", iv, -3, fire, nil},
		{"nil fire", iv, 8, nil, nil},
		{"nil option", iv, 8, fire, []Option{nil}},
		{"zero batch", iv, 8, fire, []Option{WithBatch(0)}},
		{"slots above MaxSlots", iv, MaxSlots + 1, fire, nil},
		{"nil ticker channel", iv, 8, fire, []Option{WithTicker(nil)}},
	} {
		s, err := NewScheduler(c.interval, c.slots, c.fire, c.opts...)
		if s != nil {
			s.Stop()
		}
		if !errors.Is(err, ErrArgument) {
			t.Errorf("NewScheduler with %s: got %v, want ErrArgument", c.name, err)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		s, err := NewScheduler(iv, 8, fire)
		must(t, err)
		defer s.Stop()
		for _, c := range []struct {
			name string
			err  error
		}{
			{"Schedule nil", s.Schedule(nil, iv)},
			{"Schedule zero delay", s.Schedule(&Timer[int]{}, 0)},
			{"Schedule negative delay", s.Schedule(&Timer[int]{}, -iv)},
			{"Cancel nil", s.Cancel(nil)},
		} {
			if !errors.Is(c.err, ErrArgument) {
				t.Errorf("%s: got %v, want ErrArgument", c.name, c.err)
			}
		}
		if n := s.Len(); n != 0 {
			t.Errorf("Len = %d after refused calls, want 0", n)
		}
	})
}

// TestSchedulerMassExpiry: many Timers due on one tick, each re-armed by its
// fire, all land exactly one period later, and Len stays exact.
func TestSchedulerMassExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10_000
		fired := map[time.Duration]int{}
		start := time.Now()
		s, err := NewScheduler(iv, 8, func(tm *Timer[int], now time.Time) time.Duration {
			fired[now.Sub(start)]++
			if tm.Value == 0 {
				tm.Value = 1
				return 3 * iv
			}
			return 0
		}, WithBatch(100))
		must(t, err)
		defer s.Stop()
		timers := make([]Timer[int], n)
		for i := range timers {
			must(t, s.Schedule(&timers[i], iv))
		}
		time.Sleep(iv)
		if got := s.Len(); got != n {
			t.Errorf("Len after the first tick = %d, want %d (all re-armed)", got, n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if want := map[time.Duration]int{iv: n, 4 * iv: n}; fmt.Sprint(fired) != fmt.Sprint(want) {
			t.Errorf("firings per tick %v, want %v", fired, want)
		}
	})
}

// TestScheduleRacingOwnerSleep: a Schedule decides whether to wake the
// owner after it has queued its command, with the shard locked. Here the
// owner wakes, fires everything and goes to sleep with nothing pending
// while the caller is between reading the clock and queueing; the command
// must still wake it, and its Timer fire on its own tick.
func TestScheduleRacingOwnerSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRecorder(t, 8)
		a, b := &Timer[string]{Value: "a"}, &Timer[string]{Value: "b"}
		must(t, r.s.Schedule(a, 5*iv))
		synctest.Wait() // the owner sleeps until a's tick
		once := true
		r.s.beforeQueue = func() {
			if once {
				once = false
				time.Sleep(6 * iv) // the owner fires a and sleeps, idle
				synctest.Wait()
			}
		}
		must(t, r.s.Schedule(b, 10*iv)) // its deadline is read at 0
		r.s.beforeQueue = nil
		time.Sleep(time.Hour)
		if got, want := names(r.take()), []string{"a@50ms", "b@100ms"}; !slices.Equal(got, want) {
			t.Errorf("fired %v, want %v", got, want)
		}
	})
}

// TestScheduleAt: a deadline fires on the first tick at or after it; one
// that has passed, on the next tick; under WithTicker, on the tick that
// covers the time from the call to the deadline.
func TestScheduleAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRecorder(t, 8)
		time.Sleep(3 * time.Millisecond)
		a, b := &Timer[string]{Value: "a"}, &Timer[string]{Value: "b"}
		must(t, r.s.ScheduleAt(a, r.start.Add(35*time.Millisecond)))
		must(t, r.s.ScheduleAt(b, r.start.Add(-time.Hour)))
		time.Sleep(time.Second)
		if got, want := names(r.take()), []string{"b@10ms", "a@40ms"}; !slices.Equal(got, want) {
			t.Errorf("fired %v, want %v", got, want)
		}
		if err := r.s.ScheduleAt(nil, time.Now()); !errors.Is(err, ErrArgument) {
			t.Errorf("ScheduleAt(nil): got %v, want ErrArgument", err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		ticks := make(chan time.Time)
		r := newSchedRecorder(t, 8, WithTicker(ticks))
		must(t, r.s.ScheduleAt(&Timer[string]{Value: "c"}, time.Now().Add(2*iv+time.Millisecond)))
		ticks <- time.Time{}
		ticks <- time.Time{}
		if got := names(r.take()); len(got) != 0 {
			t.Errorf("under WithTicker fired %v after two ticks, want nothing before the third", got)
		}
		ticks <- time.Time{}
		if got, want := names(r.take()), []string{"c@0s"}; !slices.Equal(got, want) {
			t.Errorf("under WithTicker fired %v on the third tick, want %v (no time passes)", got, want)
		}
	})
}

// TestCancelStreamWakesOwnerRarely: as TestRemovalStreamWakesOwnerRarely,
// for Scheduler.Cancel: a steady stream of Cancels of far Timers wakes the
// owner about once per lazyWait, and every cancelled Timer is unlinked
// within lazyWait.
func TestCancelStreamWakesOwnerRarely(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRecorder(t, 8)
		const n = 1000
		const every = 10 * time.Millisecond // n Cancels over 10 lazyWaits
		timers := make([]Timer[string], n)
		for i := range timers {
			must(t, r.s.Schedule(&timers[i], time.Hour))
		}
		r.s.Len()
		synctest.Wait() // the owner sleeps until the hour is up
		before := r.s.d.loops.Load()
		for i := range timers {
			must(t, r.s.Cancel(&timers[i]))
			time.Sleep(every)
		}
		time.Sleep(lazyWait + iv)
		synctest.Wait()
		wakes := r.s.d.loops.Load() - before
		if limit := uint64(n*every/lazyWait) + 3; wakes > limit {
			t.Errorf("owner woke %d times for %d Cancels over %v, want at most %d", wakes, n, n*every, limit)
		}
		if got := r.s.Stats().Pending; got != 0 {
			t.Errorf("Pending = %d %v after the last Cancel, want 0", got, lazyWait+iv)
		}
	})
}
