package bench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/collection"

	"github.com/ttlkit/ttlkit/bench/internal/harness"
	"github.com/ttlkit/ttlkit/safemap"
)

// concurrentMap is the API every map is driven through, uint64 to uint64.
type concurrentMap interface {
	Get(k uint64) (uint64, bool)
	Set(k, v uint64)
	Delete(k uint64)
	Len() int
}

type mapImpl struct {
	name string
	new  func() concurrentMap
}

// mapImpls lists the maps in the order they are reported.
var mapImpls = []mapImpl{
	{"ttlkit", func() concurrentMap { return ttlkitMap{safemap.New[uint64, uint64]()} }},
	{"gozero", func() concurrentMap { return gozeroMap{collection.NewSafeMap()} }},
	{"rwmap", func() concurrentMap { return &rwMap{m: make(map[uint64]uint64)} }},
}

// ttlkit: our safemap.SafeMap.
type ttlkitMap struct {
	m *safemap.SafeMap[uint64, uint64]
}

func (a ttlkitMap) Get(k uint64) (uint64, bool) { return a.m.Get(k) }
func (a ttlkitMap) Set(k, v uint64)             { a.m.Set(k, v) }
func (a ttlkitMap) Delete(k uint64)             { a.m.Delete(k) }
func (a ttlkitMap) Len() int                    { return a.m.Len() }

// gozero: go-zero v1.10.3 collection.SafeMap. Keys and values are any: a
// uint64 of 256 or more is boxed (8 bytes) when it is stored.
type gozeroMap struct{ m *collection.SafeMap }

func (a gozeroMap) Get(k uint64) (uint64, bool) {
	v, ok := a.m.Get(k)
	if !ok {
		return 0, false
	}
	return v.(uint64), true
}
func (a gozeroMap) Set(k, v uint64) { a.m.Set(k, v) }
func (a gozeroMap) Delete(k uint64) { a.m.Del(k) }
func (a gozeroMap) Len() int        { return a.m.Size() }

// rwmap: a built-in map under a sync.RWMutex, the baseline. It never
// shrinks.
type rwMap struct {
	mu sync.RWMutex
	m  map[uint64]uint64 // guarded by mu
}

func (a *rwMap) Get(k uint64) (uint64, bool) {
	a.mu.RLock()
	v, ok := a.m[k]
	a.mu.RUnlock()
	return v, ok
}
func (a *rwMap) Set(k, v uint64) {
	a.mu.Lock()
	a.m[k] = v
	a.mu.Unlock()
}
func (a *rwMap) Delete(k uint64) {
	a.mu.Lock()
	delete(a.m, k)
	a.mu.Unlock()
}
func (a *rwMap) Len() int {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return len(a.m)
}

// mapSizes are the populations of BenchmarkSafeMap.
var mapSizes = []struct {
	name string
	n    int
}{{"1k", 1_000}, {"1M", 1_000_000}}

// mapOp runs b.N operations of one kind on a map holding keys 0..n-1 with
// value = key.
type mapOp struct {
	name string
	run  func(b *testing.B, m concurrentMap, n int, trace []uint64, rng *rand.Rand)
}

var mapOps = []mapOp{
	{"Get", benchMapGet},
	{"Set", benchMapSet},
	{"Delete", benchMapDelete},
	{"DeleteSet", benchMapDeleteSet},
}

// BenchmarkSafeMap compares concurrent maps (issue 5):
// BenchmarkSafeMap/<op>/size=<n>/impl=<name>. Get, Set (of present keys)
// and DeleteSet (delete a present key, then set it again) run in
// b.RunParallel goroutines over a uniform trace of present keys; Delete
// runs on one goroutine and sets the deleted keys again, untimed, every
// quarter of the population (at most 64Ki deletes). The population stays
// at n (Delete: between 3n/4 and n, which never triggers safemap's
// shrinking). A map is built once per sub-benchmark and reused by the runs
// with growing b.N. Under -short only the 1k population runs.
func BenchmarkSafeMap(b *testing.B) {
	for _, op := range mapOps {
		b.Run(op.name, func(b *testing.B) {
			for _, sz := range mapSizes {
				if testing.Short() && sz.n > 1_000 {
					continue
				}
				trace := cachedTrace("uniform", sz.n, traceLen, 8)
				for _, im := range mapImpls {
					var m concurrentMap
					rng := rand.New(rand.NewPCG(9, 10))
					b.Run(fmt.Sprintf("size=%s/impl=%s", sz.name, im.name), func(b *testing.B) {
						if m == nil {
							m = im.new()
							for k := range uint64(sz.n) {
								m.Set(k, k)
							}
							runtime.GC()
						}
						b.ReportAllocs()
						op.run(b, m, sz.n, trace, rng)
					})
					m = nil
					runtime.GC()
				}
			}
		})
	}
}

func benchMapGet(b *testing.B, m concurrentMap, _ int, trace []uint64, rng *rand.Rand) {
	starts := parallelStarts(rng, len(trace))
	mask := uint64(len(trace) - 1)
	var id, misses atomic.Uint64
	h := harness.Start(b, nil)
	b.RunParallel(func(pb *testing.PB) {
		i := starts[(id.Add(1)-1)%uint64(len(starts))]
		var miss uint64
		for pb.Next() {
			if _, ok := m.Get(trace[i]); !ok {
				miss++
			}
			i = (i + 1) & mask
		}
		misses.Add(miss)
	})
	h.Stop()
	if misses.Load() != 0 {
		b.Fatalf("%d Gets of present keys missed", misses.Load())
	}
}

func benchMapSet(b *testing.B, m concurrentMap, _ int, trace []uint64, rng *rand.Rand) {
	starts := parallelStarts(rng, len(trace))
	mask := uint64(len(trace) - 1)
	var id atomic.Uint64
	h := harness.Start(b, nil)
	b.RunParallel(func(pb *testing.PB) {
		i := starts[(id.Add(1)-1)%uint64(len(starts))]
		for pb.Next() {
			k := trace[i]
			m.Set(k, k)
			i = (i + 1) & mask
		}
	})
	h.Stop()
}

func benchMapDeleteSet(b *testing.B, m concurrentMap, _ int, trace []uint64, rng *rand.Rand) {
	starts := parallelStarts(rng, len(trace))
	mask := uint64(len(trace) - 1)
	var id atomic.Uint64
	h := harness.Start(b, nil)
	b.RunParallel(func(pb *testing.PB) {
		i := starts[(id.Add(1)-1)%uint64(len(starts))]
		for pb.Next() {
			k := trace[i]
			m.Delete(k)
			m.Set(k, k)
			i = (i + 1) & mask
		}
	})
	h.Stop()
}

// benchMapDelete deletes present keys in a shuffled order; every chunk (a
// quarter of the population, at most 64Ki deletes) the deleted keys are set
// again outside the timer.
func benchMapDelete(b *testing.B, m concurrentMap, n int, _ []uint64, rng *rand.Rand) {
	chunk := min(max(n/4, 1), 1<<16)
	order := rng.Perm(n)
	next := 0
	deleted := make([]uint64, 0, chunk)
	h := harness.Start(b, nil)
	for i := 0; i < b.N; i++ {
		k := uint64(order[next])
		if next++; next == n {
			next = 0
		}
		m.Delete(k)
		deleted = append(deleted, k)
		if len(deleted) == chunk || i == b.N-1 {
			h.Pause()
			for _, k := range deleted {
				m.Set(k, k)
			}
			deleted = deleted[:0]
			if chunk >= 1<<14 {
				runtime.GC() // the repair's garbage is not the next chunk's
			}
			h.Resume()
		}
	}
	h.Stop()
}

// BenchmarkSafeMapShrink reports the heap a map holds after a peak of 1M
// entries has been deleted down to 5,000 (64Ki down to 5,000 under -short):
// "MiB-held" is the HeapInuse growth since before the map was built, after
// full collections; "x-fresh" divides it by what a built-in map freshly
// filled with 5,000 entries holds. "ns/delete" and "cpu-ns/delete" are the
// mean wall and process CPU time of the deletes, migrations included (the
// CPU figure does not count time other processes took from this one). Keys are deleted from the top down, so the
// survivors are keys 0..4999; for safemap a migration may still be running
// when the deletes end (its old table then counts). One round per process.
func BenchmarkSafeMapShrink(b *testing.B) {
	peak, live := 1_000_000, 5_000
	if testing.Short() {
		peak = 1 << 16
	}
	var fresh float64
	for _, im := range mapImpls {
		b.Run("impl="+im.name, func(b *testing.B) {
			reportOneShot(b, func() map[string]float64 {
				if fresh == 0 {
					var ref map[uint64]uint64
					fresh = harness.HeapPerItem(1, func() {
						ref = make(map[uint64]uint64)
						for k := range uint64(live) {
							ref[k] = k
						}
					})
					runtime.KeepAlive(ref)
				}
				var m concurrentMap
				var deleteTime, deleteCPU time.Duration
				held := harness.HeapPerItem(1, func() {
					m = im.new()
					for k := range uint64(peak) {
						m.Set(k, k)
					}
					runtime.GC() // the fill's garbage is not the deletes'
					start := time.Now()
					cpu0, _ := harness.ProcessCPU()
					for k := uint64(peak) - 1; k >= uint64(live); k-- {
						m.Delete(k)
					}
					cpu1, _ := harness.ProcessCPU()
					deleteTime, deleteCPU = time.Since(start), cpu1-cpu0
				})
				if got := m.Len(); got != live {
					b.Fatalf("%s: Len() = %d after the deletes, want %d", im.name, got, live)
				}
				runtime.KeepAlive(m)
				return map[string]float64{
					"MiB-held":      held / (1 << 20),
					"x-fresh":       held / fresh,
					"ns/delete":     float64(deleteTime.Nanoseconds()) / float64(peak-live),
					"cpu-ns/delete": float64(deleteCPU.Nanoseconds()) / float64(peak-live),
				}
			})
		})
	}
}
