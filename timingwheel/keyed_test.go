package timingwheel

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Most tests run in a synctest bubble: time stands still while any goroutine
// runs and jumps to the next timer when all are blocked, so a callback that
// reads time.Now sees exactly the tick the wheel fired on.

const iv = 10 * time.Millisecond // the interval of most test wheels

// event is one callback run, stamped with the bubble's time since start.
type event struct {
	key   string
	value int
	at    time.Duration
}

func (e event) String() string { return fmt.Sprintf("%s=%d@%v", e.key, e.value, e.at) }

// recorder collects callback runs of a keyed wheel.
type recorder struct {
	start time.Time
	ch    chan event
}

func newRecorder() *recorder {
	return &recorder{start: time.Now(), ch: make(chan event, 1<<16)}
}

func (r *recorder) execute(key string, value int) {
	r.ch <- event{key, value, time.Since(r.start)}
}

// take waits until every goroutine in the bubble is blocked (every callback
// due by now has run) and returns the runs since the last take, in order.
// takeByTime is take with events of one tick sorted by key and value:
// callbacks due together run on concurrent workers, in no fixed order.
func (r *recorder) takeByTime() []event {
	out := r.take()
	slices.SortStableFunc(out, func(a, b event) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.value, b.value)
	})
	return out
}

func (r *recorder) take() []event {
	synctest.Wait()
	var out []event
	for {
		select {
		case e := <-r.ch:
			out = append(out, e)
		default:
			return out
		}
	}
}

// newWheel starts a string-keyed wheel recording into a new recorder; the
// wheel is stopped when the test ends.
func newTestWheel(t *testing.T, interval time.Duration, numSlots int, opts ...Option) (*TimingWheel[string, int], *recorder) {
	t.Helper()
	r := newRecorder()
	tw, err := New(interval, numSlots, r.execute, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tw.Stop)
	return tw, r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// firstTick returns the first multiple of iv at or after d.
func firstTick(d, iv time.Duration) time.Duration { return (d + iv - 1) / iv * iv }

func TestFiresAtFirstTickAtOrAfterDeadline(t *testing.T) {
	cases := []struct {
		name         string
		setAt, delay time.Duration
	}{
		{"1ns on a tick", 0, 1},
		{"below one interval on a tick", 0, iv - 1},
		{"below one interval between ticks", 13 * time.Millisecond, 5 * time.Millisecond},
		{"one interval on a tick", 0, iv},
		{"one interval between ticks", 13 * time.Millisecond, iv},
		{"reaches a tick exactly", 13 * time.Millisecond, 7 * time.Millisecond},
		{"one rotation", 0, 8 * iv},
		{"one rotation and 1ns", 0, 8*iv + 1},
		{"three rotations between ticks", 27 * time.Millisecond, 24 * iv},
		{"odd delay", 5 * time.Millisecond, 33 * time.Millisecond},
		{"set after several rotations", 1234 * time.Millisecond, 95 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tw, r := newTestWheel(t, iv, 8)
				time.Sleep(c.setAt)
				must(t, tw.SetTimer("k", 1, c.delay))
				time.Sleep(c.delay + 5*8*iv)
				got := r.take()
				want := firstTick(c.setAt+c.delay, iv)
				if len(got) != 1 || got[0].at != want {
					t.Fatalf("set at %v with delay %v: runs %v, want one at %v", c.setAt, c.delay, got, want)
				}
			})
		})
	}
}

// TestShortDelayFiresOnNextTickOnce: a delay below one interval fires on the
// next tick, for SetTimer, a re-set and MoveTimer, and only once (go-zero's
// MoveTimer runs such a task at once and again later).
func TestShortDelayFiresOnNextTickOnce(t *testing.T) {
	cases := []struct {
		name string
		arm  func(tw *TimingWheel[string, int]) error
	}{
		{"SetTimer", func(tw *TimingWheel[string, int]) error { return tw.SetTimer("k", 1, time.Millisecond) }},
		{"SetTimer of an armed key", func(tw *TimingWheel[string, int]) error {
			must(t, tw.SetTimer("k", 0, time.Hour))
			return tw.SetTimer("k", 1, time.Millisecond)
		}},
		{"MoveTimer", func(tw *TimingWheel[string, int]) error {
			must(t, tw.SetTimer("k", 1, time.Hour))
			return tw.MoveTimer("k", time.Millisecond)
		}},
		{"MoveTimer by 1ns", func(tw *TimingWheel[string, int]) error {
			must(t, tw.SetTimer("k", 1, 3*8*iv))
			return tw.MoveTimer("k", 1)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tw, r := newTestWheel(t, iv, 8)
				time.Sleep(13 * time.Millisecond)
				must(t, c.arm(tw))
				time.Sleep(2 * time.Hour)
				got := r.take()
				if want := []event{{"k", 1, 20 * time.Millisecond}}; !slices.Equal(got, want) {
					t.Fatalf("runs %v, want %v", got, want)
				}
			})
		})
	}
}

// TestMoveLandsOnExactTick moves timers later and earlier, across every
// combination of first delay, time of the move and new delay on a 4-slot
// wheel (go-zero lands about a quarter of such moves a rotation off). A
// timer whose first deadline passed before the move fires there and the move
// is a no-op; every other fires once, at the first tick at or after the
// move's deadline.
func TestMoveLandsOnExactTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const slots = 4
		tw, r := newTestWheel(t, iv, slots)
		type move struct {
			setDelay, moveAt, moveDelay time.Duration
		}
		moves := map[string]move{}
		var moveAts []time.Duration
		for at := time.Duration(0); at < 3*slots*iv; at += iv {
			moveAts = append(moveAts, at+3*time.Millisecond) // between ticks: no tie with a firing
		}
		for set := 1; set <= 3*slots; set++ {
			for _, at := range moveAts {
				for d := time.Duration(1); d <= 3*slots*iv+1; d += 5 * time.Millisecond {
					m := move{time.Duration(set) * iv, at, d}
					key := fmt.Sprint(m)
					moves[key] = m
					must(t, tw.SetTimer(key, 0, m.setDelay))
				}
			}
		}
		now := time.Duration(0)
		for _, at := range moveAts {
			time.Sleep(at - now)
			now = at
			for key, m := range moves {
				if m.moveAt == at {
					must(t, tw.MoveTimer(key, m.moveDelay))
				}
			}
		}
		time.Sleep(10 * slots * iv)
		runs := map[string][]time.Duration{}
		for _, e := range r.take() {
			runs[e.key] = append(runs[e.key], e.at)
		}
		bad := 0
		for key, m := range moves {
			want := firstTick(m.moveAt+m.moveDelay, iv)
			if m.setDelay < m.moveAt {
				want = m.setDelay
			}
			if got := runs[key]; len(got) != 1 || got[0] != want {
				bad++
				if bad <= 10 {
					t.Errorf("%s: runs at %v, want one at %v", key, got, want)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%d of %d moves wrong", bad, len(moves))
		}
	})
}

// TestLongDelayIsExact: 30 days on a 10ms × 1024 wheel (about 250k
// rotations) fires on the exact tick, and the idle owner does not wake once
// per rotation on the way.
func TestLongDelayIsExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, r := newTestWheel(t, 10*time.Millisecond, 1024)
		const month = 30 * 24 * time.Hour
		time.Sleep(3 * time.Millisecond)
		delays := map[string]time.Duration{
			"month":        month,
			"month+1ns":    month + 1,
			"month-5ms":    month - 5*time.Millisecond,
			"week":         7 * 24 * time.Hour,
			"rotation+1ns": 10240*time.Millisecond + 1,
		}
		for k, d := range delays {
			must(t, tw.SetTimer(k, 0, d))
		}
		tw.Len()
		synctest.Wait() // the owner is asleep
		before := tw.k.d.loops.Load()
		time.Sleep(month + time.Hour)
		wakes := tw.k.d.loops.Load() - before
		got := map[string]time.Duration{}
		for _, e := range r.take() {
			if _, dup := got[e.key]; dup {
				t.Errorf("%s ran twice", e.key)
			}
			got[e.key] = e.at
		}
		for k, d := range delays {
			if want := firstTick(3*time.Millisecond+d, 10*time.Millisecond); got[k] != want {
				t.Errorf("%s: ran at %v, want %v", k, got[k], want)
			}
		}
		if wakes > 2*uint64(len(delays))+2 {
			t.Errorf("owner woke %d times for %d timers over a month", wakes, len(delays))
		}
	})
}

// TestOldPositionNeverFires: a timer removed, moved, re-set or drained never
// fires from where it was.
func TestOldPositionNeverFires(t *testing.T) {
	cases := []struct {
		name string
		op   func(tw *TimingWheel[string, int])
		want []event
	}{
		{"removed", func(tw *TimingWheel[string, int]) { must(t, tw.RemoveTimer("k")) }, nil},
		{"moved later", func(tw *TimingWheel[string, int]) { must(t, tw.MoveTimer("k", 100*iv)) },
			[]event{{"k", 1, 103 * iv}}},
		{"moved earlier", func(tw *TimingWheel[string, int]) { must(t, tw.MoveTimer("k", 2*iv)) },
			[]event{{"k", 1, 5 * iv}}},
		{"moved a rotation later", func(tw *TimingWheel[string, int]) { must(t, tw.MoveTimer("k", 7*iv+8*iv)) },
			[]event{{"k", 1, 18 * iv}}},
		{"re-set later", func(tw *TimingWheel[string, int]) { must(t, tw.SetTimer("k", 2, 20*iv)) },
			[]event{{"k", 2, 23 * iv}}},
		{"re-set earlier", func(tw *TimingWheel[string, int]) { must(t, tw.SetTimer("k", 2, iv)) },
			[]event{{"k", 2, 4 * iv}}},
		{"removed and set again", func(tw *TimingWheel[string, int]) {
			must(t, tw.RemoveTimer("k"))
			must(t, tw.SetTimer("k", 3, 4*iv))
		}, []event{{"k", 3, 7 * iv}}},
		{"drained", func(tw *TimingWheel[string, int]) { must(t, tw.Drain(func(string, int) {})) }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tw, r := newTestWheel(t, iv, 8)
				must(t, tw.SetTimer("k", 1, 7*iv))
				time.Sleep(3 * iv)
				c.op(tw)
				time.Sleep(200 * iv)
				if got := r.take(); !slices.Equal(got, c.want) {
					t.Fatalf("runs %v, want %v", got, c.want)
				}
				if n := tw.Len(); n != 0 {
					t.Fatalf("Len = %d, want 0", n)
				}
			})
		})
	}
}

func TestUnknownKeyMoveAndRemoveAreNoOps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, r := newTestWheel(t, iv, 8)
		if err := tw.MoveTimer("nope", iv); err != nil {
			t.Errorf("MoveTimer of an unknown key: got %v, want nil", err)
		}
		if err := tw.RemoveTimer("nope"); err != nil {
			t.Errorf("RemoveTimer of an unknown key: got %v, want nil", err)
		}
		must(t, tw.SetTimer("k", 1, iv))
		time.Sleep(2 * iv)
		if err := tw.MoveTimer("k", iv); err != nil { // it fired: unknown again
			t.Errorf("MoveTimer of a fired key: got %v, want nil", err)
		}
		time.Sleep(3 * iv)
		if got, want := r.take(), []event{{"k", 1, iv}}; !slices.Equal(got, want) {
			t.Errorf("runs %v, want %v", got, want)
		}
		if n := tw.Len(); n != 0 {
			t.Errorf("Len = %d, want 0", n)
		}
	})
}

// TestDrain hands every pending timer, near or a month away, to fn exactly
// once; none fires afterwards; fn may set timers again without deadlock.
func TestDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, r := newTestWheel(t, iv, 8)
		want := map[string]int{}
		for i := range 200 {
			key := fmt.Sprint("k", i)
			want[key] = i
			// From one tick to far beyond any rotation (go-zero's Drain
			// loses timers waiting for later rotations).
			d := time.Duration(i+1) * iv
			if i%3 == 0 {
				d = time.Duration(i+1) * 24 * time.Hour
			}
			must(t, tw.SetTimer(key, i, d))
		}
		time.Sleep(3 * time.Millisecond) // between ticks, nothing due yet
		got := map[string]int{}
		calls := 0
		err := tw.Drain(func(key string, value int) {
			calls++
			got[key] = value
			if value%2 == 0 {
				// Re-arm from inside fn: must neither deadlock nor be drained.
				check(t, tw.SetTimer(key, value+1000, iv))
			}
		})
		must(t, err)
		if calls != len(want) {
			t.Errorf("fn called %d times, want %d", calls, len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: drained value %d, want %d", k, got[k], v)
			}
		}
		if n, want := tw.Len(), 100; n != want {
			t.Errorf("Len after Drain and re-arming = %d, want %d", n, want)
		}
		time.Sleep(400 * 24 * time.Hour)
		runs := r.take()
		if len(runs) != 100 {
			t.Errorf("%d runs after Drain, want the 100 re-armed", len(runs))
		}
		for _, e := range runs {
			if e.value < 1000 || e.at != 20*time.Millisecond {
				t.Errorf("run %v after Drain: only re-armed timers may run, at 20ms (re-armed at 3ms)", e)
			}
		}
		if err := tw.Drain(func(string, int) { t.Error("fn called on an empty wheel") }); err != nil {
			t.Errorf("Drain of an empty wheel: %v", err)
		}
	})
}

// TestDrainNilFuncRemovesNothing pins issue 12 item 8: Drain(nil) removed
// every timer and then panicked.
func TestDrainNilFuncRemovesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, r := newTestWheel(t, iv, 8)
		must(t, tw.SetTimer("a", 1, iv))
		must(t, tw.SetTimer("b", 2, 2*iv))
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("Drain(nil) panicked: %v", p)
				}
			}()
			err = tw.Drain(nil)
		}()
		if !errors.Is(err, ErrArgument) {
			t.Errorf("Drain(nil) = %v, want ErrArgument", err)
		}
		if n := tw.Len(); n != 2 {
			t.Errorf("Len after Drain(nil) = %d, want 2 (nothing removed)", n)
		}
		time.Sleep(2 * iv)
		if got, want := r.take(), []event{{"a", 1, iv}, {"b", 2, 2 * iv}}; !slices.Equal(got, want) {
			t.Errorf("runs %v, want %v", got, want)
		}
	})
}

func TestStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, r := newTestWheel(t, iv, 8)
		must(t, tw.SetTimer("k", 1, iv))
		must(t, tw.SetTimer("far", 2, time.Hour))
		tw.Stop()
		tw.Stop() // idempotent, no panic
		for _, c := range []struct {
			name string
			err  error
		}{
			{"SetTimer", tw.SetTimer("x", 1, iv)},
			{"MoveTimer", tw.MoveTimer("k", iv)},
			{"RemoveTimer", tw.RemoveTimer("k")},
			{"Drain", tw.Drain(func(string, int) { t.Error("Drain after Stop called fn") })},
		} {
			if !errors.Is(c.err, ErrClosed) {
				t.Errorf("%s after Stop: got %v, want ErrClosed", c.name, c.err)
			}
		}
		if n := tw.Len(); n != 0 {
			t.Errorf("Len after Stop = %d, want 0", n)
		}
		time.Sleep(2 * time.Hour)
		if got := r.take(); len(got) != 0 {
			t.Errorf("runs after Stop: %v", got)
		}
	})
}

// TestStopConcurrentWithCallers: callers racing with Stop get nil or
// ErrClosed, never block, and Stop returns.
func TestStopConcurrentWithCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, _ := newTestWheel(t, iv, 8)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					err := tw.SetTimer(fmt.Sprint(g, i), i, iv)
					if errors.Is(err, ErrClosed) {
						return
					}
					check(t, err)
					time.Sleep(time.Duration(g+1) * time.Millisecond)
				}
			})
		}
		time.Sleep(5 * iv)
		tw.Stop()
		wg.Wait()
	})
}

func TestNewValidatesArguments(t *testing.T) {
	exec := func(string, int) {}
	cases := []struct {
		name     string
		interval time.Duration
		slots    int
		exec     func(string, int)
		opts     []Option
	}{
		{"zero interval", 0, 8, exec, nil},
		{"negative interval", -time.Second, 8, exec, nil},
		{"zero slots", iv, 0, exec, nil},
		{"negative slots", iv, -1, exec, nil},
		{"nil execute", iv, 8, nil, nil},
		{"zero concurrency", iv, 8, exec, []Option{WithConcurrency(0)}},
		{"zero batch", iv, 8, exec, []Option{WithBatch(0)}},
		{"nil panic handler", iv, 8, exec, []Option{WithPanicHandler(nil)}},
		{"nil option", iv, 8, exec, []Option{nil}},
		// Issue 12 item 8: 1<<30 slots died of out-of-memory instead.
		{"slots above MaxSlots", iv, 1 << 30, exec, nil},
		// Issue 12 item 11: a nil channel silently meant the real clock.
		{"nil ticker channel", iv, 8, exec, []Option{WithTicker(nil)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("New panicked: %v", r)
					}
				}()
				var tw *TimingWheel[string, int]
				tw, err = New(c.interval, c.slots, c.exec, c.opts...)
				if tw != nil {
					tw.Stop()
					t.Error("got a wheel, want nil")
				}
			}()
			if !errors.Is(err, ErrArgument) {
				t.Fatalf("got %v, want ErrArgument", err)
			}
			if !strings.HasPrefix(err.Error(), "timingwheel: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestNonPositiveDelayIsArgumentError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, r := newTestWheel(t, iv, 8)
		must(t, tw.SetTimer("k", 1, iv))
		for _, d := range []time.Duration{0, -1, math.MinInt64} {
			if err := tw.SetTimer("x", 1, d); !errors.Is(err, ErrArgument) {
				t.Errorf("SetTimer(delay %v): got %v, want ErrArgument", d, err)
			}
			if err := tw.MoveTimer("k", d); !errors.Is(err, ErrArgument) {
				t.Errorf("MoveTimer(delay %v): got %v, want ErrArgument", d, err)
			}
		}
		time.Sleep(2 * iv)
		if got, want := r.take(), []event{{"k", 1, iv}}; !slices.Equal(got, want) {
			t.Errorf("runs %v, want %v (bad calls must change nothing)", got, want)
		}
	})
}

// TestHugeDelayIsClamped: the largest delay neither overflows into the past
// nor panics.
func TestHugeDelayIsClamped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, r := newTestWheel(t, iv, 8)
		must(t, tw.SetTimer("max", 1, math.MaxInt64))
		must(t, tw.SetTimer("k", 2, iv))
		must(t, tw.MoveTimer("k", math.MaxInt64))
		time.Sleep(24 * time.Hour)
		if got := r.take(); len(got) != 0 {
			t.Errorf("runs %v, want none", got)
		}
		if n := tw.Len(); n != 2 {
			t.Errorf("Len = %d, want 2", n)
		}
	})
}

// TestKeysThatCannotBeHashed: with K = any, a key whose dynamic type is not
// comparable is an argument error, not a panic that kills the owner.
func TestKeysThatCannotBeHashed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fired := make(chan any, 10)
		tw, err := New(iv, 8, func(k any, v int) { fired <- k })
		must(t, err)
		defer tw.Stop()
		bad := []struct {
			name string
			key  any
		}{
			{"slice", []int{1}},
			{"map", map[int]int{}},
			{"func", func() {}},
			{"struct holding a slice", struct{ a any }{[]int{}}},
			{"array holding a map", [1]any{map[int]int{}}},
		}
		for _, b := range bad {
			if err := tw.SetTimer(b.key, 1, iv); !errors.Is(err, ErrArgument) {
				t.Errorf("SetTimer(%s): got %v, want ErrArgument", b.name, err)
			}
			if err := tw.MoveTimer(b.key, iv); !errors.Is(err, ErrArgument) {
				t.Errorf("MoveTimer(%s): got %v, want ErrArgument", b.name, err)
			}
			if err := tw.RemoveTimer(b.key); !errors.Is(err, ErrArgument) {
				t.Errorf("RemoveTimer(%s): got %v, want ErrArgument", b.name, err)
			}
		}
		good := []any{"s", 1, struct{ a any }{2}, [1]any{"x"}, nil}
		for _, k := range good {
			if err := tw.SetTimer(k, 1, iv); err != nil {
				t.Errorf("SetTimer(%#v): %v", k, err)
			}
		}
		time.Sleep(2 * iv)
		synctest.Wait()
		if n := len(fired); n != len(good) {
			t.Errorf("%d timers fired, want %d", n, len(good))
		}
	})
}

// TestNaNKeyIsArgumentError: a key that is not equal to itself could be
// stored but never found or deleted again, so its timer and index entry
// would leak; it is refused.
func TestNaNKeyIsArgumentError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := New(iv, 8, func(k float64, v int) {})
		must(t, err)
		defer tw.Stop()
		if err := tw.SetTimer(math.NaN(), 1, iv); !errors.Is(err, ErrArgument) {
			t.Errorf("SetTimer(NaN): got %v, want ErrArgument", err)
		}
		anyTW, err := New(iv, 8, func(k any, v int) {})
		must(t, err)
		defer anyTW.Stop()
		if err := anyTW.SetTimer(struct{ f any }{math.NaN()}, 1, iv); !errors.Is(err, ErrArgument) {
			t.Errorf("SetTimer(struct holding NaN): got %v, want ErrArgument", err)
		}
		time.Sleep(2 * iv)
		if n := tw.Len() + anyTW.Len(); n != 0 {
			t.Errorf("Len = %d after the timers' time, want 0", n)
		}
	})
}

// TestPanickingCallback: a panic is recovered and reported with its key and
// stack; the other timers, before and after it, still run on time.
func TestPanickingCallback(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					mu     sync.Mutex
					panics []*PanicError
				)
				opts := []Option{WithPanicHandler(func(p *PanicError) {
					mu.Lock()
					defer mu.Unlock()
					panics = append(panics, p)
				})}
				if inline {
					opts = append(opts, WithInline())
				}
				r := newRecorder()
				tw, err := New(iv, 8, func(k string, v int) {
					if k == "boom" {
						panic(fmt.Sprint("boom ", v))
					}
					r.execute(k, v)
				}, opts...)
				must(t, err)
				defer tw.Stop()
				must(t, tw.SetTimer("before", 1, iv))
				must(t, tw.SetTimer("boom", 7, 2*iv))
				must(t, tw.SetTimer("same tick", 2, 2*iv))
				must(t, tw.SetTimer("after", 3, 3*iv))
				time.Sleep(5 * iv)
				want := []event{{"before", 1, iv}, {"same tick", 2, 2 * iv}, {"after", 3, 3 * iv}}
				if got := r.take(); !slices.Equal(got, want) {
					t.Errorf("runs %v, want %v", got, want)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(panics) != 1 {
					t.Fatalf("%d panics reported, want 1", len(panics))
				}
				p := panics[0]
				if p.Key != "boom" || p.Value != "boom 7" {
					t.Errorf("reported key %v, value %v; want boom, \"boom 7\"", p.Key, p.Value)
				}
				if !strings.Contains(string(p.Stack), "TestPanickingCallback") {
					t.Errorf("stack does not show the panicking callback:\n%s", p.Stack)
				}
			})
		})
	}
}

// TestCallbacksMayCallTheWheel: a callback re-arms itself, moves and removes
// other timers and calls Len and Drain; nothing deadlocks and every re-arm
// lands on its tick.
func TestCallbacksMayCallTheWheel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tw *TimingWheel[string, int]
		r := newRecorder()
		tw, err := New(iv, 4, func(k string, v int) {
			r.execute(k, v)
			if k == "self" && v < 5 {
				check(t, tw.SetTimer(k, v+1, 3*iv))
			}
			if k == "self" && v == 2 {
				check(t, tw.RemoveTimer("victim"))
				check(t, tw.MoveTimer("moved", iv))
				tw.Len()
				check(t, tw.Drain(func(k string, v int) { check(t, tw.SetTimer(k, v, iv)) }))
			}
		})
		must(t, err)
		defer tw.Stop()
		must(t, tw.SetTimer("self", 0, iv))
		must(t, tw.SetTimer("victim", 0, time.Hour))
		must(t, tw.SetTimer("moved", 0, time.Hour))
		time.Sleep(2 * time.Hour)
		// At 70ms self re-arms itself for 100ms, then Drain re-arms
		// everything (self and moved) for the next tick, where the two run
		// in either order.
		want := []event{
			{"self", 0, 1 * iv}, {"self", 1, 4 * iv}, {"self", 2, 7 * iv},
			{"moved", 0, 8 * iv}, {"self", 3, 8 * iv}, {"self", 4, 11 * iv}, {"self", 5, 14 * iv},
		}
		if got := r.takeByTime(); !slices.Equal(got, want) {
			t.Errorf("runs %v\nwant %v", got, want)
		}
	})
}

// TestConcurrencyOneRunsInOrder: with WithConcurrency(1), callbacks run one
// at a time in firing order (tick by tick), also when they queue up behind a
// slow one.
func TestConcurrencyOneRunsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var running, maxRunning atomic.Int32
		var order []string // written by one callback at a time
		tw, err := New(iv, 8, func(k string, v int) {
			n := running.Add(1)
			defer running.Add(-1)
			if n > maxRunning.Load() {
				maxRunning.Store(n)
			}
			if k == "slow" {
				<-release
			}
			order = append(order, k)
		}, WithConcurrency(1))
		must(t, err)
		defer tw.Stop()
		must(t, tw.SetTimer("slow", 0, iv))
		var want []string
		want = append(want, "slow")
		for i := range 40 {
			key := fmt.Sprintf("t%02d", i)
			want = append(want, key)
			// Four per tick, from the tick after "slow"'s: timers due on
			// one tick fire in no particular order.
			must(t, tw.SetTimer(key, 0, 2*iv+time.Duration(i/4)*iv))
		}
		time.Sleep(20 * iv) // all fire while "slow" holds the only worker
		close(release)
		synctest.Wait()
		// Timers due on one tick fire in no particular order: sort each
		// tick's four before comparing.
		if len(order) == len(want) {
			for i := 1; i < len(order); i += 4 {
				slices.Sort(order[i : i+4])
			}
		}
		if !slices.Equal(order, want) {
			t.Errorf("order (sorted within ticks) %v\nwant  %v", order, want)
		}
		if m := maxRunning.Load(); m != 1 {
			t.Errorf("%d callbacks ran at once, want 1", m)
		}
	})
}

// TestWorkersDoNotBlockTheWheel: by default a slow callback does not delay
// other timers; under WithInline it does, and the owner then catches up on
// every tick it missed, in order, as soon as it is free again.
func TestWorkersDoNotBlockTheWheel(t *testing.T) {
	for _, c := range []struct {
		inline bool
		batch  int
	}{{false, 0}, {true, 0}, {true, 1}} {
		inline := c.inline
		t.Run(fmt.Sprintf("inline=%v batch=%d", c.inline, c.batch), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				r := newRecorder()
				opts := []Option{}
				if inline {
					opts = append(opts, WithInline())
				}
				if c.batch > 0 {
					opts = append(opts, WithBatch(c.batch)) // catch up one timer per slice
				}
				tw, err := New(iv, 4, func(k string, v int) {
					if k == "slow" {
						<-release
					}
					r.execute(k, v)
				}, opts...)
				must(t, err)
				defer tw.Stop()
				must(t, tw.SetTimer("slow", 0, iv))
				for i := 1; i <= 6; i++ {
					must(t, tw.SetTimer(fmt.Sprint("t", i), i, time.Duration(i+1)*iv))
				}
				time.Sleep(100 * time.Millisecond) // 10 intervals
				close(release)
				var want []event
				if inline {
					// Starved for 9 intervals, then every missed tick in order,
					// all at the moment the owner was freed.
					want = append(want, event{"slow", 0, 100 * time.Millisecond})
					for i := 1; i <= 6; i++ {
						want = append(want, event{fmt.Sprint("t", i), i, 100 * time.Millisecond})
					}
				} else {
					for i := 1; i <= 6; i++ {
						want = append(want, event{fmt.Sprint("t", i), i, time.Duration(i+1) * iv})
					}
					want = append(want, event{"slow", 0, 100 * time.Millisecond})
				}
				if got := r.take(); !slices.Equal(got, want) {
					t.Errorf("runs %v\nwant %v", got, want)
				}
				// Still exact after the stall.
				must(t, tw.SetTimer("later", 9, 25*time.Millisecond))
				time.Sleep(time.Second)
				if got, want := r.take(), []event{{"later", 9, 130 * time.Millisecond}}; !slices.Equal(got, want) {
					t.Errorf("after the stall: runs %v, want %v", got, want)
				}
			})
		})
	}
}

// TestTickerFiresOnCeilTicks: under WithTicker a delay d fires on the
// ceil(d/interval)-th tick received after the call.
func TestTickerFiresOnCeilTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ticks := make(chan time.Time)
		tw, r := newTestWheel(t, time.Second, 4, WithTicker(ticks))
		delays := map[string]time.Duration{
			"1ns": 1, "1s": time.Second, "1s+1ns": time.Second + 1, "2.5s": 2500 * time.Millisecond,
			"4s": 4 * time.Second, "9s": 9 * time.Second, "13s": 13 * time.Second,
		}
		for k, d := range delays {
			must(t, tw.SetTimer(k, 0, d))
		}
		time.Sleep(time.Hour) // the clock does not matter in ticker mode
		if got := r.take(); len(got) != 0 {
			t.Fatalf("runs before any tick: %v", got)
		}
		got := map[string]int{}
		for tick := 1; tick <= 15; tick++ {
			ticks <- time.Time{}
			for _, e := range r.take() {
				got[e.key] = tick
			}
		}
		for k, d := range delays {
			if want := int((d + time.Second - 1) / time.Second); got[k] != want {
				t.Errorf("%s fired on tick %d, want %d", k, got[k], want)
			}
		}
	})
}

// TestTickerManyTicksAtOnce: ticks that pile up are each processed, in
// order; the wheel is exactly as far as the ticks received.
func TestTickerManyTicksAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ticks := make(chan time.Time, 100)
		tw, r := newTestWheel(t, time.Second, 8, WithTicker(ticks), WithConcurrency(1), WithBatch(2))
		for i := range 60 {
			// Three timers per tick for ticks 1..20, in scrambled order.
			d := time.Duration((i*7)%20+1) * time.Second
			must(t, tw.SetTimer(fmt.Sprintf("%02d/%d", d/time.Second, i), i, d))
		}
		must(t, tw.SetTimer("tick 51", 0, 51*time.Second))
		for range 50 {
			ticks <- time.Time{}
		}
		got := r.take()
		if len(got) != 60 {
			t.Fatalf("%d runs after 50 ticks, want 60", len(got))
		}
		for i := 1; i < len(got); i++ {
			if got[i].key[:2] < got[i-1].key[:2] {
				t.Fatalf("run %s after %s: not in deadline order", got[i].key, got[i-1].key)
			}
		}
		if n := tw.Len(); n != 1 {
			t.Fatalf("Len = %d, want 1 (tick 51 pending)", n)
		}
		ticks <- time.Time{}
		if got := r.take(); len(got) != 1 || got[0].key != "tick 51" {
			t.Fatalf("runs on tick 51: %v", got)
		}
	})
}

// TestTickerCommandAfterTickCountsFromIt: a timer set after a tick was
// received counts from that tick: a one-interval delay needs one more tick,
// however the owner's loop interleaves the tick and the command.
func TestTickerCommandAfterTickCountsFromIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ticks := make(chan time.Time)
		tw, r := newTestWheel(t, time.Second, 4, WithTicker(ticks))
		for i := range 200 {
			key := fmt.Sprint(i)
			ticks <- time.Time{}
			must(t, tw.SetTimer(key, i, time.Second))
			if got := r.take(); len(got) != 0 {
				t.Fatalf("round %d: %v ran with no tick after it was set", i, got)
			}
			ticks <- time.Time{}
			if got := r.take(); len(got) != 1 || got[0].key != key {
				t.Fatalf("round %d: runs %v on the next tick, want %s", i, got, key)
			}
		}
	})
}

// TestTickerCommandBeforeTickCountsFromBefore: a timer set before a tick is
// received counts from before it, also when the owner finds the command and
// the tick waiting together.
func TestTickerCommandBeforeTickCountsFromBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ticks := make(chan time.Time, 1)
		held := make(chan struct{})
		release := make(chan struct{})
		r := newRecorder()
		tw, err := New(time.Second, 4, func(k string, v int) {
			if k == "hold" {
				held <- struct{}{}
				<-release
				return
			}
			r.execute(k, v)
		}, WithTicker(ticks), WithInline())
		must(t, err)
		defer tw.Stop()
		for i := range 100 {
			key := fmt.Sprint(i)
			// Hold the owner in an inline callback, so that the command and
			// the tick are both waiting when it next looks.
			must(t, tw.SetTimer("hold", 0, time.Second))
			ticks <- time.Time{}
			<-held
			must(t, tw.SetTimer(key, i, time.Second))
			ticks <- time.Time{}
			release <- struct{}{}
			if got := r.take(); len(got) != 1 || got[0].key != key {
				t.Fatalf("round %d: runs %v, want %s on the first tick after it was set", i, got, key)
			}
		}
	})
}

// TestIdleWheelSleeps: with 1000 timers far away, the owner sleeps through a
// whole rotation without waking, and then wakes at most once per distinct
// deadline.
func TestIdleWheelSleeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const slots = 64
		tw, r := newTestWheel(t, iv, slots)
		ticks := map[time.Duration]bool{}
		for i := range 1000 {
			d := 5*slots*iv + time.Duration(i%slots)*iv + time.Duration(i%7)*time.Millisecond
			ticks[firstTick(d, iv)] = true
			must(t, tw.SetTimer(fmt.Sprint(i), i, d))
		}
		tw.Len()
		synctest.Wait() // the owner is asleep
		before := tw.k.d.loops.Load()
		time.Sleep(slots * iv)
		if wakes := tw.k.d.loops.Load() - before; wakes != 0 {
			t.Errorf("owner woke %d times in a rotation with nothing due", wakes)
		}
		time.Sleep(10 * slots * iv)
		if got := len(r.take()); got != 1000 {
			t.Fatalf("%d runs, want 1000", got)
		}
		if wakes := tw.k.d.loops.Load() - before; wakes > uint64(len(ticks))+2 {
			t.Errorf("owner woke %d times for %d distinct deadlines", wakes, len(ticks))
		}
	})
}

// TestMassExpiryServesCallers: when 200k timers fall due on one tick, the
// owner works through them in slices and serves callers in between: a
// SetTimer (which never waits for the owner) and a Len (which does) issued
// while the backlog is pending return with most timers still pending.
func TestMassExpiryServesCallers(t *testing.T) {
	n := 200_000
	if testing.Short() || raceEnabled {
		n = 50_000
	}
	synctest.Test(t, func(t *testing.T) {
		var (
			tw    *TimingWheel[string, int]
			ran   atomic.Int64
			first sync.Once
			seen  = make(chan int, 1)
		)
		tw, err := New(iv, 8, func(k string, v int) {
			ran.Add(1)
			first.Do(func() {
				// On the owner goroutine, in the middle of the backlog: let
				// another caller queue up, and wait until it is blocked.
				go func() { check(t, tw.SetTimer("late", -1, iv)) }()
				go func() { seen <- tw.Len() }()
				synctest.Wait()
			})
		}, WithInline(), WithBatch(1000))
		must(t, err)
		defer tw.Stop()
		for i := range n {
			must(t, tw.SetTimer(fmt.Sprint(i), i, iv))
		}
		time.Sleep(iv)
		pending := <-seen
		// Once the backlog is done only "late" is pending: more proves
		// that Len was answered in the middle of it.
		if pending <= 1 || pending > n+1 {
			t.Fatalf("Len during the backlog = %d, want between 2 and %d", pending, n+1)
		}
		t.Logf("Len during the backlog of %d: %d", n, pending)
		time.Sleep(2 * iv)
		synctest.Wait()
		if got, want := ran.Load(), int64(n+1); got != want {
			t.Errorf("%d callbacks ran, want %d", got, want)
		}
	})
}

// check reports a non-nil error from any goroutine.
func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Error(err)
	}
}
