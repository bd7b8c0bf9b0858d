package cache

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ttlkit/ttlkit/internal/table"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// RefreshError describes a background reload that failed; OnRefreshError
// receives it. The cache kept Value, which lives on until its deadline.
type RefreshError[K comparable, V any] struct {
	Key   K // the key whose reload failed
	Value V // the value kept (the zero V if the entry had gone meanwhile)
	// Err is the loader's error, or a *timingwheel.PanicError (of
	// timingwheel.ErrGoexit for a runtime.Goexit).
	Err error
}

// refresher tracks the background reloads in flight, so that a read of an
// entry due for refresh finds out without a lock whether one is running.
type refresher[K comparable] struct {
	// tab holds a refreshKey for every key with a reload in flight. Read
	// without a lock; written with mu held.
	tab table.Table[K, refreshKey[K]]

	mu     sync.Mutex
	closed bool // no more reloads start; guarded by mu
	wg     sync.WaitGroup

	// ctx is the context of every reload; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
}

type refreshKey[K comparable] struct{ key K }

func refreshKeyOf[K comparable](r *refreshKey[K]) K { return r.key }

// read runs for every lookup that is a use and finds a live entry, when
// the cache slides expiry or refreshes: n is the entry, st its stamp as the
// lookup read it, and now the lookup's clock reading, reused here.
func (c *cache[K, V]) read(n *node[K, V], key K, h uint64, st uint64, now int64) {
	d := deadlineOf(st)
	if c.sliding {
		// Move the deadline to TTL from now, when that moves it by a
		// Resolution or more. A compare-and-swap on the stamp the lookup
		// read: if a writer stored another one meanwhile (a new value, a
		// Touch, death), the writer's stamp stands.
		if next := dueAt(now, int64(min(c.ttl, maxTTL))); next-d >= int64(c.res) && st&writing == 0 {
			n.stamp.CompareAndSwap(st, st&stampLow|stampOf(next))
		}
		return
	}
	if d-now <= c.refreshDue && c.refr.tab.Get(key, h) == nil {
		c.startRefresh(key, h)
	}
}

// Refresh starts a reload of key in the background with the configured
// loader, as RefreshAfter does on a read, and reports whether it started
// one. Readers keep the current value, if any, until the reload stores
// its result; a key without a value is loaded. It starts nothing, and
// returns false, if a load, refresh or Compute of key is in flight, if
// the cache has no loader, after Close, or for a key not equal to itself.
// The reload runs on a goroutine the cache owns, with a context that
// Close cancels; Close waits for it.
func (c *Cache[K, V]) Refresh(key K) bool {
	if c.c.loader == nil && c.c.bulk == nil {
		return false
	}
	return c.c.startRefresh(key, c.c.hash(key))
}

// startRefresh starts a reload of key (whose hash is h) unless one is in
// flight, and reports whether it did.
func (c *cache[K, V]) startRefresh(key K, h uint64) bool {
	if c.unstorable(key) {
		return false
	}
	r := &c.refr
	r.mu.Lock()
	if r.closed || r.tab.Get(key, h) != nil {
		r.mu.Unlock()
		return false
	}
	rk := &refreshKey[K]{key}
	r.tab.Put(rk, h)
	r.wg.Add(1)
	r.mu.Unlock()

	s := c.shardFor(h)
	s.mu.Lock()
	if s.closed || s.calls[key] != nil {
		s.mu.Unlock()
		c.endRefresh(rk, h)
		return false
	}
	cl := &call[V]{done: make(chan struct{}), refresh: true}
	s.startCallLocked(key, cl)
	s.mu.Unlock()
	go c.refresh(s, key, h, cl, rk)
	return true
}

// endRefresh forgets the reload of rk's key.
func (c *cache[K, V]) endRefresh(rk *refreshKey[K], h uint64) {
	r := &c.refr
	r.mu.Lock()
	r.tab.DeleteEntry(rk, h)
	r.mu.Unlock()
	r.wg.Done()
}

// refresh is the goroutine of one reload. The new result is stored, and
// the key forgotten by the refresher, in that order, so that readers never
// see the old value as due again once the new one is in.
func (c *cache[K, V]) refresh(s *shard[K, V], key K, h uint64, cl *call[V], rk *refreshKey[K]) {
	defer c.endRefresh(rk, h)
	fn := c.loaderFor(key)
	begin := c.now()
	var l Loaded[V]
	var err error
	var w int64
	guard(&key, false, func() { l, err = fn(c.refr.ctx); w = c.weighLoaded(key, l, err) }, func(failure error) {
		if failure != nil {
			l, err = Loaded[V]{}, failure
		} else if err == nil && l.Err != nil {
			err = l.Err
		}
		c.complete(s, key, h, cl, l, err, w, begin, true)
		c.lc.refreshes.Add(1)
		if err != nil {
			c.lc.refreshErrors.Add(1)
			c.refreshFailed(key, h, err)
		}
	})
}

// refreshFailed reports a failed reload to OnRefreshError (or, for a
// panic without OnRefreshError, to the log), recovering a panic in it.
func (c *cache[K, V]) refreshFailed(key K, h uint64, err error) {
	if c.onRefreshError == nil {
		if pe, ok := err.(*timingwheel.PanicError); ok {
			slog.Error("cache: loader panicked in a background refresh", "cache", c.name, "key", key,
				"panic", pe.Value, "stack", string(pe.Stack))
		}
		return
	}
	v, _, _ := c.lookup(key, h, false)
	e := RefreshError[K, V]{Key: key, Value: v, Err: err}
	returned := false
	defer func() {
		if !returned {
			c.onPanic(Event[K, V]{Key: key, Value: v}, recovered(key, recover()))
		}
	}()
	c.onRefreshError(e)
	returned = true
}

// refreshDue is RefreshAfter as the time left at which an entry falls due.
func refreshDue(ttl, after time.Duration) int64 {
	if after <= 0 {
		return -1 << 63
	}
	return int64(ttl - after)
}
