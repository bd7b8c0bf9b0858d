package cache

import (
	"hash/maphash"
	"runtime"
	"sync/atomic"
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
	s := c.c.shardAt(h)
	n := s.tab.Get("k", h)
	st := n.lockWrite()
	old := deadlineOf(st)
	at := c.c.origin.Add(time.Duration(old + int64(time.Second)))

	left := make(chan time.Duration, 1)
	go func() { left <- c.c.fire(&n.timer, at) }()
	letRun()
	s.writeInPlace(n, 2, nil, old+int64(2*time.Hour), false) // lets the bit go

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
		s := c.c.shardAt(h)
		n := s.tab.Get("k", h)
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
		s.writeInPlace(n, 2, nil, c.c.now()+int64(time.Hour), false)
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
	s.writeInPlace(n, 2, nil, judged+int64(time.Hour), false) // the overwrite revives it

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

// TestBoxedOverwriteTakesNoShardLock is TestOverwriteTakesNoShardLock for
// a value that is not a word: once its first overwrite has boxed it (see
// boxed), a Set over it takes the node's write bit, not the shard lock.
// Before boxes, every Set of a string value waited for the lock.
func TestBoxedOverwriteTakesNoShardLock(t *testing.T) {
	for _, limit := range []int{0, 1000} {
		c := newCache(t, Options[string, string]{TTL: time.Hour, Limit: limit})
		c.Set("k", "v1")
		c.Set("k", "v2") // boxes it
		s := c.c.shardAt(c.c.hash("k"))
		s.mu.Lock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.Set("k", "v3")
		}()
		ok := returns(done)
		if ok {
			wantGet(t, c, "k", "v3", true)
		}
		s.mu.Unlock()
		if !ok {
			<-done
			t.Fatalf("limit %d: Set over a boxed live value waited for the shard lock", limit)
		}
		if st := c.Stats(); st.Sets != 3 || st.Replaced != 2 {
			t.Errorf("limit %d: Sets %d, Replaced %d; want 3, 2", limit, st.Sets, st.Replaced)
		}
	}
}

// TestFirstOverwriteBoxes: a new entry keeps a value that is not a word
// inline, and a reader copies it without a lock, so it never changes: the
// first overwrite replaces the node by a boxed one (see boxed). Later
// writes with a later deadline store a new box in that node, arming and
// cancelling nothing; an earlier deadline, from a write or a Touch, moves
// the entry to a new boxed node, since a deadline never moves earlier
// under a value written in place (see wordValue).
// Deadlines are whole ticks of 8 ns, as dueAt makes them.
func TestFirstOverwriteBoxes(t *testing.T) {
	for _, limit := range []int64{0, 100} {
		var s shard[string, string]
		s.init(limit, false, maphash.MakeSeed(), new(atomic.Int64))
		h := s.tab.Hash("k")
		isBoxed := func(n *node[string, string]) bool { return n.stamp.Load()&boxed != 0 }
		var p pending[string, string]
		s.setLocked("k", h, "v1", 1, 0, 104, &p)
		first := s.tab.Get("k", h)
		if p.arm != first || isBoxed(first) {
			t.Fatalf("limit %d: new key: armed %v, boxed %v; want the node armed, not boxed", limit, p.arm == first, isBoxed(first))
		}

		p = pending[string, string]{}
		s.setLocked("k", h, "v2", 1, 10, 200, &p)
		second := s.tab.Get("k", h)
		if second == first || !isBoxed(second) || p.arm != second || p.cancel != first ||
			first.live() || s.valueOf(first) != "v1" || s.valueOf(second) != "v2" {
			t.Errorf("limit %d: first overwrite: new node %v boxed %v armed %v, old cancelled %v live %v holding %q, new holding %q; "+
				"want a new boxed node armed holding v2, the old cancelled and dead holding v1",
				limit, second != first, isBoxed(second), p.arm == second, p.cancel == first, first.live(), s.valueOf(first), s.valueOf(second))
		}

		p = pending[string, string]{}
		s.setLocked("k", h, "v3", 1, 20, 304, &p)
		if n := s.tab.Get("k", h); n != second || p.arm != nil || p.cancel != nil || s.valueOf(n) != "v3" || n.deadline() != 304 {
			t.Errorf("limit %d: later deadline: same node %v, arm %v, cancel %v, value %q, deadline %d; want the same node holding v3 until 304, nothing armed or cancelled",
				limit, n == second, p.arm, p.cancel, s.valueOf(n), n.deadline())
		}
		if want := (Event[string, string]{"k", "v2", Replaced}); p.event != want {
			t.Errorf("limit %d: in-place overwrite: event %v, want %v", limit, p.event, want)
		}

		for _, tt := range []struct {
			name  string
			write func(p *pending[string, string])
			value string
		}{
			{"Touch", func(p *pending[string, string]) { s.touchLocked("k", h, 30, 248, p) }, "v3"},
			{"Set", func(p *pending[string, string]) { s.setLocked("k", h, "v4", 1, 40, 200, p) }, "v4"},
		} {
			old := s.tab.Get("k", h)
			p = pending[string, string]{}
			tt.write(&p)
			n := s.tab.Get("k", h)
			if n == old || !isBoxed(n) || p.arm != n || p.cancel != old || old.live() || s.valueOf(n) != tt.value {
				t.Errorf("limit %d: earlier deadline by %s: new node %v boxed %v armed %v, old cancelled %v live %v, value %q; "+
					"want a new boxed node armed holding %s, the old cancelled and dead",
					limit, tt.name, n != old, isBoxed(n), p.arm == n, p.cancel == old, old.live(), s.valueOf(n), tt.value)
			}
		}
	}
}

// TestPointerOverwriteAllocatesNothing: a value that is one pointer (a
// *T, a map, a chan, a func) is a word value (see pointerValue): its
// overwrite with a later deadline stores the pointer in the node, with no
// box, no new node and no lock, from the entry's first overwrite on.
func TestPointerOverwriteAllocatesNothing(t *testing.T) {
	for _, limit := range []int{0, 1000} {
		c := newCache(t, Options[string, *int]{TTL: time.Hour, Limit: limit})
		a, b := new(int), new(int)
		c.Set("k", a)
		h := c.c.hash("k")
		s := c.c.shardAt(h)
		n := s.tab.Get("k", h)
		flip := false
		allocs := testing.AllocsPerRun(100, func() {
			if flip = !flip; flip {
				c.Set("k", b)
			} else {
				c.Set("k", a)
			}
		})
		if allocs != 0 {
			t.Errorf("limit %d: %v allocations per overwrite, want 0", limit, allocs)
		}
		if got := s.tab.Get("k", h); got != n || got.stamp.Load()&boxed != 0 {
			t.Errorf("limit %d: overwrites replaced the node or boxed it", limit)
		}
		if v, ok := c.Get("k"); !ok || v != b {
			t.Errorf("limit %d: Get = %p, %v; want %p, true", limit, v, ok, b)
		}
	}
}
