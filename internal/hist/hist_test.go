package hist

import (
	"sync"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// TestBoundsMatchTimingWheel: every Stats histogram of the module has the
// buckets of timingwheel.Durations, so exporters treat them alike.
func TestBoundsMatchTimingWheel(t *testing.T) {
	if Bounds != timingwheel.DurationBounds {
		t.Fatalf("Bounds = %v, want timingwheel.DurationBounds %v", Bounds, timingwheel.DurationBounds)
	}
}

// TestBucketEdges: a duration equal to a bound goes in that bound's
// bucket, one nanosecond more in the next; negative counts as zero.
func TestBucketEdges(t *testing.T) {
	for i, b := range Bounds {
		if got := bucket(b); got != i {
			t.Errorf("bucket(%v) = %d, want %d", b, got, i)
		}
		if got := bucket(b + 1); got != i+1 {
			t.Errorf("bucket(%v) = %d, want %d", b+1, got, i+1)
		}
	}
	var c Counts
	c.Observe(-time.Second)
	c.Observe(0)
	want := Counts{Count: 2, Buckets: [Len]uint64{2}}
	if c != want {
		t.Fatalf("after Observe(-1s), Observe(0): %+v, want %+v", c, want)
	}
}

// TestCountsAdd: Add sums counts, sums and buckets and keeps the larger
// maximum.
func TestCountsAdd(t *testing.T) {
	var a, b Counts
	a.Observe(time.Millisecond)
	b.Observe(time.Minute)
	b.Observe(50 * time.Microsecond)
	a.Add(&b)
	want := Counts{Count: 3, Sum: time.Minute + time.Millisecond + 50*time.Microsecond, Max: time.Minute,
		Buckets: [Len]uint64{1, 1, 0, 0, 0, 0, 1}}
	if a != want {
		t.Fatalf("got %+v, want %+v", a, want)
	}
}

// TestStripedConcurrent: observations from many goroutines at once add up
// to what a Counts given the same durations holds.
func TestStripedConcurrent(t *testing.T) {
	for _, n := range []int{0, 1, 3, 16} {
		var h Striped
		h.Init(n)
		if got, want := len(h.s), 1<<(64-h.shift); got != want || got < n {
			t.Fatalf("Init(%d): %d stripes, shift %d", n, got, h.shift)
		}
		const goroutines, each = 8, 1000
		var wg sync.WaitGroup
		var want Counts
		for g := range goroutines {
			for i := range each {
				want.Observe(time.Duration(g*each+i) * 37 * time.Microsecond)
			}
			wg.Go(func() {
				for i := range each {
					h.Observe(time.Duration(g*each+i) * 37 * time.Microsecond)
				}
			})
		}
		wg.Wait()
		if got := h.Load(); got != want {
			t.Fatalf("%d stripes: got %+v, want %+v", n, got, want)
		}
	}
}

// TestStripedObserveAllocs: Observe never allocates.
func TestStripedObserveAllocs(t *testing.T) {
	var h Striped
	h.Init(4)
	if a := testing.AllocsPerRun(100, func() { h.Observe(time.Millisecond) }); a != 0 {
		t.Fatalf("Observe: %v allocs, want 0", a)
	}
}
