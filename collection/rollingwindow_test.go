package collection

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// windowModel is a RollingWindow reduced to a list of timed additions.
type windowModel struct {
	size          int64
	interval      time.Duration
	ignoreCurrent bool
	adds          map[int64][]int // by interval since the start
	last          int64           // interval of the last Add
}

// reduce returns what Reduce should pass at interval now: one Bucket per
// interval from the oldest inside the window to the last one written, as
// "sum/count".
func (m *windowModel) reduce(now int64) []string {
	var out []string
	to := m.last
	if m.ignoreCurrent && to == now {
		to--
	}
	for x := now - m.size + 1; x <= to; x++ {
		var b Bucket[int]
		for _, v := range m.adds[x] {
			b.Add(v)
		}
		out = append(out, fmt.Sprintf("%d/%d", b.Sum, b.Count))
	}
	return out
}

// TestRollingWindowAgainstModel runs random Adds, Reduces and pauses of a
// fraction of an interval up to a few windows, in a synctest bubble, and
// compares every Reduce with the model.
func TestRollingWindowAgainstModel(t *testing.T) {
	for _, size := range []int{1, 2, 3, 5} {
		for _, ignore := range []bool{false, true} {
			t.Run(fmt.Sprintf("size=%d,ignoreCurrent=%v", size, ignore), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					const interval = 10 * time.Millisecond
					var opts []RollingWindowOption[int, *Bucket[int]]
					if ignore {
						opts = append(opts, IgnoreCurrentBucket[int, *Bucket[int]]())
					}
					start := time.Now()
					rw := NewRollingWindow(func() *Bucket[int] { return new(Bucket[int]) }, size, interval, opts...)
					m := &windowModel{size: int64(size), interval: interval, ignoreCurrent: ignore, adds: map[int64][]int{}}
					r := rand.New(rand.NewPCG(uint64(size), 7))
					for step := range 2000 {
						now := int64(time.Since(start) / interval)
						switch op := r.IntN(10); {
						case op < 5:
							v := r.IntN(100)
							rw.Add(v)
							m.adds[now] = append(m.adds[now], v)
							m.last = now
						case op < 8:
							var got []string
							rw.Reduce(func(b *Bucket[int]) { got = append(got, fmt.Sprintf("%d/%d", b.Sum, b.Count)) })
							if want := m.reduce(now); !slices.Equal(got, want) {
								t.Fatalf("step %d, interval %d: Reduce passed %v, want %v", step, now, got, want)
							}
						case op < 9:
							time.Sleep(time.Duration(r.IntN(int(interval))) + 1)
						default:
							time.Sleep(time.Duration(r.IntN(3*size+2)) * interval)
						}
					}
				})
			})
		}
	}
}

// TestRollingWindowBucketsFollowTheStart: bucket boundaries are whole
// intervals from NewRollingWindow, however the Adds fall.
func TestRollingWindowBucketsFollowTheStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rw := NewRollingWindow(func() *Bucket[float64] { return new(Bucket[float64]) }, 3, time.Second)
		time.Sleep(900 * time.Millisecond)
		rw.Add(1) // interval 0
		time.Sleep(200 * time.Millisecond)
		rw.Add(2) // interval 1: 1.1s
		time.Sleep(1800 * time.Millisecond)
		rw.Add(4) // interval 2: 2.9s
		var sums []float64
		rw.Reduce(func(b *Bucket[float64]) { sums = append(sums, b.Sum) })
		if want := []float64{1, 2, 4}; !slices.Equal(sums, want) {
			t.Errorf("at 2.9s: sums %v, want %v", sums, want)
		}
		time.Sleep(200 * time.Millisecond) // 3.1s: interval 0 has left
		sums = sums[:0]
		rw.Reduce(func(b *Bucket[float64]) { sums = append(sums, b.Sum) })
		if want := []float64{2, 4}; !slices.Equal(sums, want) {
			t.Errorf("at 3.1s: sums %v, want %v", sums, want)
		}
	})
}

// TestNewRollingWindowPanics: invalid arguments panic in the constructor,
// with the package's prefix, not later.
func TestNewRollingWindowPanics(t *testing.T) {
	newBucket := func() *Bucket[int] { return new(Bucket[int]) }
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"size 0", func() { NewRollingWindow(newBucket, 0, time.Second) }},
		{"interval 0", func() { NewRollingWindow(newBucket, 1, 0) }},
		{"negative interval", func() { NewRollingWindow(newBucket, 1, -time.Second) }},
		{"nil newBucket", func() { NewRollingWindow[int, *Bucket[int]](nil, 1, time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if msg, _ := recover().(string); len(msg) < 11 || msg[:11] != "collection:" {
					t.Errorf("panic %q, want one starting with collection:", msg)
				}
			}()
			tc.call()
		})
	}
}

// TestRollingWindowLongIdle: after 2^32+1 intervals without an Add (50
// days of 1ms intervals), the window is empty, also where int has 32 bits
// (go-zero converts the interval count to int, which wraps to 1 there and
// brings the stale buckets back).
func TestRollingWindowLongIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Millisecond
		rw := NewRollingWindow(func() *Bucket[int] { return new(Bucket[int]) }, 3, interval)
		rw.Add(1)
		rw.Add(2)
		time.Sleep((1<<32 + 1) * interval)
		var got []string
		rw.Reduce(func(b *Bucket[int]) { got = append(got, fmt.Sprintf("%d/%d", b.Sum, b.Count)) })
		if len(got) != 0 {
			t.Errorf("Reduce after 2^32+1 idle intervals passed %v, want nothing", got)
		}
		rw.Add(5)
		got = got[:0]
		rw.Reduce(func(b *Bucket[int]) { got = append(got, fmt.Sprintf("%d/%d", b.Sum, b.Count)) })
		if want := []string{"0/0", "0/0", "5/1"}; !slices.Equal(got, want) {
			t.Errorf("Reduce after an Add that ends the idle period passed %v, want %v", got, want)
		}
	})
}

// TestRollingWindowNestedReduceWhileAddWaits pins issue 20 item 8: the
// window was a sync.RWMutex, and a Reduce called from a Reduce's fn took
// the read lock a second time; with an Add waiting for the write lock in
// between, that second read lock waited behind the Add, which waited for
// the outer Reduce: a deadlock. A nested Reduce now joins the running one;
// the Add still waits for both, and then goes on.
func TestRollingWindowNestedReduceWhileAddWaits(t *testing.T) {
	rw := NewRollingWindow(func() *Bucket[int] { return new(Bucket[int]) }, 3, time.Hour)
	rw.Add(1)
	added := make(chan struct{})
	done := make(chan int64)
	go func() {
		var inner int64
		nested := false
		rw.Reduce(func(*Bucket[int]) {
			if nested {
				return
			}
			nested = true
			go func() {
				rw.Add(2)
				close(added)
			}()
			if !waitBlocked("RollingWindow[...]).Add(") {
				t.Error("the Add did not block within 10s: the test proves nothing")
			}
			rw.Reduce(func(b *Bucket[int]) { inner += b.Count })
		})
		done <- inner
	}()
	select {
	case inner := <-done:
		if inner != 1 {
			t.Errorf("the nested Reduce counted %d values, want 1 (the Add waits for the outer Reduce)", inner)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a Reduce called from a Reduce's fn blocked while an Add waited: deadlock")
	}
	<-added
	var n int64
	rw.Reduce(func(b *Bucket[int]) { n += b.Count })
	if n != 2 {
		t.Errorf("Reduce after the Add counted %d values, want 2", n)
	}
}

// waitBlocked reports whether a goroutine whose stack holds a call of fn
// is blocked (neither running nor runnable), polling for up to 10 seconds.
func waitBlocked(fn string) bool {
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 1<<20)
	for time.Now().Before(deadline) {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(g, fn) && !strings.Contains(header, "[running]") && !strings.Contains(header, "[runnable]") {
				return true
			}
		}
		runtime.Gosched()
	}
	return false
}

// BenchmarkRollingWindow: Add, Reduce over 10 buckets, and both from every
// processor at once (one Reduce per Add, as a circuit breaker does per
// request).
func BenchmarkRollingWindow(b *testing.B) {
	newWindow := func() *RollingWindow[int, *Bucket[int]] {
		return NewRollingWindow(func() *Bucket[int] { return new(Bucket[int]) }, 10, time.Hour)
	}
	b.Run("Add", func(b *testing.B) {
		rw := newWindow()
		b.ReportAllocs()
		for b.Loop() {
			rw.Add(1)
		}
	})
	b.Run("Reduce", func(b *testing.B) {
		rw := newWindow()
		rw.Add(1)
		var n int64
		b.ReportAllocs()
		for b.Loop() {
			rw.Reduce(func(b *Bucket[int]) { n += b.Count })
		}
	})
	b.Run("AddReduceParallel", func(b *testing.B) {
		rw := newWindow()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var n int64
			for pb.Next() {
				rw.Add(1)
				rw.Reduce(func(b *Bucket[int]) { n += b.Count })
			}
		})
	})
}
