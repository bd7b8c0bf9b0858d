package cache

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// TestOnEvictGoexitKeepsDelivering: an OnEvict that exits its goroutine
// (runtime.Goexit, as t.FailNow does) ended the delivery goroutine, so
// every later Expired event was queued forever and never delivered. A new
// delivery goroutine takes over from the next event.
func TestOnEvictGoexitKeepsDelivering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got, exits []int
		c := newCache(t, Options[int, int]{TTL: time.Second, Resolution: 100 * time.Millisecond,
			OnPanic: func(e Event[int, int], p *timingwheel.PanicError) {
				mu.Lock()
				if p.Value == timingwheel.ErrGoexit {
					exits = append(exits, e.Key)
				}
				mu.Unlock()
			},
			OnEvict: func(e Event[int, int]) {
				mu.Lock()
				got = append(got, e.Key)
				mu.Unlock()
				if e.Key%2 == 0 {
					runtime.Goexit()
				}
			}})
		for k := range 6 {
			c.SetWithExpire(k, k, time.Duration(k+1)*time.Second)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		c.Set(10, 10) // after two Goexits: still delivered
		time.Sleep(10 * time.Second)
		synctest.Wait()
		mu.Lock()
		if want := []int{0, 1, 2, 3, 4, 5, 10}; !slicesEqual(got, want) {
			t.Errorf("OnEvict saw %v, want %v", got, want)
		}
		if want := []int{0, 2, 4, 10}; !slicesEqual(exits, want) {
			t.Errorf("Goexits reported for %v, want %v", exits, want)
		}
		mu.Unlock()
		c.SetWithExpire(20, 20, time.Second)
		time.Sleep(2 * time.Second)
		if err := c.Close(); err != nil { // returns: the last goroutine exits
			t.Fatal(err)
		}
	})
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOnEvictPanicIsReported: a panic in OnEvict ended the program when it
// came from the delivery of an Expired event, and unwound the caller of a
// Set or Delete otherwise. Like a timing wheel callback's panic, it is now
// recovered and handed to OnPanic, and the cache goes on.
func TestOnEvictPanicIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		type report struct {
			e Event[string, int]
			p *timingwheel.PanicError
		}
		var panics []report
		var seen []Event[string, int]
		c := newCache(t, Options[string, int]{TTL: time.Second, Limit: 2,
			OnEvict: func(e Event[string, int]) {
				mu.Lock()
				seen = append(seen, e)
				mu.Unlock()
				panic("boom " + e.Reason.String())
			},
			OnPanic: func(e Event[string, int], p *timingwheel.PanicError) {
				mu.Lock()
				panics = append(panics, report{e, p})
				mu.Unlock()
			}})
		c.Set("a", 1)
		c.Set("a", 2) // Replaced, on this goroutine
		c.Delete("a") // Deleted
		c.Set("b", 1) // expires
		time.Sleep(2 * time.Second)
		synctest.Wait() // Expired, on the delivery goroutine
		c.Set("c", 1)
		c.Set("d", 1)
		c.Set("e", 1) // Evicted
		time.Sleep(2 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(panics) != len(seen) || len(seen) != 6 {
			t.Fatalf("%d events, %d panics reported, want 6 and 6: %v", len(seen), len(panics), seen)
		}
		for i, r := range panics {
			if r.e != seen[i] && r.e.Reason != Expired {
				t.Errorf("panic %d reports event %+v, want %+v", i, r.e, seen[i])
			}
			if want := "boom " + r.e.Reason.String(); r.p.Value != want || r.p.Key != r.e.Key || len(r.p.Stack) == 0 {
				t.Errorf("panic %d: Key %v, Value %v, stack %d bytes; want key %v, %q and a stack", i, r.p.Key, r.p.Value, len(r.p.Stack), r.e.Key, want)
			}
		}
		if st := c.Stats(); st.Replaced != 1 || st.Deleted != 1 || st.Expired < 1 || st.Evicted != 1 {
			t.Errorf("Stats = %+v, want every event counted", st)
		}
	})
}

// TestCleanupDoesNotWaitForOnEvict: the cleanup that closes a dropped
// cache runs on the runtime's cleanup goroutine, shared by every cleanup
// in the program. It waited for the queued Expired events to be delivered,
// so a slow or blocked OnEvict held up every other cleanup. It now only
// tells the delivery goroutine to finish and exit.
func TestCleanupDoesNotWaitForOnEvict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		delivered := 0
		c, err := New(Options[int, int]{TTL: time.Second,
			OnEvict: func(Event[int, int]) { <-release; delivered++ }})
		if err != nil {
			t.Fatal(err)
		}
		c.Set(1, 1)
		c.Set(2, 2)
		time.Sleep(2 * time.Second)
		synctest.Wait() // OnEvict is blocked on the first event
		c.c.cleanup()   // what runtime.AddCleanup runs: must return now
		close(release)
		synctest.Wait()
		select {
		case <-c.c.notify.done():
		default:
			t.Fatal("delivery goroutine still running after the queue was delivered")
		}
		if delivered != 2 {
			t.Errorf("%d events delivered after the cleanup, want 2", delivered)
		}
	})
}

// TestOnEvictGoexitDuringClose: Close delivers the Expired events still
// queued; an OnEvict that exits its goroutine meanwhile must not lose the
// events after it. On the pool, the continuation was refused once Close
// had drained the pool, so the rest of the batch was never delivered.
func TestOnEvictGoexitDuringClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var mu sync.Mutex
		var got []int
		c, err := New(Options[int, int]{TTL: time.Second, Resolution: 100 * time.Millisecond,
			OnPanic: func(Event[int, int], *timingwheel.PanicError) {},
			OnEvict: func(e Event[int, int]) {
				mu.Lock()
				got = append(got, e.Key)
				mu.Unlock()
				if e.Key == 0 {
					<-gate
					runtime.Goexit()
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		c.Set(0, 0)
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		for k := 1; k <= 3; k++ {
			c.Set(k, k)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait() // OnEvict(0) waits at the gate; 1 to 3 are queued
		closed := make(chan error)
		go func() { closed <- c.Close() }()
		synctest.Wait() // Close has drained the pool and waits
		close(gate)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		slices.Sort(got[1:])
		if want := []int{0, 1, 2, 3}; !slices.Equal(got, want) {
			t.Errorf("OnEvict saw %v, want %v", got, want)
		}
	})
}
