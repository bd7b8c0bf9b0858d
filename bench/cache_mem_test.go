package bench

import (
	"math"
	"testing"
	"time"

	"github.com/Yiling-J/theine-go"
	"github.com/dgraph-io/ristretto/v2"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/jellydator/ttlcache/v3"
	"github.com/maypok86/otter/v2"
	gocache "github.com/patrickmn/go-cache"
	"github.com/zeromicro/go-zero/core/collection"

	"github.com/ttlkit/ttlkit/bench/internal/harness"
	"github.com/ttlkit/ttlkit/cache"
)

// Memory per entry (issue 27, item 4): every cache built with the same
// TTL (an hour, nothing expires), for two key/value types, with a capacity
// (bounded) or without one (unbounded, for the caches that allow it).

// memCache is the part of a cache the memory benchmark uses.
type memCache[K, V any] struct {
	set   func(K, V)
	has   func(K) bool
	sync  func() // applies buffered writes
	close func()
}

// memImpl builds one cache for either key/value type; capacity 0 asks
// for an unbounded cache, which only the implementations with unbounded
// set can build. go-cache has no capacity (bounded false): it is measured
// unbounded only.
type memImpl struct {
	name      string
	bounded   bool
	unbounded bool
	u64       func(capacity int) memCache[uint64, uint64]
	str       func(capacity int) memCache[string, []byte]
}

var memImpls = []memImpl{
	{"ttlkit", true, true, ttlkitMem[uint64, uint64], ttlkitMem[string, []byte]},
	{"otter", true, true, otterMem[uint64, uint64], otterMem[string, []byte]},
	{"theine", true, false, theineMem[uint64, uint64], theineMem[string, []byte]},
	{"ristretto", true, false, ristrettoMem[uint64, uint64], ristrettoMem[string, []byte]},
	{"ttlcache", true, true, ttlcacheMem[uint64, uint64], ttlcacheMem[string, []byte]},
	{"lru", true, true, lruMem[uint64, uint64], lruMem[string, []byte]},
	{"gozero", true, true, gozeroU64Mem, gozeroMem[[]byte]},
	{"gocache", false, true, gocacheU64Mem, gocacheMem[[]byte]},
}

func ttlkitMem[K comparable, V any](capacity int) memCache[K, V] {
	c, err := cache.New(cache.Options[K, V]{TTL: longTTL, Limit: capacity})
	if err != nil {
		panic(err)
	}
	return memCache[K, V]{
		set:   func(k K, v V) { c.Set(k, v) },
		has:   func(k K) bool { _, ok := c.Get(k); return ok },
		sync:  func() {},
		close: func() { _ = c.Close() },
	}
}

// otter with expire-after-write, as in the other cache benchmarks: the
// expiry structures are part of what a TTL cache costs.
func otterMem[K comparable, V any](capacity int) memCache[K, V] {
	c, err := otter.New(&otter.Options[K, V]{
		MaximumSize:      capacity, // 0: unbounded
		ExpiryCalculator: otter.ExpiryWriting[K, V](longTTL),
	})
	if err != nil {
		panic(err)
	}
	return memCache[K, V]{
		set:  func(k K, v V) { c.Set(k, v) },
		has:  func(k K) bool { _, ok := c.GetIfPresent(k); return ok },
		sync: c.CleanUp,
		close: func() {
			c.InvalidateAll()
			c.StopAllGoroutines()
		},
	}
}

func theineMem[K comparable, V any](capacity int) memCache[K, V] {
	c, err := theine.NewBuilder[K, V](int64(capacity)).Build()
	if err != nil {
		panic(err)
	}
	return memCache[K, V]{
		set:   func(k K, v V) { c.SetWithTTL(k, v, 1, longTTL) },
		has:   func(k K) bool { _, ok := c.Get(k); return ok },
		sync:  c.Wait,
		close: c.Close,
	}
}

func ristrettoMem[K ristretto.Key, V any](capacity int) memCache[K, V] {
	c, err := ristretto.NewCache(&ristretto.Config[K, V]{
		NumCounters:        int64(capacity) * 10,
		MaxCost:            int64(capacity),
		BufferItems:        64,
		IgnoreInternalCost: true,
	})
	if err != nil {
		panic(err)
	}
	return memCache[K, V]{
		// Wait after each Set: ristretto drops Sets its buffer cannot take.
		set:   func(k K, v V) { c.SetWithTTL(k, v, 1, longTTL); c.Wait() },
		has:   func(k K) bool { _, ok := c.Get(k); return ok },
		sync:  c.Wait,
		close: c.Close,
	}
}

func ttlcacheMem[K comparable, V any](capacity int) memCache[K, V] {
	c := ttlcache.New(
		ttlcache.WithTTL[K, V](longTTL),
		ttlcache.WithCapacity[K, V](uint64(capacity)), // 0: unbounded
		ttlcache.WithDisableTouchOnHit[K, V](),
	)
	go c.Start()
	return memCache[K, V]{
		set:  func(k K, v V) { c.Set(k, v, ttlcache.DefaultTTL) },
		has:  func(k K) bool { return c.Get(k) != nil },
		sync: func() {},
		close: func() {
			c.Stop()
			c.DeleteAll()
		},
	}
}

func lruMem[K comparable, V any](capacity int) memCache[K, V] {
	c := expirable.NewLRU[K, V](capacity, nil, longTTL) // 0: unbounded
	return memCache[K, V]{
		set:  func(k K, v V) { c.Add(k, v) },
		has:  func(k K) bool { _, ok := c.Get(k); return ok },
		sync: func() {},
		close: func() {
			c.Purge()
			close(*fieldAt[chan struct{}](c, "done"))
		},
	}
}

func gozeroMem[V any](capacity int) memCache[string, V] {
	var opts []collection.CacheOption
	if capacity > 0 {
		opts = append(opts, collection.WithLimit(capacity))
	}
	c, err := collection.NewCache(longTTL, opts...)
	if err != nil {
		panic(err)
	}
	return memCache[string, V]{
		set:   func(k string, v V) { c.Set(k, v) },
		has:   func(k string) bool { _, ok := c.Get(k); return ok },
		sync:  func() {},
		close: func() { releaseGoZeroCache(c) },
	}
}

func gocacheMem[V any](capacity int) memCache[string, V] {
	// The janitor interval is our default Resolution for the TTL, as in
	// the other cache benchmarks.
	c := gocache.New(longTTL, min(max(longTTL/100, 10*time.Millisecond), time.Second))
	return memCache[string, V]{
		set:   func(k string, v V) { c.Set(k, v, gocache.DefaultExpiration) },
		has:   func(k string) bool { _, ok := c.Get(k); return ok },
		sync:  func() {},
		close: c.Flush,
	}
}

// The string-keyed caches take uint64 keys as pre-built decimal names.
func gozeroU64Mem(capacity int) memCache[uint64, uint64] {
	return byName(gozeroMem[uint64](capacity))
}

func gocacheU64Mem(capacity int) memCache[uint64, uint64] {
	return byName(gocacheMem[uint64](capacity))
}

func byName(c memCache[string, uint64]) memCache[uint64, uint64] {
	return memCache[uint64, uint64]{
		set:   func(k, v uint64) { c.set(nameTable.name(k), v) },
		has:   func(k uint64) bool { return c.has(nameTable.name(k)) },
		sync:  c.sync,
		close: c.close,
	}
}

// memSizes are the entry counts measured; B/entry is their mean, so that
// no one point of a hash table's growth decides the figure.
func memSizes() []int {
	if testing.Short() {
		return []int{4_700, 7_000, 10_500, 16_000}
	}
	return []int{47_000, 70_000, 105_000, 160_000}
}

// memKeys holds the pre-built keys and values of the string benchmark:
// names are substrings of one string, values 16-byte slices of one array,
// so their bytes are never part of a cache's growth.
type memKeys struct {
	names keyNames
	vals  []byte
}

func newMemKeys(n int) memKeys     { return memKeys{namesFor(n), make([]byte, 16*n)} }
func (m memKeys) key(i int) string { return m.names.name(uint64(i)) }
func (m memKeys) val(i int) []byte { return m.vals[16*i : 16*i+16 : 16*i+16] }

func u64Key(i int) uint64 { return uint64(i) }
func u64Val(i int) uint64 { return uint64(i) }

// meanMinMax returns the mean, the least and the greatest of xs.
func meanMinMax(xs []float64) (mean, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		mean += x / float64(len(xs))
		lo, hi = min(lo, x), max(hi, x)
	}
	return mean, lo, hi
}

// measureMem builds a cache of each size (capacity = size when bounded),
// fills it with size entries and returns heap growth per entry held, and
// the heap of the cache built empty (with the largest size's capacity).
func measureMem[K, V any](b *testing.B, name string, build func(capacity int) memCache[K, V], bounded bool, key func(int) K, val func(int) V) map[string]float64 {
	var per []float64
	held := 0
	for _, n := range memSizes() {
		capacity := 0
		if bounded {
			capacity = n
		}
		var c memCache[K, V]
		total := harness.HeapPerItem(1, func() {
			c = build(capacity)
			for i := range n {
				c.set(key(i), val(i))
			}
			c.sync()
		})
		held = 0
		for i := range n {
			if c.has(key(i)) {
				held++
			}
		}
		c.close()
		if held == 0 {
			b.Fatalf("%s holds no entry after %d Sets", name, n)
		}
		per = append(per, total/float64(held))
	}
	sizes := memSizes()
	capacity := 0
	if bounded {
		capacity = sizes[len(sizes)-1]
	}
	var c memCache[K, V]
	empty := float64(harness.HeapAllocGrowth(func() { c = build(capacity) })) / 1024
	c.close()
	mean, lo, hi := meanMinMax(per)
	return map[string]float64{
		"B/entry":     mean,
		"B/entry-min": lo,
		"B/entry-max": hi,
		"held%":       100 * float64(held) / float64(sizes[len(sizes)-1]),
		"empty-KiB":   empty,
	}
}

// BenchmarkCacheBytesPerEntry reports the heap a cache holds per entry:
// for each of 47k, 70k, 105k and 160k entries (a tenth of that under
// -short), HeapInuse growth across building the cache (capacity = the
// entry count when bounded) and setting that many keys with a TTL of an
// hour, after full collections, divided by the keys that hit afterwards.
// B/entry is the mean over the four sizes (B/entry-min and -max the
// extremes: a hash table's growth steps move it), held% the share of the
// last fill still held (an admission policy may refuse some), empty-KiB
// the live heap objects of the cache built empty (HeapAlloc growth, with
// the largest capacity). Nothing
// is subtracted: for kv=u64 the 16-byte key and value are in the figure;
// for kv=str (string keys, []byte values) the key and value bytes are
// pre-built outside the measurement, so the figure holds the cache's
// structure and the 16-byte string and 24-byte slice headers it stores.
// go-zero and go-cache take uint64 keys as pre-built decimal strings and
// box values into any. Unbounded rows are for the caches that can be built
// without a capacity. One round per process; reports no ns/op.
func BenchmarkCacheBytesPerEntry(b *testing.B) {
	sizes := memSizes()
	largest := sizes[len(sizes)-1]
	namesFor(largest) // built outside the measurement
	keys := newMemKeys(largest)
	for _, kv := range []string{"u64", "str"} {
		for _, bound := range []string{"limit", "none"} {
			b.Run("kv="+kv+"/bound="+bound, func(b *testing.B) {
				for _, im := range memImpls {
					if bound == "none" && !im.unbounded || bound == "limit" && !im.bounded {
						continue
					}
					b.Run("impl="+im.name, func(b *testing.B) {
						reportOneShot(b, func() map[string]float64 {
							if kv == "u64" {
								return measureMem(b, im.name, im.u64, bound == "limit", u64Key, u64Val)
							}
							return measureMem(b, im.name, im.str, bound == "limit", keys.key, keys.val)
						})
					})
				}
			})
		}
	}
}
