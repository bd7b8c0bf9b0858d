package collection

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// fakeTicker has the shape of go-zero's timex fake ticker: the test decides
// when a tick happens.
type fakeTicker struct {
	c       chan time.Time
	stopped chan struct{}
}

func newFakeTicker() *fakeTicker {
	return &fakeTicker{c: make(chan time.Time), stopped: make(chan struct{})}
}
func (f *fakeTicker) Chan() <-chan time.Time { return f.c }
func (f *fakeTicker) Stop()                  { close(f.stopped) }

// collect returns the keys whose callbacks have run since the last call.
// Inside a synctest bubble, synctest.Wait returns once every callback has
// finished and the workers have exited.
func collect(fired chan any) []any {
	synctest.Wait()
	var keys []any
	for {
		select {
		case k := <-fired:
			keys = append(keys, k)
		default:
			return keys
		}
	}
}

func TestTimingWheelTickerFiresAfterCeilTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ticker := newFakeTicker()
		fired := make(chan any, 10)
		tw, err := NewTimingWheelWithTicker(time.Second, 4, func(k, v any) { fired <- k }, ticker)
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Stop()
		for _, s := range []struct {
			key   string
			delay time.Duration
		}{{"a", 2 * time.Second}, {"b", 2500 * time.Millisecond}, {"c", 9 * time.Second}} {
			if err := tw.SetTimer(s.key, 0, s.delay); err != nil {
				t.Fatal(err)
			}
		}
		// a after 2 ticks, b after ceil(2.5) = 3, c after two rotations and one.
		want := map[any]int{"a": 2, "b": 3, "c": 9}
		got := map[any]int{}
		for tick := 1; tick <= 10; tick++ {
			ticker.c <- time.Time{}
			for _, k := range collect(fired) {
				got[k] = tick
			}
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("key %v fired at tick %d, want %d", k, got[k], w)
			}
		}
	})
}

func TestTimingWheelMoveShortDelayRunsOnce(t *testing.T) {
	// go-zero runs a timer moved to less than one interval at once and
	// leaves it armed, so it runs twice.
	synctest.Test(t, func(t *testing.T) {
		ticker := newFakeTicker()
		fired := make(chan any, 10)
		tw, err := NewTimingWheelWithTicker(time.Second, 8, func(k, v any) { fired <- k }, ticker)
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Stop()
		tw.SetTimer("k", 1, 5*time.Second)
		tw.MoveTimer("k", time.Millisecond)
		runs := 0
		for range 8 {
			ticker.c <- time.Time{}
			runs += len(collect(fired))
		}
		if runs != 1 {
			t.Errorf("runs = %d, want 1", runs)
		}
	})
}

func TestTimingWheelArguments(t *testing.T) {
	tw, err := NewTimingWheel(time.Second, 4, func(k, v any) {})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Stop()
	cases := []struct {
		name string
		err  error
	}{
		{"SetTimer nil key", tw.SetTimer(nil, 1, time.Second)},
		{"SetTimer zero delay", tw.SetTimer("k", 1, 0)},
		{"SetTimer negative delay", tw.SetTimer("k", 1, -time.Second)},
		{"SetTimer slice key", tw.SetTimer([]int{1}, 1, time.Second)},
		{"MoveTimer nil key", tw.MoveTimer(nil, time.Second)},
		{"MoveTimer map key", tw.MoveTimer(map[int]int{}, time.Second)},
		{"RemoveTimer nil key", tw.RemoveTimer(nil)},
		{"RemoveTimer func key", tw.RemoveTimer(func() {})},
		{"Drain nil fn", tw.Drain(nil)},
	}
	for _, c := range cases {
		// go-zero's callers compare with ==: the error must be ErrArgument
		// itself, not a wrapper.
		if c.err != ErrArgument {
			t.Errorf("%s: got %v, want ErrArgument itself", c.name, c.err)
		}
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"zero interval", errOf(NewTimingWheel(0, 4, func(k, v any) {}))},
		{"zero slots", errOf(NewTimingWheel(time.Second, 0, func(k, v any) {}))},
		{"nil execute", errOf(NewTimingWheel(time.Second, 4, nil))},
		{"nil ticker", errOf(NewTimingWheelWithTicker(time.Second, 4, func(k, v any) {}, nil))},
		// Issue 12 item 11: a nil channel silently meant the real clock.
		{"ticker with a nil channel", errOf(NewTimingWheelWithTicker(time.Second, 4, func(k, v any) {}, &fakeTicker{}))},
	} {
		if !errors.Is(c.err, ErrArgument) {
			t.Errorf("%s: got %v, want ErrArgument", c.name, c.err)
		}
	}
}

func errOf(_ *TimingWheel, err error) error { return err }

func TestTimingWheelStopTwiceAndErrClosed(t *testing.T) {
	ticker := newFakeTicker()
	tw, err := NewTimingWheelWithTicker(time.Second, 4, func(k, v any) {}, ticker)
	if err != nil {
		t.Fatal(err)
	}
	tw.Stop()
	tw.Stop() // go-zero panics here
	select {
	case <-ticker.stopped:
	default:
		t.Error("ticker not stopped")
	}
	for name, err := range map[string]error{
		"SetTimer":    tw.SetTimer("k", 1, time.Second),
		"MoveTimer":   tw.MoveTimer("k", time.Second),
		"RemoveTimer": tw.RemoveTimer("k"),
		"Drain":       tw.Drain(func(k, v any) {}),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Stop: got %v, want ErrClosed", name, err)
		}
	}
}

func TestTimingWheelDrainHandsOverEveryTimer(t *testing.T) {
	tw, err := NewTimingWheel(time.Second, 4, func(k, v any) {})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Stop()
	for i, d := range []time.Duration{time.Second, time.Minute, time.Hour, 30 * 24 * time.Hour} {
		tw.SetTimer(i, d, d)
	}
	got := map[any]any{}
	if err := tw.Drain(func(k, v any) { got[k] = v }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Errorf("Drain handed %d timers, want 4: %v", len(got), got)
	}
	if n := tw.Len(); n != 0 {
		t.Errorf("Len after Drain = %d, want 0", n)
	}
}

func TestTimingWheelHasAndLen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := NewTimingWheel(time.Second, 8, func(k, v any) {})
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Stop()
		tw.SetTimer("a", 1, time.Minute)
		tw.SetTimer(2, "b", time.Minute)
		if !tw.Has("a") || !tw.Has(2) {
			t.Error("Has = false for a pending timer, want true")
		}
		if tw.Has(nil) || tw.Has([]int{1}) || tw.Has("zzz") {
			t.Error("Has = true for a nil, unhashable or unknown key, want false")
		}
		if n := tw.Len(); n != 2 {
			t.Errorf("Len = %d, want 2", n)
		}
	})
}

// TestTimingWheelSetAfterDrain: go-zero keeps drained keys in its index, so
// setting a drained key again is lost; here it fires.
func TestTimingWheelSetAfterDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fired := make(chan any, 1)
		tw, err := NewTimingWheel(time.Second, 4, func(k, v any) { fired <- v })
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Stop()
		tw.SetTimer("k", "old", time.Hour)
		tw.Drain(func(k, v any) {})
		tw.SetTimer("k", "new", time.Second)
		if v := <-fired; v != "new" {
			t.Errorf("fired value %v, want new", v)
		}
	})
}
