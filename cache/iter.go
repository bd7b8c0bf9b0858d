package cache

import "iter"

// All returns an iterator over the live entries. It visits the shards one
// at a time: each shard's entries are copied under its lock, and
// yield runs after the lock is released, so yield may call any method of
// the cache (a Set during iteration may or may not be seen). An entry is
// yielded only if its deadline has not passed when it is yielded; each
// yielded key appears once. Order is unspecified. Iterating costs one
// copy of the largest shard's live entries.
func (c *Cache[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		c.c.each(yield)
	}
}

// Range calls f for each live entry, as All, until f returns false.
func (c *Cache[K, V]) Range(f func(key K, value V) bool) {
	c.c.each(f)
}

// Keys returns an iterator over the keys of the live entries, as All
// visits them.
func (c *Cache[K, V]) Keys() iter.Seq[K] {
	return func(yield func(K) bool) {
		c.c.each(func(k K, _ V) bool { return yield(k) })
	}
}

// Values returns an iterator over the values of the live entries, as All
// visits them.
func (c *Cache[K, V]) Values() iter.Seq[V] {
	return func(yield func(V) bool) {
		c.c.each(func(_ K, v V) bool { return yield(v) })
	}
}

type snapshot[K comparable, V any] struct {
	key      K
	value    V
	deadline int64
}

func (c *cache[K, V]) each(yield func(K, V) bool) {
	var buf []snapshot[K, V]
	for s := range c.made() {
		now := c.now()
		buf = buf[:0]
		s.mu.Lock()
		s.each(func(n *node[K, V]) {
			if d := n.deadline(); d > now {
				buf = append(buf, snapshot[K, V]{n.key(), s.valueOf(n), d})
			}
		})
		s.mu.Unlock()
		for j := range buf {
			e := &buf[j]
			if e.deadline <= c.now() {
				continue
			}
			if !yield(e.key, e.value) {
				return
			}
		}
		clear(buf) // release keys and values
	}
}
