package cache

import "time"

// Peek returns the value stored for key and true, or the zero V and false,
// exactly as Get does, but leaves no trace: the entry is not marked as
// used, so eviction treats it as unread, and Stats counts neither a hit
// nor a miss. Lock-free, no allocation.
func (c *Cache[K, V]) Peek(key K) (V, bool) {
	v, _, ok := c.c.lookup(key, c.c.hash(key), false)
	return v, ok
}

// Remaining returns the time key's entry has left to live and true, or 0
// and false if key has no live entry (none, or its deadline has passed).
// The time left runs to the entry's deadline as of the clock reading made
// by this call, jitter included: a later write or Touch changes it. Like
// Peek, it is not a use and not counted in Stats. Lock-free.
func (c *Cache[K, V]) Remaining(key K) (time.Duration, bool) {
	_, left, ok := c.c.lookup(key, c.c.hash(key), false)
	return left, ok
}

// GetOrSet returns the live value stored for key and true; otherwise it
// stores value with the default TTL, as Set does, and returns value and
// false. The check and the store are one step under the key's shard lock:
// of concurrent GetOrSets of a missing key, one stores its value and the
// others return that value. A value found counts as a hit and a use, as
// Get; a store counts as a miss, and as a write for Limit and OnEvict (an
// expired entry in the way is reported as Expired, a victim as Evicted).
// After Close, and for a key not equal to itself (see Cache), it stores
// nothing and returns value and false.
//
// With Options.MaxWeight, a value heavier than one entry may be is never
// stored, and nothing says so: when key has no live entry, GetOrSet
// returns value and false as if it had stored it, but stores nothing,
// removes nothing and reports nothing to OnEvict; Stats counts the miss
// and no Set, and a later Get misses. (TrySet reports the weight.)
func (c *Cache[K, V]) GetOrSet(key K, value V) (actual V, loaded bool) {
	actual, loaded, _ = c.c.getOrSet(key, value, true)
	return actual, loaded
}

// SetIfAbsent stores value with the default TTL if key has no live entry,
// as Set does, and reports whether it stored it. An entry whose deadline
// has passed counts as absent: it is replaced and reported to OnEvict as
// Expired. Unlike GetOrSet it is a write only: a live entry is neither
// marked as used nor counted in Stats. After Close, and for a key not
// equal to itself (see Cache), it stores nothing and returns false. A
// value heavier than one entry may be (see Options.MaxWeight) is never
// stored: SetIfAbsent returns false, and leaves the key as it was, as
// GetOrSet does.
func (c *Cache[K, V]) SetIfAbsent(key K, value V) bool {
	_, _, stored := c.c.getOrSet(key, value, false)
	return stored
}

// getOrSet is GetOrSet, a read that counts, with read set, and
// SetIfAbsent without it.
func (c *cache[K, V]) getOrSet(key K, value V, read bool) (actual V, loaded, stored bool) {
	h := c.hash(key)
	v, _, ok := c.lookup(key, h, read)
	if !ok && !c.unstorable(key) {
		v, ok, stored = c.setIfAbsent(key, h, value, read)
	}
	if read {
		if ok {
			c.reads.hit()
		} else {
			c.reads.miss()
		}
	}
	if !ok {
		v = value
	}
	return v, ok, stored
}

// setIfAbsent is the locked part of getOrSet: it returns the live value
// stored for key since the lock-free lookup missed, or stores value.
func (c *cache[K, V]) setIfAbsent(key K, h uint64, value V, mark bool) (actual V, loaded, stored bool) {
	w, ok := c.weigh(key, value)
	if !ok {
		return actual, false, false // too heavy: never stored (no live entry to keep)
	}
	s := c.shardFor(h)
	var p pending[K, V]
	now := c.now()
	deadline := dueAt(now, c.lifetime(c.ttl))
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return actual, false, false
	}
	if n := s.tab.Get(key, h); n != nil && deadlineOf(n.settled()) > now { // now first: see settled
		actual = s.valueOf(n)
		if mark && c.bounded {
			n.noteRead()
		}
		s.mu.Unlock()
		return actual, true, false
	}
	s.setLocked(key, h, value, w, now, deadline, &p)
	s.unlock(&p)
	c.finish(&p)
	c.forgetNotFound(key)
	return actual, false, true
}

// Clear removes every entry, reporting each to OnEvict as Deleted (or
// Expired if its deadline had passed) on the calling goroutine, as Delete
// does, and cancels their timers. Loads in flight (see Take) still return
// their results to their callers but do not store them. It empties the
// shards one at a time, each under its lock, and calls OnEvict after
// releasing it: an entry written to a shard that Clear has already emptied
// stays. O(entries); each shard's index shrinks to its minimum. After
// Close it does nothing.
func (c *Cache[K, V]) Clear() {
	c.c.clear()
}

func (c *cache[K, V]) clear() {
	if c.neg != nil {
		c.neg.clear()
	}
	var events []Event[K, V]
	for s := range c.made() {
		now := c.now()
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		events = s.clearLocked(now, c.onEvict != nil, events[:0])
		s.mu.Unlock()
		for _, ev := range events {
			c.evict(ev)
		}
		clear(events) // release keys and values
	}
}
