package cache

import (
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// A Set over a live word value takes the node's write bit, not the shard
// lock (see cache.overwrite). The tests below pin the rules that keep that
// safe; each fails if its rule is dropped. Values are int64, a word value
// on every GOARCH (an int is not one on 386).

// returns reports whether done is closed within ten seconds. It detects a
// call blocked for good (waiting for a lock it must not take); it times
// nothing.
func returns(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// letRun gives goroutines that spin on a write bit every chance to run
// past it, as they would if they did not wait for it.
func letRun() {
	for range 10000 {
		runtime.Gosched()
	}
}

// TestOverwriteTakesNoShardLock: with the shard lock held, as the expiry
// engine holds it while it removes another entry of the shard (and may
// lose its processor meanwhile), a Set over a live word value of that
// shard completes and readers see it. Under the lock, each such Set waited
// for the engine: the mass-expiry benchmark's tail.
func TestOverwriteTakesNoShardLock(t *testing.T) {
	for _, limit := range []int{0, 1000} {
		c := newCache(t, Options[string, int64]{TTL: time.Hour, Limit: limit})
		c.Set("k", 1)
		s := c.c.shardAt(c.c.hash("k"))
		s.mu.Lock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.Set("k", 2)
		}()
		ok := returns(done)
		if ok {
			wantGet(t, c, "k", 2, true)
		}
		s.mu.Unlock()
		if !ok {
			<-done
			t.Fatalf("limit %d: Set over a live key waited for the shard lock", limit)
		}
		if st := c.Stats(); st.Sets != 2 || st.Replaced != 1 {
			t.Errorf("limit %d: Sets %d, Replaced %d; want 2, 1", limit, st.Sets, st.Replaced)
		}
	}
}

// TestExpiryWaitsForOverwriteInProgress: the expiry callback judges a node
// due and kills it in one compare-and-swap on a stamp without the write
// bit. An overwrite holds the bit (it found the entry live) when the
// callback runs for the old, passed deadline: the callback waits, then
// re-arms for the new deadline. Judged from a plain load, it would remove
// the value just written.
func TestExpiryWaitsForOverwriteInProgress(t *testing.T) {
	c := newCache(t, Options[string, int64]{TTL: time.Hour})
	c.Set("k", 1)
	h := c.c.hash("k")
	n := c.c.shardAt(h).tab.Get("k", h)
	st := n.lockWrite()
	old := deadlineOf(st)
	at := c.c.origin.Add(time.Duration(old + int64(time.Second)))

	left := make(chan time.Duration, 1)
	go func() { left <- c.c.fire(&n.timer, at) }()
	letRun()
	n.writeInPlace(2, old+int64(2*time.Hour), false) // lets the bit go

	done := make(chan struct{})
	var got time.Duration
	go func() {
		defer close(done)
		got = <-left
	}()
	if !returns(done) {
		t.Fatal("the expiry callback still waits after the overwrite let the bit go")
	}
	if want := 2*time.Hour - time.Second; got != want {
		t.Errorf("callback returned %v, want %v (re-armed for the new deadline)", got, want)
	}
	if v, ok := c.Peek("k"); !ok || v != 2 {
		t.Errorf("Peek = %d, %v; want 2, true (the value written while the callback decided)", v, ok)
	}
	if st := c.Stats(); st.Expired != 0 {
		t.Errorf("Expired = %d, want 0", st.Expired)
	}
}

// TestComputeOvertakenByOverwrite: a Set over a live key while a Compute
// of it runs overtakes the Compute, as a Set of a missing key does
// (TestComputeOvertakenBySet): the Set's value stays. The overwrite sees
// the call in flight in its shard and leaves the write to the shard lock,
// which marks the call overtaken; stored without the lock, the Set would
// be lost under the Compute's result.
func TestComputeOvertakenByOverwrite(t *testing.T) {
	c := newCache(t, Options[string, int64]{TTL: time.Minute})
	c.Set("k", 1)
	v, ok := c.Compute("k", func(old int64, found bool) (int64, Action) {
		if old != 1 || !found {
			t.Errorf("fn(%d, %v), want fn(1, true)", old, found)
		}
		c.Set("k", 5)
		return 10, Store
	})
	if v != 10 || !ok {
		t.Errorf("Compute = %d, %v; want 10, true", v, ok)
	}
	wantGet(t, c, "k", 5, true)
}

// TestSlidingLeavesWriteInProgress: a read that slides the deadline swaps
// the stamp it loaded. If a writer held the write bit then, the slide
// could push the deadline past the writer's, which the writer would then
// move earlier in place, under readers that paired its value with the
// later one. The read leaves such a stamp alone.
func TestSlidingLeavesWriteInProgress(t *testing.T) {
	c := newCache(t, Options[string, int64]{TTL: time.Hour, ExpireAfterAccess: true, Resolution: time.Millisecond})
	c.Set("k", 1)
	h := c.c.hash("k")
	n := c.c.shardAt(h).tab.Get("k", h)
	st := n.lockWrite()
	held := st | writing
	c.c.read(n, "k", h, held, deadlineOf(st)) // now = the old deadline: due to slide
	if got := n.stamp.Load(); got != held {
		t.Errorf("stamp after a sliding read = %#x, want %#x (deadline unchanged)", got, held)
	}
	n.unlockWrite(0, 0)
}

// TestGetOrSetWaitsForOverwriteInProgress: a holder of the shard lock that
// judges an entry expired reads the clock, then the stamp once no write is
// in progress (see settled). An overwrite that found the entry live before
// its deadline holds the bit when GetOrSet, after the deadline, looks:
// GetOrSet waits and finds the overwrite's value live. Judged from a plain
// load, it would find the entry expired and store its own value over the
// overwrite's.
func TestGetOrSetWaitsForOverwriteInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The wheel fires on whole seconds: at 2 s for a deadline of 1.5 s.
		c := newCache(t, Options[string, int64]{TTL: 1500 * time.Millisecond, Resolution: time.Second})
		c.Set("k", 1)
		h := c.c.hash("k")
		n := c.c.shardAt(h).tab.Get("k", h)
		n.lockWrite() // an overwrite that found the entry live
		time.Sleep(1600 * time.Millisecond)

		type result struct {
			v      int64
			loaded bool
		}
		got := make(chan result, 1)
		go func() {
			v, loaded := c.GetOrSet("k", 3)
			got <- result{v, loaded}
		}()
		letRun()
		n.writeInPlace(2, c.c.now()+int64(time.Hour), false)
		if r := <-got; r.v != 2 || !r.loaded {
			t.Errorf("GetOrSet = %d, %v; want 2, true (the overwrite's value)", r.v, r.loaded)
		}
		wantGet(t, c, "k", 2, true)
	})
}

// TestEvictionOfRevivedEntryIsNotExpired: the policy judges a victim
// expired by the clock its Set read before taking the lock; an overwrite
// without the lock, with a later clock reading, may make it live before
// the policy kills it. The entry then goes as Evicted, with the
// overwrite's value, never as Expired with a value whose deadline has not
// passed.
func TestEvictionOfRevivedEntryIsNotExpired(t *testing.T) {
	c := newCache(t, Options[string, int64]{TTL: time.Hour, Limit: 10})
	c.Set("k", 1)
	h := c.c.hash("k")
	s := c.c.shardAt(h)
	n := s.tab.Get("k", h)
	judged := n.deadline() // the policy's clock: the entry looks expired
	n.lockWrite()
	n.writeInPlace(2, judged+int64(time.Hour), false) // the overwrite revives it

	var p pending[string, int64]
	s.mu.Lock()
	s.evictLocked(n, Expired, judged, &p)
	s.mu.Unlock()
	if want := (Event[string, int64]{Key: "k", Value: 2, Reason: Evicted}); p.event != want {
		t.Errorf("event = %+v, want %+v", p.event, want)
	}
	if st := c.Stats(); st.Expired != 0 || st.Evicted != 1 {
		t.Errorf("Expired %d, Evicted %d; want 0, 1", st.Expired, st.Evicted)
	}
}
