package compat

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	gz "github.com/zeromicro/go-zero/core/collection"

	"github.com/ttlkit/ttlkit/collection"
)

// TestDiff_QueueKeepsPeakBufferInGoZero: after a burst of 32,768 Puts,
// all taken again, go-zero's Queue still holds a buffer sized for the
// burst (16 bytes per slot, 512 KiB here, for the queue's lifetime). Ours
// shrinks back to the size it was made with.
func TestDiff_QueueKeepsPeakBufferInGoZero(t *testing.T) {
	const burst = 1 << 15
	for _, impl := range queueImpls {
		q := impl.new(16)
		for i := range burst {
			q.Put(i)
		}
		for range burst {
			q.Take()
		}
		got := len(impl.slots(q))
		switch impl.name {
		case "gozero":
			if got < burst {
				t.Errorf("go-zero: buffer of %d slots after the burst, want at least %d (it never shrinks)", got, burst)
			}
		case "ttlkit":
			if got != 16 {
				t.Errorf("ours: buffer of %d slots after the burst, want the initial 16", got)
			}
		}
	}
}

// TestDiff_SetZeroValuePanicsInGoZero: go-zero's zero Set panics on its
// first Add (a nil map); ours is an empty set ready to use, like the zero
// value of the other types of the package that allow one.
func TestDiff_SetZeroValuePanicsInGoZero(t *testing.T) {
	var g gz.Set[string]
	if !panics(func() { g.Add("a") }) {
		t.Error("go-zero: Add on the zero Set did not panic, want a panic")
	}
	var o collection.Set[string]
	o.Add("a")
	if !o.Contains("a") || o.Count() != 1 {
		t.Errorf("ours: zero Set after Add(a): Contains %v, Count %d; want true, 1", o.Contains("a"), o.Count())
	}
}

// TestDiff_RollingWindowBadIntervalPanicsLateInGoZero: go-zero's
// NewRollingWindow accepts an interval of 0 (or a negative one) and the
// window panics later, on its first Add or Reduce, with an integer
// division by zero far from the mistake. Ours panics in NewRollingWindow
// with a message that names the argument.
func TestDiff_RollingWindowBadIntervalPanicsLateInGoZero(t *testing.T) {
	recovered := func(f func()) (msg string) {
		defer func() {
			if r := recover(); r != nil {
				msg = fmt.Sprint(r)
			}
		}()
		f()
		return ""
	}
	for _, interval := range []time.Duration{0, -time.Second} {
		var gw *gz.RollingWindow[int64, *gz.Bucket[int64]]
		if msg := recovered(func() {
			gw = gz.NewRollingWindow(func() *gz.Bucket[int64] { return new(gz.Bucket[int64]) }, 3, interval)
		}); msg != "" {
			t.Errorf("go-zero, interval %v: NewRollingWindow panicked (%s), want it to accept the interval", interval, msg)
			continue
		}
		if msg := recovered(func() { gw.Add(1) }); interval == 0 && !strings.Contains(msg, "divide by zero") {
			t.Errorf("go-zero, interval %v: first Add panicked with %q, want an integer divide by zero", interval, msg)
		}

		msg := recovered(func() {
			collection.NewRollingWindow(func() *collection.Bucket[int64] { return new(collection.Bucket[int64]) }, 3, interval)
		})
		if !strings.Contains(msg, "collection: NewRollingWindow: interval") {
			t.Errorf("ours, interval %v: NewRollingWindow panicked with %q, want a message naming the interval", interval, msg)
		}
	}
}

// TestDiff_RollingWindowLongIdleWrapsOn32BitInGoZero: go-zero converts the
// number of intervals since its last bucket to int. Where int has 32 bits
// (GOARCH=386, arm), 2^32+1 idle intervals (50 days of 1ms intervals) wrap
// to 1, and Reduce passes values added 50 days ago as if they were recent.
// Ours counts intervals in int64 on every architecture: the window is
// empty. On 64-bit platforms both are right, and the test checks that.
func TestDiff_RollingWindowLongIdleWrapsOn32BitInGoZero(t *testing.T) {
	wantGoZero := []string(nil)
	if strconv.IntSize == 32 {
		wantGoZero = []string{"0/0", "3/2"} // the stale bucket comes back
	}
	for _, impl := range windowImpls {
		synctest.Test(t, func(t *testing.T) {
			w := impl.new(3, time.Millisecond, false)
			w.add(1)
			w.add(2)
			time.Sleep((1<<32 + 1) * time.Millisecond)
			got := w.buckets()
			want := []string(nil)
			if impl.name == "gozero" {
				want = wantGoZero
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, %d-bit int: Reduce after 2^32+1 idle intervals passed %v, want %v", impl.name, strconv.IntSize, got, want)
			}
		})
	}
}
