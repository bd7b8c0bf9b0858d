package bench

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/Yiling-J/theine-go"
	"github.com/dgraph-io/ristretto/v2"
	arc "github.com/hashicorp/golang-lru/arc/v2"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/maypok86/otter/v2"
	"github.com/zeromicro/go-zero/core/collection"

	"github.com/ttlkit/ttlkit/bench/internal/refcache"
	"github.com/ttlkit/ttlkit/cache"
)

// hitCache is what the hit-ratio replay drives: a read-through cache of
// uint64 keys (the value stored is the key) where nothing expires.
//
// Every cache is held to its capacity at every access: Set returns only
// once the cache has applied the write and any eviction it causes, so the
// next Get sees a cache of at most capacity entries. For caches that apply
// writes or evictions on another goroutine, Set drains them (see each
// adapter); the replay checks Len against the capacity after every Set.
type hitCache interface {
	// Get reports whether k is held (a hit), as the cache's own read does,
	// with whatever bookkeeping that read does.
	Get(k uint64) bool
	// Set stores k after a miss, and returns once the cache holds at most
	// its capacity again.
	Set(k uint64)
	// Len returns the number of entries held now.
	Len() int
	// Close releases the cache's goroutines and entries.
	Close()
}

// hitImpl names one cache of the hit-ratio replay and builds it for a
// capacity. trace is the whole sequence the replay will make (only the
// offline optimum reads it).
type hitImpl struct {
	name string
	new  func(capacity int, trace []uint64) hitCache
	// slack is how many entries above its capacity the cache may hold
	// after a Set: 0 for every cache that keeps its bound exactly. A cache
	// that cannot be held to its capacity through its API (or documents a
	// small constant it may exceed it by between calls) gets that
	// constant: the replay then counts the Sets after which it held more
	// than its capacity (over-cap) and fails only beyond capacity + slack.
	slack int
}

// hitImpls lists the caches of the hit-ratio replay in report order; the
// last two are reference points, not peers.
var hitImpls = []hitImpl{
	{name: "ttlkit", new: newTTLKitHit},
	{name: "otter", new: newOtterHit},
	{name: "theine", new: newTheineHit},
	{name: "ristretto", new: newRistrettoHit},
	{name: "lru", new: newGolangLRUHit},
	{name: "arc", new: newARCHit, slack: 1},
	{name: "2q", new: newTwoQueueHit},
	{name: "gozero", new: newGoZeroHit},
	{name: "exact-lru", new: newExactLRUHit},
	{name: "belady", new: newBeladyHit},
}

// hitBaselines are the reference points among hitImpls.
var hitBaselines = []string{"exact-lru", "belady"}

// ttlkit: cache.Cache with Limit and a TTL that never ends. Writes and
// evictions are applied before Set returns.
type ttlkitHit struct{ c *cache.Cache[uint64, uint64] }

func newTTLKitHit(capacity int, _ []uint64) hitCache {
	c, err := cache.New(cache.Options[uint64, uint64]{TTL: math.MaxInt64, Limit: capacity})
	if err != nil {
		panic(err)
	}
	return ttlkitHit{c}
}

func (a ttlkitHit) Get(k uint64) bool { _, ok := a.c.Get(k); return ok }
func (a ttlkitHit) Set(k uint64)      { a.c.Set(k, k) }
func (a ttlkitHit) Len() int          { return a.c.Len() }
func (a ttlkitHit) Close()            { _ = a.c.Close() }

// otter v2: MaximumSize, no expiry. Its maintenance (draining the read and
// write buffers into the W-TinyLFU policy, evicting) is handed to
// Options.Executor, by default a new goroutine; here the executor runs it
// on the calling goroutine, so every write's eviction is done when Set
// returns (otter documents this executor for tests).
type otterHit struct{ c *otter.Cache[uint64, uint64] }

func newOtterHit(capacity int, _ []uint64) hitCache {
	c, err := otter.New(&otter.Options[uint64, uint64]{
		MaximumSize: capacity,
		Executor:    func(fn func()) { fn() },
	})
	if err != nil {
		panic(err)
	}
	return otterHit{c}
}

func (a otterHit) Get(k uint64) bool { _, ok := a.c.GetIfPresent(k); return ok }
func (a otterHit) Set(k uint64)      { a.c.Set(k, k) }
func (a otterHit) Len() int          { return a.c.EstimatedSize() }
func (a otterHit) Close() {
	a.c.InvalidateAll()
	a.c.StopAllGoroutines()
}

// theine: NewBuilder(capacity), cost 1. Set puts the entry in its shard
// map at once and sends the policy update on a channel to the maintenance
// goroutine, which evicts; Set then calls Wait, which returns once that
// goroutine has applied everything sent before it. Reads are buffered and
// applied by the reader when a stripe fills, as in normal use.
type theineHit struct{ c *theine.Cache[uint64, uint64] }

func newTheineHit(capacity int, _ []uint64) hitCache {
	c, err := theine.NewBuilder[uint64, uint64](int64(capacity)).Build()
	if err != nil {
		panic(err)
	}
	return theineHit{c}
}

func (a theineHit) Get(k uint64) bool { _, ok := a.c.Get(k); return ok }
func (a theineHit) Set(k uint64) {
	a.c.Set(k, k, 1)
	a.c.Wait()
}
func (a theineHit) Len() int { return a.c.Len() }
func (a theineHit) Close()   { a.c.Close() }

// ristretto v2: MaxCost = capacity, cost 1, 10 counters per entry as its
// documentation recommends, internal cost ignored. Set only queues the item
// for the policy goroutine, which admits or rejects it and evicts; Set then
// calls Wait, which returns once the queue before it is applied, so no Set
// is dropped and the store never exceeds MaxCost. Reads reach the frequency
// sketch through lossy buffers, by design. Ristretto cannot count its
// entries: Len is its metrics' keys added minus keys evicted.
type ristrettoHit struct {
	c *ristretto.Cache[uint64, uint64]
}

func newRistrettoHit(capacity int, _ []uint64) hitCache {
	c, err := ristretto.NewCache(&ristretto.Config[uint64, uint64]{
		NumCounters:        int64(capacity) * 10,
		MaxCost:            int64(capacity),
		BufferItems:        64,
		IgnoreInternalCost: true,
		Metrics:            true,
	})
	if err != nil {
		panic(err)
	}
	return ristrettoHit{c}
}

func (a ristrettoHit) Get(k uint64) bool { _, ok := a.c.Get(k); return ok }
func (a ristrettoHit) Set(k uint64) {
	a.c.Set(k, k, 1)
	a.c.Wait()
}
func (a ristrettoHit) Len() int {
	return int(a.c.Metrics.KeysAdded() - a.c.Metrics.KeysEvicted())
}
func (a ristrettoHit) Close() { a.c.Close() }

// golang-lru v2: LRU, ARC and 2Q, all synchronous under one lock.

type golangLRUHit struct{ c *lru.Cache[uint64, uint64] }

func newGolangLRUHit(capacity int, _ []uint64) hitCache {
	c, err := lru.New[uint64, uint64](capacity)
	if err != nil {
		panic(err)
	}
	return golangLRUHit{c}
}

func (a golangLRUHit) Get(k uint64) bool { _, ok := a.c.Get(k); return ok }
func (a golangLRUHit) Set(k uint64)      { a.c.Add(k, k) }
func (a golangLRUHit) Len() int          { return a.c.Len() }
func (a golangLRUHit) Close()            { a.c.Purge() }

// ARC is synchronous too, but v2.0.7 at times holds one entry more than
// its size (t1 + t2 = size + 1 after some sequences of ghost hits; the
// replays of web12 and sprite at capacity 16 meet it): it has slack 1, and
// its rows show how often (over-cap) and how many it held (max-held).
type arcHit struct{ c *arc.ARCCache[uint64, uint64] }

func newARCHit(capacity int, _ []uint64) hitCache {
	c, err := arc.NewARC[uint64, uint64](capacity)
	if err != nil {
		panic(err)
	}
	return arcHit{c}
}

func (a arcHit) Get(k uint64) bool { _, ok := a.c.Get(k); return ok }
func (a arcHit) Set(k uint64)      { a.c.Add(k, k) }
func (a arcHit) Len() int          { return a.c.Len() }
func (a arcHit) Close()            { a.c.Purge() }

type twoQueueHit struct {
	c *lru.TwoQueueCache[uint64, uint64]
}

func newTwoQueueHit(capacity int, _ []uint64) hitCache {
	c, err := lru.New2Q[uint64, uint64](capacity)
	if err != nil {
		panic(err)
	}
	return twoQueueHit{c}
}

func (a twoQueueHit) Get(k uint64) bool { _, ok := a.c.Get(k); return ok }
func (a twoQueueHit) Set(k uint64)      { a.c.Add(k, k) }
func (a twoQueueHit) Len() int          { return a.c.Len() }
func (a twoQueueHit) Close()            { a.c.Purge() }

// gozero: collection.Cache with WithLimit, an exact LRU of string keys
// evicted synchronously under its lock; a TTL of a day (nothing expires
// during a replay). Keys are the decimal names of the trace's keys,
// formatted per call (trace keys are sparse: no name table fits them).
type gozeroHit struct {
	c    *collection.Cache
	mu   *sync.Mutex
	data *map[string]any
}

func newGoZeroHit(capacity int, _ []uint64) hitCache {
	c, err := collection.NewCache(24*time.Hour, collection.WithLimit(capacity))
	if err != nil {
		panic(err)
	}
	return gozeroHit{c: c, mu: fieldAt[sync.Mutex](c, "lock"), data: fieldAt[map[string]any](c, "data")}
}

func (a gozeroHit) Get(k uint64) bool {
	_, ok := a.c.Get(strconv.FormatUint(k, 10))
	return ok
}
func (a gozeroHit) Set(k uint64) { a.c.Set(strconv.FormatUint(k, 10), k) }

// Len reads the length of go-zero's data map under its lock (its size
// method is unexported).
func (a gozeroHit) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(*a.data)
}
func (a gozeroHit) Close() { releaseGoZeroCache(a.c) }

// exact-lru and belady: the reference points of internal/refcache.

type refHit struct {
	c interface {
		Get(uint64) bool
		Set(uint64)
		Len() int
	}
}

func newExactLRUHit(capacity int, _ []uint64) hitCache {
	return refHit{refcache.NewLRU(capacity)}
}

func newBeladyHit(capacity int, trace []uint64) hitCache {
	return refHit{refcache.NewBelady(trace, capacity)}
}

func (a refHit) Get(k uint64) bool { return a.c.Get(k) }
func (a refHit) Set(k uint64)      { a.c.Set(k) }
func (a refHit) Len() int          { return a.c.Len() }
func (a refHit) Close()            {}
