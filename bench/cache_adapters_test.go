package bench

import (
	"container/list"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/Yiling-J/theine-go"
	"github.com/dgraph-io/ristretto/v2"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/jellydator/ttlcache/v3"
	"github.com/maypok86/otter/v2"
	gocache "github.com/patrickmn/go-cache"
	"github.com/zeromicro/go-zero/core/collection"
	"github.com/zeromicro/go-zero/core/logx"

	"github.com/ttlkit/ttlkit/cache"
)

// ttlCache is the API every cache is driven through. Keys and values are
// uint64 in all cache benchmarks; string-keyed caches map key k to a
// pre-built name (see keyName), so no benchmark pays for formatting.
type ttlCache interface {
	// Get returns the value for k and whether it was a live hit.
	Get(k uint64) (uint64, bool)
	// Set stores v for k with the cache's default TTL.
	Set(k, v uint64)
	// SetTTL stores v for k with its own ttl. Implementations without a
	// per-entry TTL (cacheImpl.perEntryTTL false) use the default TTL.
	SetTTL(k, v uint64, ttl time.Duration)
	// Resident returns the number of entries the cache holds, counting
	// expired entries it has not reclaimed yet; ok is false if the
	// implementation cannot tell.
	Resident() (n int, ok bool)
	// Sync returns once the writes this goroutine made before it have been
	// applied (for caches that apply writes on another goroutine).
	Sync()
	// Close stops the cache's goroutines and drops its entries.
	Close()
}

// cacheConfig is what every implementation is built from.
type cacheConfig struct {
	capacity int           // maximum entries; every benchmark sets one
	ttl      time.Duration // default time to live
	keys     int           // keys are in [0, keys): sizes the name table
}

// cacheImpl names one implementation and builds it.
type cacheImpl struct {
	name        string
	bounded     bool // honours cacheConfig.capacity
	perEntryTTL bool // SetTTL really sets a per-entry TTL
	new         func(cfg cacheConfig) (ttlCache, error)
}

// cacheImpls lists the implementations in the order they are reported.
var cacheImpls = []cacheImpl{
	{name: "ttlkit", bounded: true, perEntryTTL: true, new: newTTLKitCache},
	{name: "otter", bounded: true, perEntryTTL: true, new: newOtterCache},
	{name: "theine", bounded: true, perEntryTTL: true, new: newTheineCache},
	{name: "ristretto", bounded: true, perEntryTTL: true, new: newRistrettoCache},
	{name: "ttlcache", bounded: true, perEntryTTL: true, new: newTTLCacheCache},
	{name: "lru", bounded: true, perEntryTTL: false, new: newLRUCache},
	{name: "gozero", bounded: true, perEntryTTL: true, new: newGoZeroCache},
	{name: "gocache", bounded: false, perEntryTTL: true, new: newGoCache},
}

func init() {
	// go-zero's Cache starts a statistics goroutine per cache that logs
	// through logx every minute; keep it out of the benchmark output.
	logx.DisableStat()
}

// ttlkit: our cache.Cache.

type ttlkitCache struct{ c *cache.Cache[uint64, uint64] }

func newTTLKitCache(cfg cacheConfig) (ttlCache, error) {
	c, err := cache.New(cache.Options[uint64, uint64]{TTL: cfg.ttl, Limit: cfg.capacity})
	if err != nil {
		return nil, err
	}
	return ttlkitCache{c}, nil
}

func (a ttlkitCache) Get(k uint64) (uint64, bool) { return a.c.Get(k) }
func (a ttlkitCache) Set(k, v uint64)             { a.c.Set(k, v) }
func (a ttlkitCache) SetTTL(k, v uint64, ttl time.Duration) {
	a.c.SetWithExpire(k, v, ttl)
}
func (a ttlkitCache) Resident() (int, bool) { return a.c.Len(), true }

// Sync does nothing: our writes are applied before they return; only the
// wheel's Schedule commands are queued, and nothing exported waits for them.
func (a ttlkitCache) Sync()  {}
func (a ttlkitCache) Close() { _ = a.c.Close() }

// otter: maypok86/otter v2, expire-after-write, MaximumSize.

type otterCache struct{ c *otter.Cache[uint64, uint64] }

func newOtterCache(cfg cacheConfig) (ttlCache, error) {
	c, err := otter.New(&otter.Options[uint64, uint64]{
		MaximumSize:      cfg.capacity,
		ExpiryCalculator: otter.ExpiryWriting[uint64, uint64](cfg.ttl),
	})
	if err != nil {
		return nil, err
	}
	return otterCache{c}, nil
}

func (a otterCache) Get(k uint64) (uint64, bool) { return a.c.GetIfPresent(k) }
func (a otterCache) Set(k, v uint64)             { a.c.Set(k, v) }

// SetTTL is a Set followed by SetExpiresAfter: otter has no single call.
func (a otterCache) SetTTL(k, v uint64, ttl time.Duration) {
	a.c.Set(k, v)
	a.c.SetExpiresAfter(k, ttl)
}
func (a otterCache) Resident() (int, bool) { return a.c.EstimatedSize(), true }

// Sync runs otter's pending maintenance (buffered writes, evictions).
func (a otterCache) Sync() { a.c.CleanUp() }
func (a otterCache) Close() {
	a.c.InvalidateAll()
	a.c.StopAllGoroutines()
}

// theine: Yiling-J/theine-go, cost 1 per entry.

type theineCache struct {
	c   *theine.Cache[uint64, uint64]
	ttl time.Duration
}

func newTheineCache(cfg cacheConfig) (ttlCache, error) {
	c, err := theine.NewBuilder[uint64, uint64](int64(cfg.capacity)).Build()
	if err != nil {
		return nil, err
	}
	return theineCache{c, cfg.ttl}, nil
}

func (a theineCache) Get(k uint64) (uint64, bool) { return a.c.Get(k) }
func (a theineCache) Set(k, v uint64)             { a.c.SetWithTTL(k, v, 1, a.ttl) }
func (a theineCache) SetTTL(k, v uint64, ttl time.Duration) {
	a.c.SetWithTTL(k, v, 1, ttl)
}
func (a theineCache) Resident() (int, bool) { return a.c.Len(), true }

// Sync waits until theine's maintenance goroutine has taken in the write
// buffer.
func (a theineCache) Sync()  { a.c.Wait() }
func (a theineCache) Close() { a.c.Close() }

// ristretto: dgraph-io/ristretto v2, cost 1 per entry (internal cost
// ignored), 10 counters per entry as its documentation recommends. Sets are
// applied asynchronously and may be dropped under contention or rejected
// by the admission policy; Get checks the expiration time.

type ristrettoCache struct {
	c   *ristretto.Cache[uint64, uint64]
	ttl time.Duration
}

func newRistrettoCache(cfg cacheConfig) (ttlCache, error) {
	c, err := ristretto.NewCache(&ristretto.Config[uint64, uint64]{
		NumCounters:        int64(cfg.capacity) * 10,
		MaxCost:            int64(cfg.capacity),
		BufferItems:        64,
		IgnoreInternalCost: true,
	})
	if err != nil {
		return nil, err
	}
	return ristrettoCache{c, cfg.ttl}, nil
}

func (a ristrettoCache) Get(k uint64) (uint64, bool) { return a.c.Get(k) }
func (a ristrettoCache) Set(k, v uint64)             { a.c.SetWithTTL(k, v, 1, a.ttl) }
func (a ristrettoCache) SetTTL(k, v uint64, ttl time.Duration) {
	a.c.SetWithTTL(k, v, 1, ttl)
}
func (a ristrettoCache) Resident() (int, bool) { return 0, false }

// Sync waits until ristretto's buffered Sets have been applied.
func (a ristrettoCache) Sync()  { a.c.Wait() }
func (a ristrettoCache) Close() { a.c.Close() }

// ttlcache: jellydator/ttlcache v3 with WithCapacity and touch-on-hit
// disabled, so that its TTL counts from the last write like every other
// cache here (by default its Get extends the TTL). Start runs its expiry
// goroutine.

type ttlcacheCache struct {
	c *ttlcache.Cache[uint64, uint64]
}

func newTTLCacheCache(cfg cacheConfig) (ttlCache, error) {
	c := ttlcache.New(
		ttlcache.WithTTL[uint64, uint64](cfg.ttl),
		ttlcache.WithCapacity[uint64, uint64](uint64(cfg.capacity)),
		ttlcache.WithDisableTouchOnHit[uint64, uint64](),
	)
	go c.Start()
	return ttlcacheCache{c}, nil
}

func (a ttlcacheCache) Get(k uint64) (uint64, bool) {
	if it := a.c.Get(k); it != nil {
		return it.Value(), true
	}
	return 0, false
}
func (a ttlcacheCache) Set(k, v uint64) { a.c.Set(k, v, ttlcache.DefaultTTL) }
func (a ttlcacheCache) SetTTL(k, v uint64, ttl time.Duration) {
	a.c.Set(k, v, ttl)
}

// Resident reads the length of ttlcache's item map under its lock: its
// Len counts only unexpired items.
func (a ttlcacheCache) Resident() (int, bool) {
	mu := fieldAt[sync.RWMutex](a.c, "items", "mu")
	values := fieldAt[map[uint64]*list.Element](a.c, "items", "values")
	mu.RLock()
	n := len(*values)
	mu.RUnlock()
	return n, true
}
func (a ttlcacheCache) Sync() {}
func (a ttlcacheCache) Close() {
	a.c.Stop()
	a.c.DeleteAll()
}

// lru: hashicorp/golang-lru v2 expirable.LRU. It has one TTL per cache (no
// per-entry TTL) and a cleanup goroutine that v2.0.7 never stops; Close
// ends it through the unexported done channel, or every LRU built here
// would stay reachable, entries included, for the rest of the process.

type lruCache struct {
	c *expirable.LRU[uint64, uint64]
}

func newLRUCache(cfg cacheConfig) (ttlCache, error) {
	return lruCache{expirable.NewLRU[uint64, uint64](cfg.capacity, nil, cfg.ttl)}, nil
}

func (a lruCache) Get(k uint64) (uint64, bool)         { return a.c.Get(k) }
func (a lruCache) Set(k, v uint64)                     { a.c.Add(k, v) }
func (a lruCache) SetTTL(k, v uint64, _ time.Duration) { a.c.Add(k, v) }
func (a lruCache) Resident() (int, bool)               { return a.c.Len(), true }
func (a lruCache) Sync()                               {}
func (a lruCache) Close() {
	a.c.Purge()
	close(*fieldAt[chan struct{}](a.c, "done"))
}

// gozero: go-zero v1.10.3 collection.Cache with WithLimit. Keys are
// strings and values are boxed into any: that is its API. Set of a new key
// is a channel rendezvous with the wheel goroutine (SetTimer), of an
// existing key a MoveTimer; an eviction sends a RemoveTimer while holding
// the cache lock. Its TTL has ±5% jitter that cannot be turned off. Get
// does not check the deadline: entries live until the wheel (1 s × 300
// slots) deletes them.

type gozeroCache struct {
	c     *collection.Cache
	names keyNames
}

func newGoZeroCache(cfg cacheConfig) (ttlCache, error) {
	c, err := collection.NewCache(cfg.ttl, collection.WithLimit(cfg.capacity))
	if err != nil {
		return nil, err
	}
	return &gozeroCache{c: c, names: namesFor(cfg.keys)}, nil
}

func (a *gozeroCache) Get(k uint64) (uint64, bool) {
	v, ok := a.c.Get(a.names.name(k))
	if !ok {
		return 0, false
	}
	return v.(uint64), true
}
func (a *gozeroCache) Set(k, v uint64) { a.c.Set(a.names.name(k), v) }
func (a *gozeroCache) SetTTL(k, v uint64, ttl time.Duration) {
	a.c.SetWithExpire(a.names.name(k), v, ttl)
}

// Resident reads the length of go-zero's data map under its lock (its size
// method is unexported).
func (a *gozeroCache) Resident() (int, bool) {
	mu := fieldAt[sync.Mutex](a.c, "lock")
	data := fieldAt[map[string]any](a.c, "data")
	mu.Lock()
	n := len(*data)
	mu.Unlock()
	return n, true
}

// Sync sends a RemoveTimer of a key never used: the wheel goroutine takes
// commands one at a time, so once it has received this one every earlier
// SetTimer and MoveTimer has been applied.
func (a *gozeroCache) Sync() {
	_ = (*fieldAt[*collection.TimingWheel](a.c, "timingWheel")).RemoveTimer(gozeroSyncKey)
}

func (a *gozeroCache) Close() { releaseGoZeroCache(a.c) }

// gozeroSyncKey is never used as a cache key (keys are decimal numbers).
const gozeroSyncKey = "\x00bench-cache-sync"

// releaseGoZeroCache frees what a go-zero Cache holds. go-zero's Cache has
// no Close, and its statistics goroutine references the cache forever, so
// without this every go-zero cache built by a benchmark, its wheel and all
// its entries, would stay live for the rest of the process and tax every
// later benchmark's garbage collections. It stops the wheel (its goroutine
// and ticker exit), puts a stopped empty wheel in its place and empties the
// data map and the LRU under the cache lock. The statistics goroutine
// itself cannot be stopped; it keeps only the now empty Cache.
//
// A Del still running on one of go-zero's expiry goroutines may read the
// timingWheel field while it is replaced; the benchmarks release a cache
// only after its expiry traffic is over.
func releaseGoZeroCache(c *collection.Cache) {
	twField := fieldAt[*collection.TimingWheel](c, "timingWheel")
	(*twField).Stop()
	stub, err := collection.NewTimingWheel(time.Second, 1, func(any, any) {})
	if err != nil {
		panic(err)
	}
	stub.Stop()

	mu := fieldAt[sync.Mutex](c, "lock")
	mu.Lock()
	defer mu.Unlock()
	*twField = stub
	*fieldAt[map[string]any](c, "data") = map[string]any{}
	// lruCache is an unexported interface; with WithLimit it holds a
	// *keyLru, whose list and index are reset.
	lf := reflect.ValueOf(c).Elem().FieldByName("lruCache")
	l := reflect.NewAt(lf.Type(), unsafe.Pointer(lf.UnsafeAddr())).Elem().Elem()
	if l.Kind() == reflect.Pointer && !l.IsNil() {
		*fieldOf[*list.List](l.Elem(), "evicts") = list.New()
		*fieldOf[map[string]*list.Element](l.Elem(), "elements") = map[string]*list.Element{}
	}
}

// gocache: patrickmn/go-cache, unbounded (it has no capacity), string keys
// and boxed values. Its janitor deletes expired items every cleanup
// interval by scanning all items under the write lock; the interval here is
// the default Resolution of our cache for the same TTL (TTL/100 clamped to
// [10ms, 1s]), so both reclaim on the same schedule.

type goCache struct {
	c     *gocache.Cache
	names keyNames
}

func newGoCache(cfg cacheConfig) (ttlCache, error) {
	cleanup := min(max(cfg.ttl/100, 10*time.Millisecond), time.Second)
	return &goCache{c: gocache.New(cfg.ttl, cleanup), names: namesFor(cfg.keys)}, nil
}

func (a *goCache) Get(k uint64) (uint64, bool) {
	v, ok := a.c.Get(a.names.name(k))
	if !ok {
		return 0, false
	}
	return v.(uint64), true
}
func (a *goCache) Set(k, v uint64) { a.c.Set(a.names.name(k), v, gocache.DefaultExpiration) }
func (a *goCache) SetTTL(k, v uint64, ttl time.Duration) {
	a.c.Set(a.names.name(k), v, ttl)
}
func (a *goCache) Resident() (int, bool) { return a.c.ItemCount(), true }
func (a *goCache) Sync()                 {}

// Close drops the items; the janitor goroutine stops when the Cache becomes
// unreachable (go-cache's finalizer).
func (a *goCache) Close() { a.c.Flush() }

// keyNames maps key k to the decimal string of k without allocating: all
// names are substrings of one string, and the table of offsets holds no
// pointers, so it costs the garbage collector nothing to keep.
type keyNames struct {
	all  string
	ends []uint32 // name k is all[ends[k-1]:ends[k]] (all[:ends[0]] for k = 0)
}

func makeKeyNames(n int) keyNames {
	var buf []byte
	ends := make([]uint32, n)
	for i := range n {
		buf = strconv.AppendUint(buf, uint64(i), 10)
		ends[i] = uint32(len(buf))
	}
	return keyNames{all: string(buf), ends: ends}
}

// name returns the decimal string of k: a substring of the table for keys
// inside it, a new string otherwise.
func (t keyNames) name(k uint64) string {
	if k >= uint64(len(t.ends)) {
		return strconv.FormatUint(k, 10)
	}
	start := uint32(0)
	if k > 0 {
		start = t.ends[k-1]
	}
	return t.all[start:t.ends[k]]
}

// nameTable is the largest table built so far, shared by every string-keyed
// cache; a table for n keys serves any smaller key space.
var nameTable keyNames

func namesFor(n int) keyNames {
	if len(nameTable.ends) < n {
		nameTable = makeKeyNames(n)
	}
	return nameTable
}

// fieldAt returns a pointer to the unexported field reached from the struct
// *p through path (a field name, then a field of that field, ...). It
// panics if a field is missing or the last one is not a T, so that a peer
// whose layout changed fails loudly instead of corrupting memory. It is
// used only to release or inspect peers that offer no API for it.
func fieldAt[T, S any](p *S, path ...string) *T {
	v := reflect.ValueOf(p).Elem()
	for _, name := range path[:len(path)-1] {
		v = v.FieldByName(name)
		if !v.IsValid() {
			panic(fmt.Sprintf("bench: %T has no field %q", p, name))
		}
	}
	return fieldOf[T](v, path[len(path)-1])
}

// fieldOf returns a pointer to the field name of the addressable struct
// value v, which must be a T.
func fieldOf[T any](v reflect.Value, name string) *T {
	f := v.FieldByName(name)
	if !f.IsValid() {
		panic(fmt.Sprintf("bench: %s has no field %q", v.Type(), name))
	}
	if f.Type() != reflect.TypeFor[T]() {
		panic(fmt.Sprintf("bench: field %s.%s is %s, want %s", v.Type(), name, f.Type(), reflect.TypeFor[T]()))
	}
	return (*T)(unsafe.Pointer(f.UnsafeAddr()))
}
