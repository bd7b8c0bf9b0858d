package cache

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestPeekLeavesNoTrace: Peek reads like Get but neither marks the entry
// (so CLOCK evicts it as unread) nor counts in Stats.
func TestPeekLeavesNoTrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[int, int]{TTL: time.Minute, Limit: 2})
		c.Set(1, 10)
		c.Set(2, 20)
		if v, ok := c.Peek(1); !ok || v != 10 {
			t.Errorf("Peek(1) = %d, %v; want 10, true", v, ok)
		}
		if _, ok := c.Peek(3); ok {
			t.Error("Peek(3) ok = true, want false")
		}
		if st := c.Stats(); st.Hits != 0 || st.Misses != 0 {
			t.Errorf("Stats after Peeks = %d hits, %d misses; want 0, 0", st.Hits, st.Misses)
		}
		c.Peek(2)
		c.Peek(2)
		// 1 and 2 were used as often: of the two, the newcomer 2 goes.
		// (Read twice, 2 would stay and 1 go: TestGetIsAUse.)
		c.Set(3, 30)
		if _, ok := c.Peek(2); ok {
			t.Error("entry 2 survived an eviction after Peeks; want it evicted as unread")
		}
		time.Sleep(time.Minute)
		if _, ok := c.Peek(2); ok {
			t.Error("Peek returned an entry at its deadline")
		}
	})
}

// TestGetIsAUse is TestPeekLeavesNoTrace's control: reads make an entry
// stay.
func TestGetIsAUse(t *testing.T) {
	c := newCache(t, Options[int, int]{TTL: time.Minute, Limit: 2})
	c.Set(1, 10)
	c.Set(2, 20)
	c.Get(2)
	c.Get(2)
	c.Set(3, 30)
	if _, ok := c.Peek(2); !ok {
		t.Error("entry 2 was evicted after two reads; want 1 evicted")
	}
	if _, ok := c.Peek(1); ok {
		t.Error("entry 1 survived; want it evicted, read less than 2")
	}
}

// TestRemainingCountsDown: Remaining is the time to the deadline,
// restarted by Touch and by a write, 0 and false at the deadline.
func TestRemainingCountsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Minute})
		if d, ok := c.Remaining("k"); ok || d != 0 {
			t.Errorf("Remaining of a missing key = %v, %v; want 0, false", d, ok)
		}
		c.SetWithExpire("k", 1, 10*time.Second)
		time.Sleep(4 * time.Second)
		if d, ok := c.Remaining("k"); !ok || d != 6*time.Second {
			t.Errorf("Remaining = %v, %v; want 6s, true", d, ok)
		}
		c.Touch("k") // the default TTL from now
		if d, ok := c.Remaining("k"); !ok || d != time.Minute {
			t.Errorf("Remaining after Touch = %v, %v; want 1m, true", d, ok)
		}
		time.Sleep(time.Minute)
		if d, ok := c.Remaining("k"); ok || d != 0 {
			t.Errorf("Remaining at the deadline = %v, %v; want 0, false", d, ok)
		}
	})
}

// TestRemainingWithJitter: the time left includes the jitter drawn for the
// entry, within its bounds.
func TestRemainingWithJitter(t *testing.T) {
	c := newCache(t, Options[int, int]{TTL: time.Hour, Jitter: 0.1})
	for k := range 100 {
		c.Set(k, k)
		d, ok := c.Remaining(k)
		if !ok || d > 66*time.Minute || d < 53*time.Minute {
			t.Fatalf("Remaining(%d) = %v, %v; want within an hour ±10%%", k, d, ok)
		}
	}
}

// TestGetOrSetStoresOnce: of concurrent GetOrSets of a missing key, one
// stores and every caller gets its value.
func TestGetOrSetStoresOnce(t *testing.T) {
	c := newCache(t, Options[string, int]{TTL: time.Hour})
	const n = 16
	var wg sync.WaitGroup
	got := make([]int, n)
	loaded := make([]bool, n)
	for i := range n {
		wg.Go(func() { got[i], loaded[i] = c.GetOrSet("k", i) })
	}
	wg.Wait()
	winner, _ := c.Get("k")
	stores := 0
	for i := range n {
		if got[i] != winner {
			t.Errorf("caller %d got %d, want the stored %d", i, got[i], winner)
		}
		if !loaded[i] {
			stores++
		}
	}
	if stores != 1 {
		t.Errorf("%d callers stored, want 1", stores)
	}
	if st := c.Stats(); st.Misses != 1 || st.Hits != n { // n-1 GetOrSet hits and the Get
		t.Errorf("Stats = %d hits, %d misses; want %d, 1", st.Hits, st.Misses, n)
	}
}

// TestSetIfAbsentReplacesExpired: an entry past its deadline counts as
// absent, and is reported as Expired when replaced; a live one stays,
// unmarked and uncounted.
func TestSetIfAbsentReplacesExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder[string, int]{}
		c := newCache(t, Options[string, int]{TTL: time.Minute, Resolution: time.Hour, OnEvict: rec.on})
		if !c.SetIfAbsent("k", 1) {
			t.Fatal("SetIfAbsent of a missing key = false, want true")
		}
		if c.SetIfAbsent("k", 2) {
			t.Error("SetIfAbsent of a live key = true, want false")
		}
		wantGet(t, c, "k", 1, true)
		time.Sleep(time.Minute) // expired; the wheel reclaims it only after an hour
		if !c.SetIfAbsent("k", 3) {
			t.Error("SetIfAbsent over an expired entry = false, want true")
		}
		if ev := rec.take(); len(ev) != 1 || ev[0] != (Event[string, int]{"k", 1, Expired}) {
			t.Errorf("events %v, want the expired entry reported as Expired", ev)
		}
		if st := c.Stats(); st.Hits != 1 || st.Misses != 0 {
			t.Errorf("Stats = %d hits, %d misses; want only the Get's hit", st.Hits, st.Misses)
		}
		c.Close()
		if c.SetIfAbsent("new", 1) {
			t.Error("SetIfAbsent after Close = true, want false")
		}
		if v, loaded := c.GetOrSet("new", 5); v != 5 || loaded {
			t.Errorf("GetOrSet after Close = %d, %v; want 5, false", v, loaded)
		}
	})
}

// TestClearRemovesAndReportsEverything: Clear empties every shard, reports
// each entry, cancels every timer (the wheel holds none) and keeps loads
// in flight from storing.
func TestClearRemovesAndReportsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder[int, int]{}
		c := newCache(t, Options[int, int]{TTL: time.Minute, OnEvict: rec.on})
		for k := range 1000 {
			c.SetWithExpire(k, k, time.Duration(k+1)*time.Second)
		}
		release := make(chan struct{})
		loaded := make(chan int)
		go func() {
			v, _ := c.Take(-1, func() (int, error) { <-release; return -1, nil })
			loaded <- v
		}()
		time.Sleep(500 * time.Second) // half have expired, not all reclaimed yet
		synctest.Wait()
		rec.take()
		n := c.Len()
		c.Clear()
		if got := len(rec.take()); got != n {
			t.Errorf("Clear reported %d entries, want %d", got, n)
		}
		close(release)
		if v := <-loaded; v != -1 {
			t.Errorf("Take in flight returned %d, want -1", v)
		}
		if _, ok := c.Get(-1); ok {
			t.Error("a load in flight during Clear was stored")
		}
		if got := c.Len(); got != 0 {
			t.Errorf("Len() = %d after Clear, want 0", got)
		}
		synctest.Wait()
		checkInvariants(t, c, 0, true) // the wheel holds no timer
		c.Set(1, 1)
		wantGet(t, c, 1, 1, true)
	})
}

// TestKeysAndValues: the key and value iterators follow All.
func TestKeysAndValues(t *testing.T) {
	c := newCache(t, Options[int, string]{TTL: time.Hour})
	for k := range 50 {
		c.Set(k, string(rune('a'+k%26)))
	}
	keys := map[int]bool{}
	for k := range c.Keys() {
		if keys[k] {
			t.Errorf("Keys yielded %d twice", k)
		}
		keys[k] = true
	}
	values := 0
	for v := range c.Values() {
		if len(v) != 1 {
			t.Errorf("Values yielded %q", v)
		}
		values++
	}
	if len(keys) != 50 || values != 50 {
		t.Errorf("Keys yielded %d, Values %d; want 50 each", len(keys), values)
	}
	for range c.Keys() {
		break // stopping early is fine
	}
}
