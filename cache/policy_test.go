package cache

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestScanDoesNotFlushFrequentKeys: under the CLOCK policy (an LRU
// approximation), a scan of keys used once each, ten times the Limit,
// evicted every entry, however often it had been read. With W-TinyLFU a
// key used once never displaces one used often.
func TestScanDoesNotFlushFrequentKeys(t *testing.T) {
	const limit = 100 // one shard
	c := newCache(t, Options[int, int]{TTL: time.Hour, Limit: limit})
	for k := range limit {
		c.Set(k, k)
	}
	for range 5 {
		for k := range limit / 2 {
			c.Get(k)
		}
	}
	for k := 1000; k < 1000+10*limit; k++ {
		if _, ok := c.Get(k); !ok {
			c.Set(k, k)
		}
	}
	kept := 0
	for k := range limit / 2 {
		if _, ok := c.Peek(k); ok {
			kept++
		}
	}
	if want := limit/2 - limit/10; kept < want {
		t.Errorf("%d of the %d frequently read keys survived the scan, want at least %d", kept, limit/2, want)
	}
	checkInvariants(t, c, limit, false)
}

// TestLoopLargerThanCacheHits: replaying a loop over three times as many
// keys as the Limit, an LRU (and CLOCK) always evicts the key that comes
// next, and never hits. Admission keeps a stable part of the loop instead.
func TestLoopLargerThanCacheHits(t *testing.T) {
	const limit = 100
	c := newCache(t, Options[int, int]{TTL: time.Hour, Limit: limit})
	hits, lookups := 0, 0
	for lap := range 30 {
		for k := range 3 * limit {
			_, ok := c.Get(k)
			if !ok {
				c.Set(k, k)
			}
			if lap >= 10 {
				lookups++
				if ok {
					hits++
				}
			}
		}
	}
	// A perfect policy keeps Limit of the 3 x Limit keys: 1/3.
	if ratio := float64(hits) / float64(lookups); ratio < 0.15 {
		t.Errorf("hit ratio %.3f on a loop three times the Limit, want at least 0.15 (LRU: 0)", ratio)
	}
	checkInvariants(t, c, limit, false)
}

// TestNoteReadSaturates: a hot entry costs readers at most maxReads
// writes between two looks of the policy; later reads only load.
func TestNoteReadSaturates(t *testing.T) {
	var n node[int, int]
	n.stamp.Store(stampOf(1000) | probation)
	for range 100 {
		n.noteRead()
	}
	if got := n.reads(); got != maxReads || n.deadline() != 1000 || n.queue() != probation {
		t.Errorf("after 100 reads: reads %d, deadline %d, queue %d; want %d, 1000, %d", got, n.deadline(), n.queue(), maxReads, probation)
	}
}

// TestUnboundedCacheCountsNoReads: without a Limit there is no policy, so
// Get writes nothing to the entry.
func TestUnboundedCacheCountsNoReads(t *testing.T) {
	c := newCache(t, Options[int, int]{TTL: time.Hour})
	c.Set(1, 1)
	c.Get(1)
	s := c.c.shardAt(c.c.hash(1))
	if n := s.tab.Get(1, c.c.hash(1)); n.reads() != 0 {
		t.Errorf("reads = %d after a Get from an unbounded cache, want 0", n.reads())
	}
}

func TestSketch(t *testing.T) {
	var s sketch
	s.init(64)
	keys := []uint64{0x1234, 0xdeadbeef, 42, 1 << 63}
	for i, h := range keys {
		s.add(h, i+1)
	}
	for i, h := range keys {
		if got := s.estimate(h); got < i+1 {
			t.Errorf("estimate(%#x) = %d after %d adds, want at least %d", h, got, i+1, i+1)
		}
	}
	s.add(keys[0], 100)
	if got := s.estimate(keys[0]); got != 15 {
		t.Errorf("estimate after 100 more adds = %d, want 15 (saturated)", got)
	}
	// Halving: fill a sample with other keys; the estimate halves.
	before := s.estimate(keys[3])
	for h := uint64(1); s.adds != 0 && s.adds < s.limit-1; h++ {
		s.add(h*0x9E3779B97F4A7C15, 1)
	}
	s.halve()
	if got := s.estimate(keys[3]); got > (before+2)/2 {
		t.Errorf("estimate after halving = %d, want about %d/2", got, before)
	}
	var empty sketch
	empty.add(1, 1) // no table yet: nothing, no panic
	if got := empty.estimate(1); got != 0 {
		t.Errorf("estimate from an unmade sketch = %d, want 0", got)
	}
}

// TestSketchIsMadeWhenHalfFull: a bounded cache that is not yet half
// full pays nothing for the sketch.
func TestSketchIsMadeWhenHalfFull(t *testing.T) {
	c := newCache(t, Options[int, int]{TTL: time.Hour, Limit: 100})
	for k := range 49 {
		c.Set(k, k)
	}
	s := c.c.shards[0].Load()
	if s.sk.table != nil {
		t.Errorf("sketch of %d words with 49 entries of 100, want none", len(s.sk.table))
	}
	c.Set(49, 49)
	c.Set(50, 50)
	if len(s.sk.table) != 128 {
		t.Errorf("sketch of %d words at half full, want 128", len(s.sk.table))
	}
}

// TestClimber: the window share moves by a step after each complete
// sample, keeps its direction while the hit ratio holds or improves,
// turns when it drops, and stays within [0, 100%].
func TestClimber(t *testing.T) {
	var cl climber
	cl.init(100)
	var hits, misses uint64
	sample := func(ratio float64) func() (uint64, uint64) {
		return func() (uint64, uint64) {
			hits += uint64(ratio * float64(cl.sample))
			misses += cl.sample - uint64(ratio*float64(cl.sample))
			return hits, misses
		}
	}
	if cl.frac.Load() != firstFrac {
		t.Fatalf("first share %d, want %d", cl.frac.Load(), firstFrac)
	}
	cl.climb(func() (uint64, uint64) { return hits, misses }) // sample incomplete
	if cl.frac.Load() != firstFrac {
		t.Fatalf("share moved to %d on an incomplete sample", cl.frac.Load())
	}
	cl.climb(sample(0.5))
	f1 := cl.frac.Load()
	if f1 <= firstFrac {
		t.Fatalf("share %d after the first sample, want above %d", f1, firstFrac)
	}
	cl.climb(sample(0.6)) // better: same direction
	f2 := cl.frac.Load()
	if f2 <= f1 {
		t.Errorf("share %d after a better sample, want above %d", f2, f1)
	}
	cl.climb(sample(0.58)) // worse: turn
	if f3 := cl.frac.Load(); f3 >= f2 {
		t.Errorf("share %d after a worse sample, want below %d", f3, f2)
	}
	for range 200 {
		cl.climb(sample(0.5))
		if f := cl.frac.Load(); f < 0 || f > fracOne {
			t.Fatalf("share %d, want within [0, %d]", f, fracOne)
		}
	}
}

// TestLimitNeverExceededConcurrently: the limit holds at every instant,
// not only between calls: a shard evicts before it inserts, under its
// lock, and never holds more than its share. A goroutine reading Len
// while others write never sees more than Limit.
func TestLimitNeverExceededConcurrently(t *testing.T) {
	const limit = 1000
	c := newCache(t, Options[int, int]{TTL: time.Hour, Limit: limit})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		wg.Go(func() {
			x := xorshift(g + 1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := int(x.next() % (10 * limit))
				if _, ok := c.Get(k); !ok {
					c.Set(k, k)
				}
			}
		})
	}
	for range 2000 {
		if n := c.Len(); n > limit {
			t.Errorf("Len() = %d, want <= %d", n, limit)
			break
		}
	}
	close(stop)
	wg.Wait()
	checkInvariants(t, c, limit, false)
}

// TestPolicyInvariantsUnderMixedOps runs random writes, reads, deletes and
// overwrites against bounded caches of one and several shards and checks
// the queues after each batch.
func TestPolicyInvariantsUnderMixedOps(t *testing.T) {
	for _, limit := range []int{1, 2, 7, 64, 500, 5000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			c := newCache(t, Options[int, int]{TTL: time.Hour, Limit: limit})
			x := xorshift(limit)
			for i := range 20 * limit {
				k := int(x.next() % uint64(3*limit+3))
				switch x.next() % 8 {
				case 0:
					c.Delete(k)
				case 1:
					c.Touch(k)
				case 2, 3, 4:
					c.Get(k)
				default:
					c.Set(k, i)
				}
				if i%(limit+1) == 0 {
					checkInvariants(t, c, limit, false)
				}
			}
			checkInvariants(t, c, limit, false)
		})
	}
}
