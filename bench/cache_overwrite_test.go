package bench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/ttlkit/ttlkit/bench/internal/harness"
)

// BenchmarkCacheOverwrite is Set of resident keys only, with string
// values: a value with pointers, which ttlkit stores in a new entry that
// takes the old one's place (a uint64 value, as in BenchmarkCacheSet, is
// overwritten in place). b.RunParallel goroutines overwrite 100k resident
// uint64 keys (8Ki under -short; capacity twice that, so nothing is
// evicted; TTL an hour) in the order of a uniform trace, each Set with one
// of 16 strings built beforehand, so the benchmark itself allocates
// nothing. Reports ns/op, cpu-ns/op (the work a cache hands to its own
// goroutines included) and allocs. ttlkit and otter, the peer it is
// measured against.
func BenchmarkCacheOverwrite(b *testing.B) {
	keys := shape().readKeys
	trace := cachedTrace("uniform", keys, traceLen, 6)
	var values [16]string
	for i := range values {
		values[i] = fmt.Sprintf("value-%02d", i)
	}
	impls := []struct {
		name string
		new  func(capacity int) memCache[uint64, string]
	}{
		{"ttlkit", ttlkitMem[uint64, string]},
		{"otter", otterMem[uint64, string]},
	}
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			c := im.new(2 * keys)
			defer func() {
				c.close()
				runtime.GC()
			}()
			for k := range keys {
				c.set(uint64(k), values[k%len(values)])
			}
			c.sync()
			runtime.GC()
			b.ReportAllocs()
			starts := parallelStarts(rand.New(rand.NewPCG(12, 13)), len(trace))
			mask := uint64(len(trace) - 1)
			var id atomic.Uint64
			m := harness.Start(b, c.sync)
			b.RunParallel(func(pb *testing.PB) {
				i := starts[(id.Add(1)-1)%uint64(len(starts))]
				for pb.Next() {
					k := trace[i]
					i = (i + 1) & mask
					c.set(k, values[i%uint64(len(values))])
				}
			})
			m.Stop()
		})
	}
}
