package cache

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// heapGrowth returns the live heap that build adds, as measured after a
// collection, keeping build's result alive until then.
func heapGrowth(build func() any) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(x)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// fill writes keys [from, to) and waits until the expiry engine has taken
// the timers queued for them (Scheduler.Len does), so that no hand-off
// buffer of the moment is counted.
func fill(c *Cache[uint64, uint64], from, to uint64) *Cache[uint64, uint64] {
	for k := from; k < to; k++ {
		c.Set(k, k)
	}
	c.c.sched.Len()
	return c
}

// TestSmallCachesStaySmall: at GOMAXPROCS=64 an empty cache took 473 KiB
// (512 shards with padded tables, 512 counter stripes, and its wheel's
// hand-off shards), so programs that make many small caches paid for
// shards and stripes they never used. Shards are made on first use, two
// per processor; stripes start at four and grow with contention.
//
// Measured on the heap after a collection: an empty cache (Limit 0 and
// 1000) within 16 KiB, and a cache of 1,000 entries within twice what its
// entries themselves take (the heap each entry adds to a large cache:
// node, with its timer, and index slots).
func TestSmallCachesStaySmall(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap of caches of up to 20,000 entries")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(64))
	// Everything measured stays alive until the end, so that no cache
	// freed meanwhile (its cleanup keeps it until after a collection)
	// blurs a later measurement.
	var keep []*Cache[uint64, uint64]
	defer func() {
		for _, c := range keep {
			c.Close()
		}
	}()
	newFor := func(limit int) *Cache[uint64, uint64] {
		c, err := New(Options[uint64, uint64]{TTL: time.Hour, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, c)
		return c
	}
	// The heap each entry of a large cache takes: a cache of 20,000 minus
	// an empty one, per entry.
	const large = 20_000
	emptyOne := heapGrowth(func() any { return newFor(0) })
	perEntry := (heapGrowth(func() any { return fill(newFor(0), 0, large) }) - emptyOne) / large

	// The wheel's part, for the record: it is timingwheel's to shrink.
	var sched *timingwheel.Scheduler[int]
	wheel := heapGrowth(func() any {
		sched, _ = timingwheel.NewScheduler(time.Hour/100, 128, func(*timingwheel.Timer[int], time.Time) time.Duration { return 0 })
		return sched
	})
	defer sched.Stop()

	for _, limit := range []int{0, 1000} {
		// Several caches at once, averaged: other goroutines' allocations
		// blur a single small measurement.
		const caches = 8
		cs := make([]*Cache[uint64, uint64], caches)
		empty := heapGrowth(func() any {
			for i := range cs {
				cs[i] = newFor(limit)
			}
			return cs
		}) / caches
		entries := heapGrowth(func() any {
			for _, c := range cs {
				fill(c, 0, 1000)
			}
			return cs
		}) / caches
		total := empty + entries
		t.Logf("GOMAXPROCS 64, Limit %d: empty %d B (its wheel about %d B of it), with 1,000 entries %d B (%d B per entry in a large cache)",
			limit, empty, wheel, total, perEntry)
		if max := int64(16 << 10); empty > max {
			t.Errorf("Limit %d: empty cache takes %d B, want at most %d", limit, empty, max)
		}
		if max := 2 * 1000 * perEntry; total > max {
			t.Errorf("Limit %d: 1,000-entry cache takes %d B, want at most %d (twice its entries' %d B)", limit, total, max, max/2)
		}
	}
}

// TestStripesGrowWithoutLosingCounts: a set of stripes replaced after
// collisions keeps its counts for sum, and a lone reader never collides, so
// its cache keeps the first four stripes.
func TestStripesGrowWithoutLosingCounts(t *testing.T) {
	var r readCounters
	r.init(64)
	for range 100_000 {
		r.hit()
	}
	if n := len(r.cur.Load().s); n != firstStripes {
		t.Errorf("one reader: %d stripes, want %d", n, firstStripes)
	}
	want := uint64(100_000)
	for len(r.cur.Load().s) < r.max {
		set := r.cur.Load()
		for range growCollisions {
			set.collisions.Add(1) // as failed compare-and-swaps do
		}
		r.grow(set)
		r.hit()
		r.miss()
		want++
	}
	if n := len(r.cur.Load().s); n != r.max {
		t.Errorf("after growing: %d stripes, want %d", n, r.max)
	}
	if hits, misses := r.sum(); hits != want || misses != want-100_000 {
		t.Errorf("sum() = %d hits, %d misses; want %d, %d", hits, misses, want, want-100_000)
	}
}

// TestNodeFitsItsSizeClass: an entry is one node holding its own timer
// and value (an entry was a 64-byte node plus a 48-byte expiry object
// until the timer moved in, then an 80-byte node with a separate read
// counter, queue word and value pointer, plus a box for a V with
// pointers). On 64-bit platforms a bounded shard's node of uint64 keys and
// values fills the allocator's 64-byte size class exactly, and an
// unbounded shard's (no queue links) the 48 class, so any field added to
// either costs 16 bytes per entry: this test makes that a decision. A
// node of string keys and []byte values takes 88 bytes bounded (the 96
// class) and 72 unbounded (the 80 class); it took 80 + a 24-byte box. An
// entry overwritten since it was made is boxed (see boxed): 72 and 56
// bytes plus the box.
func TestNodeFitsItsSizeClass(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are for 64-bit platforms")
	}
	for _, tt := range []struct {
		name      string
		got, want uintptr
	}{
		{"linkedNode[uint64, uint64]", unsafe.Sizeof(entry[linkedNode[uint64, uint64], uint64]{}), 64},
		{"linkedNode[string, []byte]", unsafe.Sizeof(entry[linkedNode[string, []byte], []byte]{}), 88},
		{"node[uint64, uint64] (an unbounded shard's)", unsafe.Sizeof(entry[node[uint64, uint64], uint64]{}), 48},
		{"node[string, []byte] (an unbounded shard's)", unsafe.Sizeof(entry[node[string, []byte], []byte]{}), 72},
		// Boxed (see boxed): a value's slot is a pointer.
		{"boxed linkedNode[string, []byte]", unsafe.Sizeof(entry[linkedNode[string, []byte], *[]byte]{}), 72},
		{"boxed node[string, []byte]", unsafe.Sizeof(entry[node[string, []byte], *[]byte]{}), 56},
		{"boxed linkedNode[uint64, string]", unsafe.Sizeof(entry[linkedNode[uint64, string], *string]{}), 64},
	} {
		if tt.got > tt.want {
			t.Errorf("%s with its value is %d bytes, want at most %d", tt.name, tt.got, tt.want)
		}
	}
	if got := unsafe.Offsetof(node[uint64, uint64]{}.timer); got != 0 {
		t.Errorf("node.timer at offset %d, want 0 (nodeOf converts its address)", got)
	}
	if got := unsafe.Offsetof(linkedNode[uint64, uint64]{}.node); got != 0 {
		t.Errorf("linkedNode.node at offset %d, want 0 (a *node is its linkedNode's address)", got)
	}
	// A word value is loaded and stored as one uint64 (see wordValue), and
	// a shard finds the slot at one offset whether boxed or not (see
	// entry).
	for _, off := range []uintptr{
		unsafe.Offsetof(entry[node[uint64, uint64], uint64]{}.slot),
		unsafe.Offsetof(entry[node[string, int], int]{}.slot),
		unsafe.Offsetof(entry[linkedNode[int8, float64], float64]{}.slot),
		unsafe.Offsetof(entry[weighedNode[[3]byte, time.Duration], time.Duration]{}.slot),
		unsafe.Offsetof(entry[node[[3]byte, time.Duration], time.Duration]{}.slot),
	} {
		if off%8 != 0 {
			t.Errorf("value slot at offset %d, want a multiple of 8", off)
		}
	}
	if a, b := unsafe.Offsetof(entry[node[int8, [3]byte], [3]byte]{}.slot), unsafe.Offsetof(entry[node[int8, [3]byte], *[3]byte]{}.slot); a != b {
		t.Errorf("value slot at offset %d inline, %d boxed; want one offset", a, b)
	}
	if a, b := unsafe.Offsetof(entry[linkedNode[string, bool], bool]{}.slot), unsafe.Offsetof(entry[linkedNode[string, bool], *bool]{}.slot); a != b {
		t.Errorf("linked value slot at offset %d inline, %d boxed; want one offset", a, b)
	}
	if got := unsafe.Offsetof(weighedNode[uint64, uint64]{}.linkedNode); got != 0 {
		t.Errorf("weighedNode.linkedNode at offset %d, want 0 (a *node is its weighedNode's address)", got)
	}
}

// TestOverwriteReplacesTheNode: a write over a live entry publishes a new
// node with the new value and kills the old one, which keeps its own
// value and deadline for readers that found it before.
func TestOverwriteReplacesTheNode(t *testing.T) {
	c := newCache(t, Options[string, []byte]{TTL: time.Hour})
	c.Set("k", []byte("v1"))
	h := c.c.hash("k")
	s := c.c.shardAt(h)
	o := s.tab.Get("k", h)
	d := o.deadline()
	c.Set("k", []byte("v2"))
	n := s.tab.Get("k", h)
	s.mu.Lock()
	live := o.live()
	s.mu.Unlock()
	if n == o || live || string(s.valueOf(o)) != "v1" || o.deadline() != d || string(s.valueOf(n)) != "v2" {
		t.Errorf("after an overwrite: new node %v (old %p), old live %v, old value %q deadline %v (was %v), new value %q; want a new node holding v2, the old dead with v1 and its deadline",
			n != o, o, live, s.valueOf(o), o.deadline(), d, s.valueOf(n))
	}
}
