package compat

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	gz "github.com/zeromicro/go-zero/core/collection"

	"github.com/ttlkit/ttlkit/collection"
)

// TestDiff_SafeMapRangeHoldsLockInGoZero: go-zero's Range calls f with the
// map's read lock held, so an f that calls Set or Del on the same map
// blocks forever. Ours calls f with no lock held: f may write to the map.
func TestDiff_SafeMapRangeHoldsLockInGoZero(t *testing.T) {
	g := gz.NewSafeMap()
	g.Set("a", 1)
	lock := field[sync.RWMutex](g, "lock")
	writable := true
	g.Range(func(key, val any) bool {
		if lock.TryLock() { // what Set and Del would need
			lock.Unlock()
		} else {
			writable = false
		}
		return true
	})
	if writable {
		t.Error("go-zero: the write lock was free inside Range's f, want it held")
	}

	o := collection.NewSafeMap()
	for k := range 10 {
		o.Set(k, k)
	}
	o.Range(func(key, val any) bool {
		o.Del(key)
		o.Set(fmt.Sprint("copy of ", key), val)
		return true
	})
	if n := o.Size(); n < 10 {
		t.Errorf("ours: Size after Range moved every key = %d, want at least 10", n)
	}
	for k := range 10 {
		if _, ok := o.Get(k); ok {
			t.Errorf("ours: key %d still present after f deleted it", k)
		}
	}
}

// TestDiff_SafeMapUnhashableGetDelPanicInGoZero: go-zero's Get and Del
// panic for a key that cannot be hashed (a slice, say), like a built-in
// map. Ours reports it absent; Set panics in both, like a built-in map.
func TestDiff_SafeMapUnhashableGetDelPanicInGoZero(t *testing.T) {
	panics := func(f func()) (p bool) {
		defer func() { p = recover() != nil }()
		f()
		return false
	}
	key := []int{1}
	for _, c := range []struct {
		name      string
		m         safeMapAPI
		getDel    bool // Get and Del panic
		setPanics bool
	}{
		{"go-zero", gz.NewSafeMap(), true, true},
		{"ours", collection.NewSafeMap(), false, true},
	} {
		if got := panics(func() { c.m.Get(key) }); got != c.getDel {
			t.Errorf("%s: Get(slice) panicked %v, want %v", c.name, got, c.getDel)
		}
		if got := panics(func() { c.m.Del(key) }); got != c.getDel {
			t.Errorf("%s: Del(slice) panicked %v, want %v", c.name, got, c.getDel)
		}
		if got := panics(func() { c.m.Set(key, 1) }); got != c.setPanics {
			t.Errorf("%s: Set(slice) panicked %v, want %v", c.name, got, c.setPanics)
		}
		c.m.Set("k", 1)
		if v, ok := c.m.Get("k"); !ok || v != 1 {
			t.Errorf("%s: map unusable after the panics: Get(k) = %v, %v", c.name, v, ok)
		}
	}
}

// heapInUse returns the bytes of live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestDiff_SafeMapMemoryAfterShrinkInGoZero: go-zero's SafeMap copies its
// entries to a fresh map only once fewer than 1,000 are left, so 100,000
// entries deleted down to 3,000 keep the peak's memory. Ours migrates to a
// map sized for what is left. (The bound itself is pinned by safemap's
// TestShrinkHeapBound.)
func TestDiff_SafeMapMemoryAfterShrinkInGoZero(t *testing.T) {
	const peak, left = 100_000, 3_000
	retained := func(m safeMapAPI) uint64 {
		before := heapInUse()
		for k := range peak {
			m.Set(k, nil)
		}
		for k := range peak - left {
			m.Del(k)
		}
		m.Get(0) // lets an incremental migration make progress
		after := heapInUse()
		runtime.KeepAlive(m)
		return after - min(after, before)
	}
	g := retained(gz.NewSafeMap())
	o := retained(collection.NewSafeMap())
	t.Logf("heap held by %d entries after a peak of %d: go-zero %d KiB, ours %d KiB", left, peak, g>>10, o>>10)
	if g < 4*o {
		t.Errorf("go-zero holds %d KiB, ours %d KiB: want go-zero at least 4x ours", g>>10, o>>10)
	}
}
