package harness

import (
	"runtime"
	"testing"
)

// HeapPerItem returns the growth of the heap in use (runtime.MemStats
// HeapInuse, measured after a full collection) caused by build, divided by n.
// build must create n items and keep them reachable after it returns, for
// example by storing them in a structure the caller holds; anything it merely
// allocates and drops is collected before the second measurement. The result
// includes size-class rounding, map and slice overhead and partly used spans.
// It can be negative if build frees memory that was live before. n must be
// positive.
//
// HeapPerItem runs four full collections and stops the world to read the
// statistics: call it outside any timed region.
func HeapPerItem(n int, build func()) float64 {
	if n <= 0 {
		panic("harness: HeapPerItem needs n > 0")
	}
	before := heapInuse()
	build()
	after := heapInuse()
	return (float64(after) - float64(before)) / float64(n)
}

// heapInuse collects garbage and returns HeapInuse. Two collections let
// objects with finalizers or cleanups queued by the first one be freed.
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// ReportHeapPerItem reports bytes per item as the "B/pending" metric on b.
func ReportHeapPerItem(b *testing.B, bytesPerItem float64) {
	b.ReportMetric(bytesPerItem, "B/pending")
}

// HeapAllocGrowth returns the growth of the bytes of live heap objects
// (runtime.MemStats HeapAlloc after a full collection) caused by build.
// Unlike HeapPerItem it counts objects, not the spans holding them, so it
// suits small structures (an empty cache) that occupy a fraction of a
// span. build must keep what it makes reachable after it returns.
func HeapAllocGrowth(build func()) int64 {
	before := heapAlloc()
	build()
	return int64(heapAlloc()) - int64(before)
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
