package sharedcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttlkit/ttlkit/cache"
	"github.com/ttlkit/ttlkit/sharedcache/internal/opterr"
)

var (
	// ErrNotFound is returned by Get for a key with no value, and by Get
	// and Take for a key whose loader reported ErrNotFound (a not-found
	// placeholder, kept Options.NotFoundTTL). A loader returns it, or an
	// error wrapping it, to say the key has no value.
	ErrNotFound = errors.New("sharedcache: not found")
	// ErrUnavailable wraps every failure to reach the store.
	ErrUnavailable = errors.New("sharedcache: store unavailable")
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("sharedcache: closed")
	// ErrOptions wraps every invalid option, embedded.Server's included.
	ErrOptions = opterr.ErrOptions
)

// Options configures New. The zero value of each field except TTL means
// its default.
type Options[V any] struct {
	// TTL is how long a value written by Set or Take lives in the store
	// (times the jitter factor, see Jitter). Required, positive.
	TTL time.Duration

	// LocalTTL bounds how long this instance serves its local copy of a
	// value without asking the store: a copy is dropped at the value's
	// deadline in the store or LocalTTL after it was read, whichever is
	// first. It is also the staleness bound while the store cannot be
	// reached (see the package documentation). 0 means TTL; otherwise it
	// must be positive.
	LocalTTL time.Duration

	// Limit is the most local copies kept (the least recently used go
	// first). 0 means unbounded.
	Limit int

	// Jitter spreads the deadlines of values written together: each TTL is
	// multiplied by a factor drawn uniformly from [1-Jitter, 1+Jitter). It
	// must be in [0, 1); 0 means none. go-zero uses 0.05.
	Jitter float64

	// NotFoundTTL is how long the not-found placeholder written when a
	// loader returns ErrNotFound lives (jittered as TTL). 0 means one
	// minute, go-zero's default; negative means no placeholder.
	NotFoundTTL time.Duration

	// LeaseTTL is how long an instance loading a key holds its lease: if
	// it crashes, another instance may load the key LeaseTTL later. A
	// loader running longer than LeaseTTL may run on a second instance.
	// 0 means 10s; otherwise at least 100ms.
	LeaseTTL time.Duration

	// StaleIfError is how long past its deadline a local copy may still be
	// served while the store cannot be reached: a copy is fresh until the
	// deadline LocalTTL sets, and is kept StaleIfError longer; a Get or
	// Take that finds it past that deadline asks the store, and serves the
	// old copy only if the store answers with an error wrapping
	// ErrUnavailable (Stats.StaleHits counts those). A store that answers
	// replaces the copy, or drops it if the key is gone. A reconnect drops
	// every copy, stale or not, as ever. 0 means never serve a copy past
	// its deadline; otherwise it must be positive. Copies then stay in
	// memory (and count against Limit) StaleIfError longer, and a hit on a
	// local copy reads the clock once more.
	StaleIfError time.Duration

	// LeaseWait is how long Take waits for another instance's load before
	// running its own loader. 0 means LeaseTTL + 1s, so a crashed
	// leaseholder's key is loaded by a waiter once its lease expires.
	LeaseWait time.Duration

	// Marshal and Unmarshal encode values for the store. nil means
	// encoding/json. Set both or neither.
	Marshal   func(V) ([]byte, error)
	Unmarshal func([]byte) (V, error)
}

// Stats are a Cache's counters since New.
type Stats struct {
	L1Hits        uint64 // Get and Take answered from the local copy
	L2Hits        uint64 // answered from the store (a placeholder included)
	Misses        uint64 // store reads that found no value (a Take that loads reads twice: before and under its lease)
	Loads         uint64 // loader calls on this instance
	LeaseWaits    uint64 // Takes that waited for another instance's load
	Invalidations uint64 // local copies dropped for another instance's write
	StaleDrops    uint64 // local copies dropped after a lost connection
	StaleHits     uint64 // answered with a copy past its deadline, the store unreachable (Options.StaleIfError)
}

// Cache is a local cache (L1) kept coherent with a shared Store (L2) and
// with every other instance's Cache on the same store. Create it with New.
// It is safe for concurrent use.
type Cache[V any] struct {
	opts  Options[V]
	store Store
	l1    *cache.Cache[string, *entry[V]] // copies never written once stored

	// mu serializes every write of l1 that comes from the store (a read,
	// a Set, an event) with the events, so a copy older than an event
	// already seen is never stored.
	mu      sync.Mutex
	pending map[string]*pending // keys with a store read or write in flight
	epoch   uint64              // bumped by each reconnect; guarded by mu
	live    bool                // a watch runs; guarded by mu

	flights sync.Map // string -> *flight[V]: Takes in flight on this instance

	born time.Time // entry.fresh counts from here (monotonic clock)

	l2Hits, misses, loads, leaseWaits, invalidations, staleDrops atomic.Uint64
	staleHits, pastFresh                                         atomic.Uint64
	closed                                                       atomic.Bool
}

// entry is a local copy: the value or a not-found placeholder, with the
// store's revision it came from. With Options.StaleIfError, fresh is when
// it stops being served without asking the store (time since Cache.born);
// the local cache keeps it StaleIfError longer. The local cache holds
// pointers to entries that are never written once stored, so a hit copies
// one word out of it instead of the whole entry.
type entry[V any] struct {
	v        V
	rev      uint64
	fresh    time.Duration
	notFound bool
}

// local returns key's local copy if there is one the cache may serve
// without asking the store, or nil. The caller must not write it.
func (c *Cache[V]) local(key string) *entry[V] {
	e, _ := c.l1.Get(key)
	if e == nil || c.opts.StaleIfError == 0 || time.Since(c.born) < e.fresh {
		return e
	}
	c.pastFresh.Add(1) // counted by l1 as a hit, but the store is asked
	return nil
}

// stale returns key's local copy past its deadline when err says the store
// cannot be reached and Options.StaleIfError allows it, or nil. The caller
// must not write it.
func (c *Cache[V]) stale(key string, err error) *entry[V] {
	if c.opts.StaleIfError == 0 || !errors.Is(err, ErrUnavailable) {
		return nil
	}
	e, _ := c.l1.Peek(key)
	if e != nil {
		c.staleHits.Add(1)
	}
	return e
}

// dropStale drops key's copy if it is past its deadline: the store said
// the key is gone.
func (c *Cache[V]) dropStale(key string) {
	if c.opts.StaleIfError == 0 {
		return
	}
	c.mu.Lock()
	if e, ok := c.l1.Peek(key); ok && time.Since(c.born) >= e.fresh {
		c.l1.Delete(key)
	}
	c.mu.Unlock()
}

// pending tracks the store reads and writes of one key in flight: floor is
// the highest revision an event has reported meanwhile, and a copy older
// than floor is not stored.
type pending struct {
	refs  int
	floor uint64
	epoch uint64
}

// New returns a Cache over store, which it binds for its lifetime (one
// Cache per Store). It returns an error wrapping ErrOptions for invalid
// options, or ErrUnavailable when the store cannot be prepared.
func New[V any](ctx context.Context, store Store, opts Options[V]) (*Cache[V], error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	l1, err := cache.New(cache.Options[string, *entry[V]]{TTL: opts.LocalTTL, Limit: opts.Limit, Name: "sharedcache"})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	c := &Cache[V]{opts: opts, store: store, l1: l1, pending: map[string]*pending{}, live: true, born: time.Now()}
	maxAge := time.Duration(float64(max(opts.TTL, opts.NotFoundTTL)) * (1 + opts.Jitter))
	if err := store.bind(ctx, maxAge+time.Second, opts.LeaseTTL, c); err != nil {
		l1.Close()
		return nil, err
	}
	return c, nil
}

func (o *Options[V]) validate() error {
	switch {
	case o.TTL <= 0:
		return fmt.Errorf("%w: TTL %v must be positive", ErrOptions, o.TTL)
	case o.LocalTTL < 0:
		return fmt.Errorf("%w: LocalTTL %v is negative", ErrOptions, o.LocalTTL)
	case o.Limit < 0:
		return fmt.Errorf("%w: Limit %d is negative", ErrOptions, o.Limit)
	case o.Jitter < 0 || o.Jitter >= 1 || math.IsNaN(o.Jitter):
		return fmt.Errorf("%w: Jitter %v outside [0, 1)", ErrOptions, o.Jitter)
	case o.LeaseTTL != 0 && o.LeaseTTL < 100*time.Millisecond:
		return fmt.Errorf("%w: LeaseTTL %v under 100ms", ErrOptions, o.LeaseTTL)
	case o.StaleIfError < 0:
		return fmt.Errorf("%w: StaleIfError %v is negative", ErrOptions, o.StaleIfError)
	case o.LeaseWait < 0:
		return fmt.Errorf("%w: LeaseWait %v is negative", ErrOptions, o.LeaseWait)
	case (o.Marshal == nil) != (o.Unmarshal == nil):
		return fmt.Errorf("%w: set both Marshal and Unmarshal or neither", ErrOptions)
	}
	if o.LocalTTL == 0 {
		o.LocalTTL = o.TTL
	}
	if o.NotFoundTTL == 0 {
		o.NotFoundTTL = time.Minute
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 10 * time.Second
	}
	if o.LeaseWait == 0 {
		o.LeaseWait = o.LeaseTTL + time.Second
	}
	if o.Marshal == nil {
		o.Marshal = func(v V) ([]byte, error) { return json.Marshal(v) }
		o.Unmarshal = func(b []byte) (V, error) {
			var v V
			err := json.Unmarshal(b, &v)
			return v, err
		}
	}
	return nil
}

// Close stops the cache's watch and drops its local copies; the store stays
// open. Later calls return ErrClosed. Close is idempotent.
func (c *Cache[V]) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.store.unbind()
	return c.l1.Close()
}

// Get returns key's value: the local copy if there is one, otherwise the
// store's (then kept locally). It returns ErrNotFound when the store has no
// value or a not-found placeholder, and an error wrapping ErrUnavailable
// when the key has no local copy and the store cannot be reached (with
// Options.StaleIfError, a copy past its deadline but within that bound is
// returned instead). A hit on the local copy takes no lock and allocates
// nothing.
func (c *Cache[V]) Get(ctx context.Context, key string) (V, error) {
	if e := c.local(key); e != nil {
		return e.value()
	}
	if c.closed.Load() {
		var zero V
		return zero, ErrClosed
	}
	e, found, err := c.fetch(ctx, key)
	if err != nil {
		if s := c.stale(key, err); s != nil {
			return s.value()
		}
		var zero V
		return zero, err
	}
	if !found {
		var zero V
		return zero, ErrNotFound
	}
	return e.value()
}

func (e *entry[V]) value() (V, error) {
	if e.notFound {
		var zero V
		return zero, ErrNotFound
	}
	return e.v, nil
}

// Set stores value for key in the store with Options.TTL, then locally.
// When Set returns nil, every later Get on this instance returns value or
// a later write, and every other instance's local copy is being dropped
// (within milliseconds on a LAN). On error (wrapping ErrUnavailable) the
// local copy is dropped and the store may or may not hold value.
func (c *Cache[V]) Set(ctx context.Context, key string, value V) error {
	if c.closed.Load() {
		return ErrClosed
	}
	b, err := c.opts.Marshal(value)
	if err != nil {
		return fmt.Errorf("sharedcache: marshal %q: %w", key, err)
	}
	return c.write(ctx, key, kindValue, b, entry[V]{v: value}, c.opts.TTL)
}

// Delete removes key from the store and drops every instance's local copy.
// A later Get returns ErrNotFound, a later Take loads it.
func (c *Cache[V]) Delete(ctx context.Context, key string) error {
	if c.closed.Load() {
		return ErrClosed
	}
	err := c.store.del(ctx, key)
	c.mu.Lock()
	c.l1.Delete(key)
	if p := c.pending[key]; p != nil {
		p.floor = math.MaxUint64 // a read in flight may predate the delete
	}
	c.mu.Unlock()
	return err
}

// write puts a record in the store, then the local copy e.
func (c *Cache[V]) write(ctx context.Context, key string, kind byte, payload []byte, e entry[V], ttl time.Duration) error {
	ttl = c.jitter(ttl)
	deadline := time.Now().Add(ttl)
	p := c.begin(key)
	rev, err := c.store.put(ctx, key, makeRecord(kind, deadline, payload))
	if err != nil {
		c.end(key, p, nil, time.Time{})
		c.mu.Lock()
		c.l1.Delete(key)
		c.mu.Unlock()
		return err
	}
	e.rev = rev
	c.end(key, p, &e, deadline)
	return nil
}

func (c *Cache[V]) jitter(ttl time.Duration) time.Duration {
	if c.opts.Jitter == 0 {
		return ttl
	}
	return time.Duration(float64(ttl) * (1 + c.opts.Jitter*(2*rand.Float64()-1)))
}

// fetch reads key from the store and keeps a copy. found is false when the
// store has no live record.
func (c *Cache[V]) fetch(ctx context.Context, key string) (entry[V], bool, error) {
	p := c.begin(key)
	rec, rev, found, err := c.store.get(ctx, key)
	if err != nil || !found {
		c.end(key, p, nil, time.Time{})
		if err == nil {
			c.misses.Add(1)
			c.dropStale(key)
		}
		return entry[V]{}, false, err
	}
	kind, deadline, payload, err := parseRecord(rec)
	if err != nil {
		c.end(key, p, nil, time.Time{})
		return entry[V]{}, false, fmt.Errorf("%w (key %q)", err, key)
	}
	if !time.Now().Before(deadline) {
		c.end(key, p, nil, time.Time{})
		c.misses.Add(1)
		c.dropStale(key)
		return entry[V]{}, false, nil
	}
	e := entry[V]{rev: rev, notFound: kind == kindNotFound}
	if !e.notFound {
		if e.v, err = c.opts.Unmarshal(payload); err != nil {
			c.end(key, p, nil, time.Time{})
			return entry[V]{}, false, fmt.Errorf("sharedcache: unmarshal %q: %w", key, err)
		}
	}
	c.end(key, p, &e, deadline)
	c.l2Hits.Add(1)
	return e, true, nil
}

// begin registers a store read or write of key in flight.
func (c *Cache[V]) begin(key string) *pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[key]
	if p == nil {
		p = &pending{epoch: c.epoch}
		c.pending[key] = p
	}
	if p.epoch != c.epoch { // a reconnect since: this read must not store
		p.floor = math.MaxUint64
	}
	p.refs++
	return p
}

// end finishes what begin started, storing e (when not nil) as the local
// copy until deadline unless an event newer than e.rev arrived meanwhile, a
// reconnect happened, or the watch is not running.
func (c *Cache[V]) end(key string, p *pending, e *entry[V], deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e != nil {
		cur, had := c.l1.Peek(key)
		ttl := min(time.Until(deadline), c.opts.LocalTTL)
		switch {
		case had && cur.rev > e.rev:
			// a newer copy is already here
		case e.rev >= p.floor && p.epoch == c.epoch && c.live && ttl > 0:
			stored := *e // a fresh copy: the stored one is never written
			stored.fresh = time.Since(c.born) + ttl
			c.l1.SetWithExpire(key, &stored, ttl+c.opts.StaleIfError)
		case had:
			c.l1.Delete(key)
		}
	}
	if p.refs--; p.refs == 0 {
		delete(c.pending, key)
	}
}

// changed is the store's report of a write or delete of key at rev.
func (c *Cache[V]) changed(key string, rev uint64) {
	c.mu.Lock()
	if cur, ok := c.l1.Peek(key); ok && cur.rev < rev {
		c.l1.Delete(key)
		c.invalidations.Add(1)
	}
	if p := c.pending[key]; p != nil && p.floor < rev {
		p.floor = rev
	}
	c.mu.Unlock()
	if f, ok := c.flights.Load(key); ok {
		c.wakeFlight(key, f)
	}
	if h := testHookChanged; h != nil {
		h(c, key, rev)
	}
}

// testHookChanged, when set (by tests, before New), runs after each event.
var testHookChanged func(c any, key string, rev uint64)

func (c *Cache[V]) disconnected() {}

// reconnected drops every local copy: writes may have been missed while
// the connection was down. Reads in flight will not store theirs, and none
// is stored until resumed.
func (c *Cache[V]) reconnected() {
	c.mu.Lock()
	c.epoch++
	c.live = false
	c.staleDrops.Add(uint64(c.l1.Len()))
	c.l1.Clear()
	c.mu.Unlock()
	c.flights.Range(c.wakeFlight)
}

func (c *Cache[V]) resumed() {
	c.mu.Lock()
	c.live = true
	c.mu.Unlock()
	if h := testHookResumed; h != nil {
		h()
	}
}

// testHookResumed, when set by tests, runs after each resumed.
var testHookResumed func()

// Stats returns the counters.
func (c *Cache[V]) Stats() Stats {
	past := c.pastFresh.Load() // first: each is counted after its l1 hit
	return Stats{
		L1Hits:        c.l1.Stats().Hits - min(past, c.l1.Stats().Hits),
		L2Hits:        c.l2Hits.Load(),
		Misses:        c.misses.Load(),
		Loads:         c.loads.Load(),
		LeaseWaits:    c.leaseWaits.Load(),
		Invalidations: c.invalidations.Load(),
		StaleDrops:    c.staleDrops.Load(),
		StaleHits:     c.staleHits.Load(),
	}
}
