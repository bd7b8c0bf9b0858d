package compat

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	gz "github.com/zeromicro/go-zero/core/collection"
	"github.com/zeromicro/go-zero/core/timex"

	"github.com/ttlkit/ttlkit/collection"
)

// bothFires runs scenario on a fresh rig of each wheel, in its own bubble,
// and returns what fired: go-zero's first, then ours.
func bothFires(t *testing.T, slots int, scenario func(r *rig)) (gozero, ours []fire) {
	t.Helper()
	run := func(impl wheelImpl) (fs []fire) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, impl, slots)
			scenario(r)
			fs = r.fires()
		})
		return fs
	}
	return run(goZeroWheel), run(ourWheel)
}

func expectFires(t *testing.T, name string, gotGoZero, gotOurs, wantGoZero, wantOurs []fire) {
	t.Helper()
	if !slices.Equal(gotGoZero, wantGoZero) {
		t.Errorf("%s: go-zero fired %v, want %v", name, gotGoZero, wantGoZero)
	}
	if !slices.Equal(gotOurs, wantOurs) {
		t.Errorf("%s: ours fired %v, want %v", name, gotOurs, wantOurs)
	}
}

// TestDiff_DelayRoundedDownInGoZero: with a fake ticker, go-zero places a
// timer floor(delay/interval) ticks ahead, so a delay that is not a whole
// number of intervals fires up to one interval early; ours rounds up.
func TestDiff_DelayRoundedDownInGoZero(t *testing.T) {
	for _, c := range []struct {
		name             string
		delay            time.Duration
		gozeroAt, oursAt int
	}{
		{"2.5 intervals", 5 * iv / 2, 2, 3},
		{"1 interval + 1ns", iv + 1, 1, 2},
		{"4 intervals - 1ns", 4*iv - 1, 3, 4},
	} {
		gozero, ours := bothFires(t, 8, func(r *rig) {
			r.set("k", 1, c.delay)
			r.advance(6)
		})
		expectFires(t, c.name, gozero, ours, []fire{{c.gozeroAt, "k", 1}}, []fire{{c.oursAt, "k", 1}})
	}
}

// TestDiff_EarlyFiringRealClockInGoZero: with the real clock (a synctest
// bubble's), go-zero counts ticks from whenever its ticker last ticked, so a
// timer set 0.9 s into a 1 s tick with a delay of 1 s fires 0.1 s later. Ours
// reads the clock and never fires before the delay has passed.
func TestDiff_EarlyFiringRealClockInGoZero(t *testing.T) {
	for _, c := range []struct {
		impl     wheelImpl
		min, max time.Duration
	}{
		{goZeroWheel, 100 * time.Millisecond, 100 * time.Millisecond},
		{ourWheel, time.Second, 2 * time.Second}, // never early, at most one interval late
	} {
		synctest.Test(t, func(t *testing.T) {
			after := make(chan time.Duration, 1)
			var setAt time.Time
			w, err := c.impl.realClock(time.Second, 60, func(key, value any) { after <- time.Since(setAt) })
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			time.Sleep(900 * time.Millisecond)
			setAt = time.Now()
			w.SetTimer("k", 1, time.Second)
			if got := <-after; got < c.min || got > c.max {
				t.Errorf("%s: delay 1s fired after %v, want within [%v, %v]", c.impl.name, got, c.min, c.max)
			}
		})
	}
}

// TestDiff_MoveLandsRotationOffInGoZero: go-zero re-places a moved timer by
// comparing raw slot indices instead of distances from the cursor, so some
// moves (earlier ones, later ones past one rotation, and SetTimer of a
// pending key, which moves it) land a whole rotation late or early. Ours
// lands every move on its exact tick. (Moves go-zero gets right are swept
// by TestSame_WheelMoveLaterWithinRotation.)
func TestDiff_MoveLandsRotationOffInGoZero(t *testing.T) {
	const slots = 4
	for _, c := range []struct {
		name             string
		scenario         func(r *rig)
		gozeroAt, oursAt int
	}{
		{"earlier move lands a rotation late", func(r *rig) {
			r.set("k", 1, ticks(5))
			r.advance(1)
			r.move("k", ticks(1))
		}, 6, 2},
		{"later move past a rotation lands a rotation early", func(r *rig) {
			r.set("k", 1, ticks(2))
			r.advance(1)
			r.move("k", ticks(8))
		}, 5, 9},
		{"SetTimer of a pending key lands a rotation late", func(r *rig) {
			r.set("k", 0, ticks(5))
			r.advance(1)
			r.set("k", 1, ticks(1))
		}, 6, 2},
	} {
		gozero, ours := bothFires(t, slots, func(r *rig) {
			c.scenario(r)
			r.advance(4 * slots)
		})
		expectFires(t, c.name, gozero, ours, []fire{{c.gozeroAt, "k", 1}}, []fire{{c.oursAt, "k", 1}})
	}
}

// TestDiff_MoveShortDelayRunsTwiceInGoZero: go-zero runs a timer moved to
// less than one interval at once, on its own goroutine, and leaves it armed
// where it was, so it runs again. Ours fires it once, on the next tick.
func TestDiff_MoveShortDelayRunsTwiceInGoZero(t *testing.T) {
	gozero, ours := bothFires(t, 8, func(r *rig) {
		r.set("k", 1, ticks(5))
		r.move("k", time.Millisecond)
		r.advance(8)
	})
	expectFires(t, "move to 1ms", gozero, ours,
		[]fire{{0, "k", 1}, {5, "k", 1}}, []fire{{1, "k", 1}})
}

// TestDiff_DrainedKeysStayIndexedInGoZero: go-zero's drainAll hands over
// every timer (TestSame_WheelDrainHandsOverEveryTimer) but leaves the
// drained keys in its key index. A later SetTimer of such a key updates the
// dead entry and arms nothing, so the timer is lost; a later MoveTimer can
// bring a drained timer back to life. Ours forgets drained keys.
func TestDiff_DrainedKeysStayIndexedInGoZero(t *testing.T) {
	for _, c := range []struct {
		name               string
		after              func(r *rig)
		wantGoZero, wantUs []fire
	}{
		{"SetTimer after Drain is lost", func(r *rig) { r.set("k", 2, ticks(2)) },
			nil, []fire{{3, "k", 2}}},
		{"MoveTimer after Drain revives the drained timer", func(r *rig) { r.move("k", ticks(1)) },
			[]fire{{2, "k", 1}}, nil},
	} {
		gozero, ours := bothFires(t, 8, func(r *rig) {
			r.set("k", 1, ticks(3))
			r.advance(1)
			if got, _ := r.drain(); len(got) != 1 {
				t.Errorf("%s: Drain handed %v, want k", c.name, got)
			}
			c.after(r)
			r.advance(16)
		})
		expectFires(t, c.name, gozero, ours, c.wantGoZero, c.wantUs)
	}
}

// TestDiff_DrainIsSynchronous: go-zero's Drain returns as soon as its
// goroutine takes the request and runs fn later, on up to 8 goroutines at
// once. Ours has called fn for every timer, on the calling goroutine, when
// Drain returns.
func TestDiff_DrainIsSynchronous(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, goZeroWheel, 8)
		for k := range 3 {
			r.set(k, k, ticks(2))
		}
		release := make(chan struct{})
		var entered, done atomic.Int32
		err := r.w.Drain(func(key, value any) { entered.Add(1); <-release; done.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		if n := done.Load(); n != 0 {
			t.Errorf("go-zero: %d fn calls done when Drain returned, want 0 (fn blocks)", n)
		}
		synctest.Wait()
		if n := entered.Load(); n != 3 {
			t.Errorf("go-zero: %d fn calls running at once, want 3", n)
		}
		close(release)
		synctest.Wait()
	})
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, ourWheel, 8)
		for k := range 3 {
			r.set(k, k, ticks(2))
		}
		n := 0 // not synchronized: fn runs on this goroutine
		if err := r.w.Drain(func(key, value any) { n++ }); err != nil {
			t.Fatal(err)
		}
		if n != 3 {
			t.Errorf("ours: %d fn calls done when Drain returned, want 3", n)
		}
	})
}

// TestDiff_StopTwicePanicsInGoZero: go-zero's Stop closes a channel, so a
// second Stop panics. Ours may be stopped any number of times.
func TestDiff_StopTwicePanicsInGoZero(t *testing.T) {
	for _, c := range []struct {
		impl      wheelImpl
		wantPanic bool
	}{{goZeroWheel, true}, {ourWheel, false}} {
		synctest.Test(t, func(t *testing.T) {
			w, err := c.impl.withTicker(iv, 4, func(key, value any) {}, timex.NewFakeTicker())
			if err != nil {
				t.Fatal(err)
			}
			w.Stop()
			var p any
			func() {
				defer func() { p = recover() }()
				w.Stop()
			}()
			if (p != nil) != c.wantPanic {
				t.Errorf("%s: second Stop panicked with %v, want panic %v", c.impl.name, p, c.wantPanic)
			}
			synctest.Wait()
		})
	}
}

// TestDiff_UnhashableKeyCrashesGoZero: go-zero checks only for a nil key; a
// slice key reaches its goroutine, whose map lookup panics and ends the
// process (shown in a child process). Ours returns ErrArgument and goes on.
func TestDiff_UnhashableKeyCrashesGoZero(t *testing.T) {
	out, failed := runHelper(t, "TestHelper_GoZeroUnhashableKey")
	if !failed || !strings.Contains(out, "hash of unhashable type: []int") {
		t.Errorf("go-zero with a []int key: failed=%v, output:\n%s\nwant a crash with 'hash of unhashable type: []int'", failed, out)
	}
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, ourWheel, 4)
		for _, key := range []any{[]int{1}, map[string]int{}, func() {}, [1][]int{}} {
			if err := r.set(key, 1, iv); !errors.Is(err, collection.ErrArgument) {
				t.Errorf("ours: SetTimer(%T): got %v, want ErrArgument", key, err)
			}
		}
		r.set("k", 1, iv)
		r.advance(1)
		if got, want := r.fires(), []fire{{1, "k", 1}}; !slices.Equal(got, want) {
			t.Errorf("ours after unhashable keys: fired %v, want %v", got, want)
		}
	})
}

func TestHelper_GoZeroUnhashableKey(t *testing.T) {
	helperOnly(t)
	w, err := gz.NewTimingWheelWithTicker(iv, 4, func(key, value any) {}, timex.NewFakeTicker())
	if err != nil {
		t.Fatal(err)
	}
	w.SetTimer([]int{1}, 1, iv) // accepted; the wheel's goroutine panics on it
	w.SetTimer("k", 1, iv)      // blocks: nobody is left to take it
	t.Log("go-zero survived an unhashable key")
}

// armAndDrop arms key with a fresh payload and returns a weak pointer to
// it; the caller keeps no strong reference.
func armAndDrop(r *rig, key any, delay time.Duration) weak.Pointer[payload] {
	p := new(payload)
	r.set(key, p, delay)
	return weak.Make(p)
}

// TestDiff_ValuesPinnedInGoZero: go-zero's RemoveTimer only flags the
// entry, which keeps the key and value reachable until the cursor next
// scans its slot; a drained timer's entry stays in go-zero's key index,
// holding its value until the key is set or removed again. Ours releases
// the value as soon as the timer is removed or drained.
func TestDiff_ValuesPinnedInGoZero(t *testing.T) {
	for _, c := range []struct {
		name string
		drop func(r *rig, key any)
		// release reports whether the value is released right after drop
		// and after 3 more rotations.
		gozero, ours [2]bool
	}{
		{"removed", func(r *rig, key any) { r.remove(key) }, [2]bool{false, true}, [2]bool{true, true}},
		{"drained", func(r *rig, key any) { r.drain() }, [2]bool{false, false}, [2]bool{true, true}},
	} {
		for _, impl := range wheelImpls {
			want := c.ours
			if impl.name == goZeroWheel.name {
				want = c.gozero
			}
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, impl, 4)
				wp := armAndDrop(r, "k", ticks(3))
				c.drop(r, "k")
				var got [2]bool
				got[0] = released(wp)
				r.advance(12)
				got[1] = released(wp)
				if got != want {
					t.Errorf("%s, %s: released [at once, after 3 rotations] = %v, want %v", impl.name, c.name, got, want)
				}
				runtime.KeepAlive(r)
			})
		}
	}
}

// TestSame_ArgumentAndClosedErrorsAreSentinels: both return ErrArgument and
// ErrClosed themselves, unwrapped, so callers comparing with == keep
// working. Only the texts differ ("incorrect task argument" vs
// "timingwheel: invalid argument", "TimingWheel is closed already" vs
// "timingwheel: closed").
func TestSame_ArgumentAndClosedErrorsAreSentinels(t *testing.T) {
	exec := func(key, value any) {}
	synctest.Test(t, func(t *testing.T) {
		g, err := gz.NewTimingWheelWithTicker(iv, 4, exec, timex.NewFakeTicker())
		if err != nil {
			t.Fatal(err)
		}
		o, err := collection.NewTimingWheelWithTicker(iv, 4, exec, timex.NewFakeTicker())
		if err != nil {
			t.Fatal(err)
		}
		if err := g.SetTimer(nil, 1, iv); err != gz.ErrArgument {
			t.Errorf("go-zero SetTimer(nil): got %v, want ErrArgument itself", err)
		}
		if err := o.SetTimer(nil, 1, iv); err != collection.ErrArgument {
			t.Errorf("ours SetTimer(nil): got %#v, want ErrArgument itself", err)
		}
		if err := o.SetTimer([]int{1}, 1, iv); err != collection.ErrArgument {
			t.Errorf("ours SetTimer(unhashable): got %#v, want ErrArgument itself", err)
		}
		g.Stop()
		o.Stop()
		synctest.Wait()
		if err := g.SetTimer("k", 1, iv); err != gz.ErrClosed {
			t.Errorf("go-zero after Stop: got %v, want ErrClosed itself", err)
		}
		if err := o.SetTimer("k", 1, iv); err != collection.ErrClosed {
			t.Errorf("ours after Stop: got %v, want ErrClosed itself", err)
		}
	})
}

// TestDiff_NewTimingWheelWithTickerValidatesInOurs: go-zero's
// NewTimingWheelWithTicker checks nothing: a zero interval or slot count
// is accepted and divides by zero on the first SetTimer, a nil execute
// panics on the first firing, and a nil ticker crashes its goroutine at
// once (not run here). Ours returns ErrArgument for each.
func TestDiff_NewTimingWheelWithTickerValidatesInOurs(t *testing.T) {
	exec := func(key, value any) {}
	for _, c := range []struct {
		name     string
		interval time.Duration
		slots    int
		exec     func(key, value any)
	}{
		{"zero interval", 0, 4, exec},
		{"zero slots", iv, 0, exec},
		{"nil execute", iv, 4, nil},
	} {
		synctest.Test(t, func(t *testing.T) {
			g, err := goZeroWheel.withTicker(c.interval, c.slots, c.exec, timex.NewFakeTicker())
			if err != nil {
				t.Errorf("go-zero, %s: got %v, want nil (it accepts anything)", c.name, err)
			} else {
				g.Stop()
			}
			if _, err := ourWheel.withTicker(c.interval, c.slots, c.exec, timex.NewFakeTicker()); !errors.Is(err, collection.ErrArgument) {
				t.Errorf("ours, %s: got %v, want ErrArgument", c.name, err)
			}
		})
	}
	if _, err := collection.NewTimingWheelWithTicker(iv, 4, exec, nil); !errors.Is(err, collection.ErrArgument) {
		t.Errorf("ours, nil ticker: got %v, want ErrArgument", err)
	}
}

// TestDiff_CallbacksOfOneTickRunConcurrently: go-zero runs the callbacks
// due on one tick one after another on one new goroutine per tick; ours
// hands them to up to GOMAXPROCS worker goroutines, so callbacks that share
// state must synchronize (go-zero's callbacks of different ticks, and of
// short moves, could already overlap).
func TestDiff_CallbacksOfOneTickRunConcurrently(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		impl wheelImpl
		want int
	}{{goZeroWheel, 1}, {ourWheel, min(3, procs)}} {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, c.impl, 4)
			release := make(chan struct{})
			var running atomic.Int32
			r.then = func(w wheelAPI, key, value any) { running.Add(1); <-release; running.Add(-1) }
			for k := range 3 {
				r.set(k, k, ticks(1))
			}
			r.advance(1) // returns once every callback is blocked
			if got := int(running.Load()); got != c.want {
				t.Errorf("%s: %d callbacks of one tick running at once, want %d (GOMAXPROCS %d)", c.impl.name, got, c.want, procs)
			}
			close(release)
			synctest.Wait()
		})
	}
}
