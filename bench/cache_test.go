package bench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/bench/internal/harness"
)

// Cache benchmark shapes (issue 3, Performance). Every implementation gets
// the same configuration and the same pre-generated key traces; keys and
// values are uint64 (string-keyed caches get pre-built decimal names).
const (
	gsKeys     = 1 << 20 // key space of the Get-then-Set workload
	gsCapacity = 100_000
	longTTL    = time.Hour // nothing expires while measuring
	traceLen   = 1 << 21   // keys per trace (16 MiB, no pointers)

	readKeys = 100_000 // resident keys of the reads-only workload
)

// cacheShape is the size of a workload; testing.Short shrinks it.
type cacheShape struct {
	gsKeys, gsCapacity, readKeys int
}

func shape() cacheShape {
	if testing.Short() {
		return cacheShape{gsKeys: 1 << 16, gsCapacity: 1 << 13, readKeys: 1 << 13}
	}
	return cacheShape{gsKeys: gsKeys, gsCapacity: gsCapacity, readKeys: readKeys}
}

func mustCache(b *testing.B, im cacheImpl, cfg cacheConfig) ttlCache {
	b.Helper()
	c, err := im.new(cfg)
	if err != nil {
		b.Fatalf("new %s: %v", im.name, err)
	}
	return c
}

// closeCache closes c and collects, so that the next implementation does
// not pay for this one's garbage.
func closeCache(c ttlCache) {
	if c != nil {
		c.Close()
		runtime.GC()
	}
}

// BenchmarkCacheGetOrSet is the main workload of issue 3: Get, and Set on a
// miss, from b.RunParallel goroutines, over 1M keys with capacity 100k and a
// TTL of an hour, keys drawn from a Zipf (s=1.01) or a uniform trace. The
// cache is warmed with 4×capacity operations of another trace of the same
// distribution before the first timed run and reused by the later ones.
// Reports ns/op (one Get, plus a Set on a miss), cpu-ns/op, allocs and the
// hit ratio of the last run ("hit%", counted by the benchmark itself).
// go-cache is left out: it has no capacity.
func BenchmarkCacheGetOrSet(b *testing.B) {
	sh := shape()
	for _, dist := range []string{"zipf", "uniform"} {
		trace := cachedTrace(dist, sh.gsKeys, traceLen, 1)
		warm := cachedTrace(dist, sh.gsKeys, 4*sh.gsCapacity, 2)
		b.Run("dist="+dist, func(b *testing.B) {
			for _, im := range cacheImpls {
				if !im.bounded {
					continue
				}
				var c ttlCache
				rng := rand.New(rand.NewPCG(3, 4))
				b.Run("impl="+im.name, func(b *testing.B) {
					if c == nil {
						c = mustCache(b, im, cacheConfig{capacity: sh.gsCapacity, ttl: longTTL, keys: sh.gsKeys})
						for _, k := range warm {
							if _, ok := c.Get(k); !ok {
								c.Set(k, k)
							}
						}
						c.Sync()
						runtime.GC()
					}
					b.ReportAllocs()
					hits, ops := runGetOrSet(b, c, trace, rng)
					if ops > 0 {
						b.ReportMetric(100*float64(hits)/float64(ops), "hit%")
					}
				})
				closeCache(c)
			}
		})
	}
}

// BenchmarkCacheSet is Set alone in the shape of BenchmarkCacheGetOrSet:
// b.RunParallel goroutines set keys of a Zipf (s=1.01) or uniform trace
// over 1M keys into a cache of capacity 100k with a TTL of an hour, warmed
// the same way; a Set of a resident key overwrites it, of another inserts
// it and evicts. Reports ns/op, cpu-ns/op (the work a cache hands to its
// own goroutines included) and allocs. ristretto may drop Sets its buffers
// cannot take; go-cache is left out (no capacity).
func BenchmarkCacheSet(b *testing.B) {
	sh := shape()
	for _, dist := range []string{"zipf", "uniform"} {
		trace := cachedTrace(dist, sh.gsKeys, traceLen, 1)
		warm := cachedTrace(dist, sh.gsKeys, 4*sh.gsCapacity, 2)
		b.Run("dist="+dist, func(b *testing.B) {
			for _, im := range cacheImpls {
				if !im.bounded {
					continue
				}
				var c ttlCache
				rng := rand.New(rand.NewPCG(8, 9))
				b.Run("impl="+im.name, func(b *testing.B) {
					if c == nil {
						c = mustCache(b, im, cacheConfig{capacity: sh.gsCapacity, ttl: longTTL, keys: sh.gsKeys})
						for _, k := range warm {
							c.Set(k, k)
						}
						c.Sync()
						runtime.GC()
					}
					b.ReportAllocs()
					runSets(b, c, trace, rng)
				})
				closeCache(c)
			}
		})
	}
}

func runSets(b *testing.B, c ttlCache, trace []uint64, rng *rand.Rand) {
	starts := parallelStarts(rng, len(trace))
	mask := uint64(len(trace) - 1)
	var id atomic.Uint64
	m := harness.Start(b, c.Sync)
	b.RunParallel(func(pb *testing.PB) {
		i := starts[(id.Add(1)-1)%uint64(len(starts))]
		for pb.Next() {
			k := trace[i]
			i = (i + 1) & mask
			c.Set(k, k)
		}
	})
	m.Stop()
}

// parallelStarts returns start positions in a trace for the goroutines of
// one RunParallel call, drawn from rng so that consecutive runs do not
// replay the same stretch of the trace.
func parallelStarts(rng *rand.Rand, traceLen int) *[16]uint64 {
	var s [16]uint64
	for i := range s {
		s[i] = rng.Uint64N(uint64(traceLen))
	}
	return &s
}

func runGetOrSet(b *testing.B, c ttlCache, trace []uint64, rng *rand.Rand) (hits, ops uint64) {
	starts := parallelStarts(rng, len(trace))
	mask := uint64(len(trace) - 1)
	var id, totalHits, totalOps atomic.Uint64
	m := harness.Start(b, c.Sync)
	b.RunParallel(func(pb *testing.PB) {
		i := starts[(id.Add(1)-1)%uint64(len(starts))]
		var h, n uint64
		for pb.Next() {
			k := trace[i]
			i = (i + 1) & mask
			if _, ok := c.Get(k); ok {
				h++
			} else {
				c.Set(k, k)
			}
			n++
		}
		totalHits.Add(h)
		totalOps.Add(n)
	})
	m.Stop()
	return totalHits.Load(), totalOps.Load()
}

// BenchmarkCacheReads: Get only, from b.RunParallel goroutines, over 100k
// resident keys (capacity 200k, so no bounded cache needs to evict), keys
// from a Zipf or a uniform trace; with Zipf keys also from 8 goroutines
// (b.SetParallelism) on the 2 processors, where readers of the same hot
// keys contend. Every Get should hit; "hit%" shows it (ristretto may drop
// or refuse a Set, so it is loaded until every key is present or five
// rounds have passed).
func BenchmarkCacheReads(b *testing.B) {
	sh := shape()
	for _, dist := range []string{"zipf", "uniform"} {
		trace := cachedTrace(dist, sh.readKeys, traceLen, 5)
		goroutines := []int{2}
		if dist == "zipf" {
			goroutines = []int{2, 8}
		}
		for _, g := range goroutines {
			b.Run(fmt.Sprintf("dist=%s/goroutines=%d", dist, g), func(b *testing.B) {
				for _, im := range cacheImpls {
					var c ttlCache
					rng := rand.New(rand.NewPCG(6, 7))
					b.Run("impl="+im.name, func(b *testing.B) {
						if c == nil {
							c = mustCache(b, im, cacheConfig{capacity: 2 * sh.readKeys, ttl: longTTL, keys: sh.readKeys})
							loadAll(c, sh.readKeys)
							runtime.GC()
						}
						b.ReportAllocs()
						b.SetParallelism(max(g/runtime.GOMAXPROCS(0), 1))
						hits, ops := runReads(b, c, trace, rng)
						if ops > 0 {
							b.ReportMetric(100*float64(hits)/float64(ops), "hit%")
						}
					})
					closeCache(c)
				}
			})
		}
	}
}

// loadAll sets keys 0..n-1 and returns how many are present afterwards,
// setting missing ones again (up to five rounds) for caches that drop
// writes.
func loadAll(c ttlCache, n int) int {
	for k := range uint64(n) {
		c.Set(k, k)
	}
	c.Sync()
	present := 0
	for range 5 {
		present = 0
		for k := range uint64(n) {
			if _, ok := c.Get(k); ok {
				present++
			} else {
				c.Set(k, k)
			}
		}
		c.Sync()
		if present == n {
			break
		}
	}
	return present
}

func runReads(b *testing.B, c ttlCache, trace []uint64, rng *rand.Rand) (hits, ops uint64) {
	starts := parallelStarts(rng, len(trace))
	mask := uint64(len(trace) - 1)
	var id, totalHits, totalOps atomic.Uint64
	m := harness.Start(b, c.Sync)
	b.RunParallel(func(pb *testing.PB) {
		i := starts[(id.Add(1)-1)%uint64(len(starts))]
		var h, n uint64
		for pb.Next() {
			if _, ok := c.Get(trace[i]); ok {
				h++
			}
			i = (i + 1) & mask
			n++
		}
		totalHits.Add(h)
		totalOps.Add(n)
	})
	m.Stop()
	return totalHits.Load(), totalOps.Load()
}
