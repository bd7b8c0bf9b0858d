package cache

import "time"

// Not-found answers (Options.NotFoundTTL) live in a second, value-less
// cache of their own, beside the values: its TTL is NotFoundTTL, its Limit
// that of the values, and its expiry engine reclaims them. So a value
// never shares a key's slot with a not-found marker, Get, Len, All and
// OnEvict never see one, and the value path costs nothing more.
//
// Lock order: a value shard's lock may be held while a not-found shard's
// lock is taken (so that a load ends its call and records its answer in
// one step), never the other way round.

// newNotFound makes the not-found cache of a cache configured by o.
func newNotFound[K comparable, V any](o *Options[K, V]) *Cache[K, struct{}] {
	name := "not-found"
	if o.Name != "" {
		name = o.Name + " not-found"
	}
	neg, err := New(Options[K, struct{}]{TTL: o.NotFoundTTL, Limit: o.Limit, Jitter: o.Jitter, Name: name})
	if err != nil {
		panic(err) // not reachable: o is valid
	}
	return neg
}

// notFound reports whether key has a live not-found answer. Lock-free.
func (c *cache[K, V]) notFound(key K) bool {
	if c.neg == nil {
		return false
	}
	_, _, ok := c.neg.lookup(key, c.neg.hash(key), false)
	return ok
}

// putNotFoundLocked records a not-found answer for key, kept for ttl > 0.
// The caller holds key's value shard lock and calls c.neg.finish(np)
// after releasing it; the timers go to the wheel here (see queueLocked).
func (c *cache[K, V]) putNotFoundLocked(key K, ttl time.Duration, np *pending[K, struct{}]) {
	neg := c.neg
	h := neg.hash(key)
	s := neg.shardFor(h)
	now := neg.now()
	deadline := dueAt(now, neg.lifetime(ttl))
	s.mu.Lock()
	if !s.closed {
		s.setLocked(key, h, struct{}{}, 1, now, deadline, np)
	}
	s.unlock(np)
}

// forgetNotFoundLocked drops key's not-found answer, if any, because a
// value was stored for it. As putNotFoundLocked.
func (c *cache[K, V]) forgetNotFoundLocked(key K, np *pending[K, struct{}]) {
	if !c.notFound(key) {
		return
	}
	neg := c.neg
	h := neg.hash(key)
	s := neg.shardAt(h)
	now := neg.now()
	s.mu.Lock()
	s.deleteLocked(key, h, now, np)
	s.unlock(np)
}

// forgetNotFound drops key's not-found answer, if any, after a write of
// key (Set, Delete, Compute) with no lock held.
func (c *cache[K, V]) forgetNotFound(key K) {
	if c.notFound(key) {
		c.neg.delete(key)
	}
}
