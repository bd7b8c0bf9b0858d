package compat

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// checkSame runs ops on both wheels and the model and reports any
// disagreement.
func checkSame(t *testing.T, slots int, ops []op) {
	t.Helper()
	want := modelScript(ops)
	for _, impl := range wheelImpls {
		if got := runScript(t, impl, slots, ops); !slices.Equal(got, want) {
			t.Errorf("%s, %d slots, %v:\ngot  %v\nwant %v", impl.name, slots, ops, got, want)
		}
	}
}

// TestSame_WheelExactMultiples sweeps one timer set after 0..slots ticks
// with every delay of 1 to 3 rotations + 1 intervals, on wheels of 1 to 8
// slots: go-zero, ours and the model fire it on the same tick.
func TestSame_WheelExactMultiples(t *testing.T) {
	for _, slots := range []int{1, 2, 3, 5, 8} {
		for before := 0; before <= slots; before++ {
			for d := 1; d <= 3*slots+1; d++ {
				ops := []op{{'t', 0, before}, {'s', 1, d}, {'t', 0, d + 1}}
				checkSame(t, slots, ops)
			}
		}
	}
}

// TestSame_WheelMoveLaterWithinRotation sweeps the moves go-zero gets right:
// a pending timer moved, at any tick before it is due, to a later deadline
// at most one rotation from now, by MoveTimer or by SetTimer with a new
// value.
func TestSame_WheelMoveLaterWithinRotation(t *testing.T) {
	for _, slots := range []int{1, 3, 4, 6} {
		for d0 := 1; d0 <= 2*slots+1; d0++ {
			for gap := 0; gap < d0; gap++ {
				for d1 := max(1, d0-gap); d1 <= slots; d1++ {
					for _, kind := range []byte{'m', 's'} {
						ops := []op{{'t', 0, 1}, {'s', 7, d0}, {'t', 0, gap}, {kind, 7, d1}, {'t', 0, d1 + 1}}
						checkSame(t, slots, ops)
					}
				}
			}
		}
	}
}

// goZeroSafeScript returns a random script made only of calls go-zero's
// wheel handles correctly: SetTimer of a key with no pending timer, MoveTimer
// of a pending key to a later deadline at most one rotation away, MoveTimer
// and RemoveTimer of keys without a timer, RemoveTimer of pending keys, and
// ticks; every delay a whole number of intervals. It ends with enough ticks
// to fire everything.
func goZeroSafeScript(r *rand.Rand, slots, n int) []op {
	due := map[int]int{} // key -> tick it is due on
	now := 0
	var ops []op
	for range n {
		k := r.IntN(5)
		d, pending := due[k]
		switch x := r.IntN(10); {
		case x < 3 && !pending:
			delay := 1 + r.IntN(3*slots+1)
			ops = append(ops, op{'s', k, delay})
			due[k] = now + delay
		case x < 5 && pending && d-now <= slots:
			delay := d - now + r.IntN(slots-(d-now)+1)
			ops = append(ops, op{'m', k, delay})
			due[k] = now + delay
		case x < 6 && !pending:
			ops = append(ops, op{'m', k, 1 + r.IntN(slots)})
		case x < 7:
			ops = append(ops, op{'r', k, 0})
			delete(due, k)
		default:
			n := 1 + r.IntN(slots)
			ops = append(ops, op{'t', 0, n})
			now += n
			for k, d := range due {
				if d <= now {
					delete(due, k)
				}
			}
		}
	}
	return append(ops, op{'t', 0, 3*slots + 2})
}

// TestSame_WheelRandomScripts runs random scripts of calls go-zero gets right
// (see goZeroSafeScript) on both wheels and the model.
func TestSame_WheelRandomScripts(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 6))
	for i := range 300 {
		slots := 1 + i%7
		checkSame(t, slots, goZeroSafeScript(r, slots, 12))
	}
}

// TestSame_WheelShortDelayFiresOnNextTick: a delay shorter than one
// interval fires on the next tick in both.
func TestSame_WheelShortDelayFiresOnNextTick(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, iv / 2, iv - 1} {
		for _, impl := range wheelImpls {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, impl, 4)
				r.set("k", "v", d)
				r.advance(3)
				want := []fire{{1, "k", "v"}}
				if got := r.fires(); !slices.Equal(got, want) {
					t.Errorf("%s, delay %v: got %v, want %v", impl.name, d, got, want)
				}
			})
		}
	}
}

// TestSame_WheelDrainHandsOverEveryTimer: Drain hands over every pending
// timer, however many rotations away, with its latest value, and nothing
// fires afterwards. (go-zero v1.10.3's drainAll walks every slot, so it does
// not lose far timers; it runs fn later, see TestDiff_DrainIsSynchronous.)
func TestSame_WheelDrainHandsOverEveryTimer(t *testing.T) {
	const slots = 4
	for _, impl := range wheelImpls {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, impl, slots)
			var want []fire
			for k := 1; k <= 3*slots; k++ {
				r.set(k, -k, ticks(k))
				want = append(want, fire{1, k, -k})
			}
			r.set(2, "replaced", ticks(2))
			want[1].value = "replaced"
			r.remove(3)
			want = slices.Delete(want, 2, 3)
			r.advance(1) // 1 fires
			want = want[1:]
			got, err := r.drain()
			if err != nil {
				t.Fatalf("%s: Drain: %v", impl.name, err)
			}
			if !slices.Equal(got, sortFires(want)) {
				t.Errorf("%s: Drain handed\n%v\nwant\n%v", impl.name, got, sortFires(want))
			}
			r.fires()
			r.advance(4 * slots)
			if got := r.fires(); len(got) != 0 {
				t.Errorf("%s: fired after Drain: %v", impl.name, got)
			}
		})
	}
}

// TestSame_WheelUnknownKeys: MoveTimer and RemoveTimer of a key that has no
// timer (never set, fired, removed) return nil and arm nothing.
func TestSame_WheelUnknownKeys(t *testing.T) {
	for _, impl := range wheelImpls {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, impl, 4)
			r.set("fired", 1, ticks(1))
			r.set("removed", 2, ticks(5))
			r.advance(1)
			r.remove("removed")
			for _, k := range []string{"never", "fired", "removed"} {
				if err := r.move(k, ticks(2)); err != nil {
					t.Errorf("%s: MoveTimer(%s): %v, want nil", impl.name, k, err)
				}
				if err := r.remove(k); err != nil {
					t.Errorf("%s: RemoveTimer(%s): %v, want nil", impl.name, k, err)
				}
			}
			r.advance(8)
			want := []fire{{1, "fired", 1}}
			if got := r.fires(); !slices.Equal(got, want) {
				t.Errorf("%s: got %v, want %v", impl.name, got, want)
			}
		})
	}
}

// TestSame_WheelCallbackRearms: a callback may call the wheel; a timer that
// re-arms itself from its callback fires every period in both.
func TestSame_WheelCallbackRearms(t *testing.T) {
	for _, impl := range wheelImpls {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, impl, 4)
			r.then = func(w wheelAPI, key, value any) {
				if n := value.(int); n < 4 {
					w.SetTimer(key, n+1, ticks(3))
				}
			}
			r.set("beat", 1, ticks(3))
			r.advance(20)
			want := []fire{{3, "beat", 1}, {6, "beat", 2}, {9, "beat", 3}, {12, "beat", 4}}
			if got := r.fires(); !slices.Equal(got, want) {
				t.Errorf("%s: got %v, want %v", impl.name, got, want)
			}
		})
	}
}

// TestSame_WheelErrors: both reject a nil key and a delay <= 0 with their
// ErrArgument, and every call after Stop with their ErrClosed (ours wraps
// ErrArgument with a reason, see TestDiff_ArgumentErrorsAreWrapped).
func TestSame_WheelErrors(t *testing.T) {
	for _, impl := range wheelImpls {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, impl, 4)
			w := r.w
			for _, c := range []struct {
				name string
				err  error
			}{
				{"SetTimer nil key", w.SetTimer(nil, 1, iv)},
				{"SetTimer zero delay", w.SetTimer("k", 1, 0)},
				{"SetTimer negative delay", w.SetTimer("k", 1, -iv)},
				{"MoveTimer nil key", w.MoveTimer(nil, iv)},
				{"MoveTimer zero delay", w.MoveTimer("k", 0)},
				{"RemoveTimer nil key", w.RemoveTimer(nil)},
			} {
				if !errors.Is(c.err, impl.errArgument) {
					t.Errorf("%s: %s: got %v, want ErrArgument", impl.name, c.name, c.err)
				}
			}
			r.stop()
			for _, c := range []struct {
				name string
				err  error
			}{
				{"SetTimer", w.SetTimer("k", 1, iv)},
				{"MoveTimer", w.MoveTimer("k", iv)},
				{"RemoveTimer", w.RemoveTimer("k")},
				{"Drain", w.Drain(func(key, value any) {})},
			} {
				if !errors.Is(c.err, impl.errClosed) {
					t.Errorf("%s: %s after Stop: got %v, want ErrClosed", impl.name, c.name, c.err)
				}
			}
		})
	}
}

// TestSame_NewTimingWheelRejectsBadArguments: both refuse interval <= 0,
// numSlots <= 0 and a nil execute.
func TestSame_NewTimingWheelRejectsBadArguments(t *testing.T) {
	exec := func(key, value any) {}
	for _, impl := range wheelImpls {
		for _, c := range []struct {
			interval time.Duration
			slots    int
			exec     func(key, value any)
		}{{0, 4, exec}, {-iv, 4, exec}, {iv, 0, exec}, {iv, -1, exec}, {iv, 4, nil}} {
			name := fmt.Sprintf("%s interval=%v slots=%d nilExec=%v", impl.name, c.interval, c.slots, c.exec == nil)
			w, err := impl.realClock(c.interval, c.slots, c.exec)
			if err == nil {
				w.Stop()
				t.Errorf("%s: got nil error, want one", name)
			}
		}
	}
}
