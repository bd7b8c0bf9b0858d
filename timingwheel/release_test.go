package timingwheel

import (
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
	"weak"
)

type payload struct {
	name string
	_    [64]byte
}

// armWeak sets a timer whose key and value are fresh pointers and returns
// only weak pointers to them, so nothing on the test's side keeps them.
func armWeak(t *testing.T, tw *TimingWheel[*payload, *payload], delay time.Duration) (weak.Pointer[payload], weak.Pointer[payload]) {
	k, v := &payload{name: "key"}, &payload{name: "value"}
	must(t, tw.SetTimer(k, v, delay))
	return weak.Make(k), weak.Make(v)
}

func released(p weak.Pointer[payload]) bool {
	runtime.GC()
	runtime.GC()
	return p.Value() == nil
}

// TestReleasesKeyAndValue: a removed, re-set, fired or drained timer lets go
// of its value at once and of its key once the owner has unlinked it, not
// when its slot is next scanned.
func TestReleasesKeyAndValue(t *testing.T) {
	cases := []struct {
		name    string
		op      func(t *testing.T, tw *TimingWheel[*payload, *payload], k weak.Pointer[payload])
		keyFree bool // the key is released too, not just the value
	}{
		{"removed", func(t *testing.T, tw *TimingWheel[*payload, *payload], k weak.Pointer[payload]) {
			must(t, tw.RemoveTimer(k.Value()))
		}, true},
		{"value replaced by SetTimer", func(t *testing.T, tw *TimingWheel[*payload, *payload], k weak.Pointer[payload]) {
			must(t, tw.SetTimer(k.Value(), &payload{name: "new"}, time.Hour))
		}, false},
		{"fired", func(t *testing.T, tw *TimingWheel[*payload, *payload], k weak.Pointer[payload]) {
			time.Sleep(time.Hour)
			synctest.Wait()
		}, true},
		{"drained", func(t *testing.T, tw *TimingWheel[*payload, *payload], k weak.Pointer[payload]) {
			must(t, tw.Drain(func(k, v *payload) {}))
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tw, err := New(iv, 8, func(k, v *payload) {})
				must(t, err)
				defer tw.Stop()
				// Neighbours in the same slot, so an unscanned slot would
				// still hold the entry if removal did not unlink it.
				for i := range 3 {
					must(t, tw.SetTimer(&payload{name: fmt.Sprint(i)}, nil, 8*iv))
				}
				k, v := armWeak(t, tw, 8*iv)
				synctest.Wait()
				if released(v) {
					t.Fatal("value released while its timer is armed")
				}
				c.op(t, tw, k)
				synctest.Wait() // the owner has placed or unlinked what changed
				if !released(v) {
					t.Error("value still reachable")
				}
				if c.keyFree && !released(k) {
					t.Error("key still reachable")
				}
			})
		})
	}
}

// TestExecutorQueueStaysBounded: under a steady stream of fired timers that
// never lets the worker queue run empty, the queue's memory stays bounded
// by what is pending, not by everything that ever passed through it.
func TestExecutorQueueStaysBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		step := make(chan struct{})
		ran := 0
		e := executor[int]{limit: 1, run: func(int) { <-step; ran++ }}
		batch := make([]int, 10)
		e.submit(batch)
		for range 1000 {
			e.submit(batch)
			for range 10 {
				step <- struct{}{}
			}
		}
		e.mu.Lock()
		pending, capacity := len(e.queue)-e.head, cap(e.queue)
		e.mu.Unlock()
		if capacity > 8*pending+64 {
			t.Errorf("queue capacity %d for %d pending callbacks", capacity, pending)
		}
		close(step)
		synctest.Wait()
		if ran != 10010 {
			t.Errorf("%d callbacks ran, want 10010", ran)
		}
		if e.running != 0 {
			t.Errorf("%d workers left running", e.running)
		}
	})
}
