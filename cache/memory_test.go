package cache

import (
	"runtime"
	"testing"
	"time"

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

// fill writes keys [from, to) with TTL an hour.
func fill(c *Cache[uint64, uint64], from, to uint64) *Cache[uint64, uint64] {
	for k := from; k < to; k++ {
		c.Set(k, k)
	}
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
// node, expiry and index slots).
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
	// The heap each entry adds to a large cache.
	c := newFor(0)
	fill(c, 0, 10_000)
	perEntry := heapGrowth(func() any { return fill(c, 10_000, 20_000) }) / 10_000

	// The wheel's part, for the record: it is timingwheel's to shrink.
	var sched *timingwheel.Scheduler[int]
	wheel := heapGrowth(func() any {
		sched, _ = timingwheel.NewScheduler(time.Hour/100, 128, func(*timingwheel.Timer[int], time.Time) time.Duration { return 0 })
		return sched
	})
	defer sched.Stop()

	for _, limit := range []int{0, 1000} {
		var c *Cache[uint64, uint64]
		empty := heapGrowth(func() any { c = newFor(limit); return c })
		entries := heapGrowth(func() any { return fill(c, 0, 1000) })
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
