package safemap

import (
	"runtime"
	"testing"
)

func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestShrinkHeapBound is the scenario of golang/go#20135 and of go-zero's
// SafeMap (which held about 80 MiB here): a peak of 1M entries shrunk to
// 5,000 live ones must hold about what a map freshly filled with those
// 5,000 holds.
//
// The bound is 4x a fresh built-in map of the live entries, plus 256 KiB
// for heap noise (span rounding, the test's own allocations). 4x is what
// the policy promises when no migration is pending: Len >= peak/4, so the
// table was last sized for fewer than 4*Len entries. In this scenario the
// last migration starts at 15,624 entries; on go1.26/amd64 the result
// measures about 2.1x a fresh 5,000-entry map (376 vs 176 KiB), while a
// built-in map filled to 15,624 and emptied to 5,000 measures 3.4x. A map
// that kept its 1M-entry tables (about 45 MiB here) would exceed the bound
// about 60-fold.
func TestShrinkHeapBound(t *testing.T) {
	const peak, live = 1_000_000, 5_000

	base := heapInuse()
	fresh := make(map[int]int)
	for i := range live {
		fresh[i] = i
	}
	freshHeap := heapInuse() - base
	runtime.KeepAlive(fresh)
	fresh = nil

	base = heapInuse()
	m := New[int, int]()
	fill(m, peak)
	peakHeap := heapInuse() - base
	for k := range peak - live {
		m.Delete(peak - 1 - k)
	}
	shrunkHeap := heapInuse() - base
	runtime.KeepAlive(m)

	t.Logf("HeapInuse: fresh %d entries %d KiB; SafeMap at peak %d KiB, shrunk to %d entries %d KiB (%.2fx fresh)",
		live, freshHeap>>10, peakHeap>>10, live, shrunkHeap>>10, float64(shrunkHeap)/float64(freshHeap))
	if m.mig != nil {
		t.Errorf("a migration is still running after %d deletes", peak-live)
	}
	if got, want := m.Len(), live; got != want {
		t.Fatalf("Len() = %d, want %d", got, want)
	}
	const slack = 256 << 10
	if limit := 4*freshHeap + slack; shrunkHeap > limit {
		t.Errorf("HeapInuse after shrinking = %d KiB, want at most 4 x %d KiB + %d KiB = %d KiB",
			shrunkHeap>>10, freshHeap>>10, slack>>10, limit>>10)
	}
}

// TestChurnHeapBound checks that a steady live set under heavy churn (every
// insert followed by a delete of an older key) does not grow the heap:
// neither the built-in map's tombstones nor the shrink policy may let it
// creep.
func TestChurnHeapBound(t *testing.T) {
	const live, churn = 5_000, 500_000

	base := heapInuse()
	m := New[int, int]()
	fill(m, live)
	before := heapInuse() - base
	for i := live; i < live+churn; i++ {
		m.Set(i, i)
		m.Delete(i - live)
	}
	after := heapInuse() - base
	runtime.KeepAlive(m)
	t.Logf("HeapInuse with %d live entries: %d KiB before %d churn operations, %d KiB after", live, before>>10, churn, after>>10)
	if got := m.Len(); got != live {
		t.Fatalf("Len() = %d, want %d", got, live)
	}
	const slack = 256 << 10
	if limit := 2*before + slack; after > limit {
		t.Errorf("HeapInuse after churn = %d KiB, want at most 2 x %d KiB + %d KiB", after>>10, before>>10, slack>>10)
	}
}
