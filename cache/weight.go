package cache

import (
	"errors"
	"fmt"
)

// ErrTooHeavy is wrapped by the error TrySet returns for an entry that
// weighs more than one entry may (see Options.MaxWeight). Test with
// errors.Is.
var ErrTooHeavy = errors.New("cache: entry too heavy")

// weigh returns the weight of an entry of key and value: 1 without a
// Weigher, else the Weigher's result, at least 1. ok is false if the entry
// is heavier than one entry may be (the share of MaxWeight of one shard).
// It runs the Weigher on the calling goroutine, with no lock held.
func (c *cache[K, V]) weigh(key K, value V) (w int64, ok bool) {
	if c.weigher == nil {
		return 1, true
	}
	w = max(int64(c.weigher(key, value)), 1)
	return w, w <= c.maxEntry
}

// tooHeavy drops a write of key whose value weighs w: nothing is stored,
// and a previous entry for key is removed (reported as Deleted, as a
// SetWithExpire with ttl <= 0 does), so that Get never returns a value
// older than the write. It returns the error TrySet reports.
func (c *cache[K, V]) tooHeavy(key K, w int64) error {
	c.delete(key)
	return fmt.Errorf("%w: key %v weighs %d; one entry may weigh at most %d (MaxWeight %d split over %d shards)",
		ErrTooHeavy, key, w, c.maxEntry, c.limit, len(c.shards))
}

// TrySet is Set reporting what Set leaves silent: if the entry weighs more
// than one entry may (see Options.MaxWeight; never without a Weigher), it
// stores nothing, removes the key's previous entry as Set does, and
// returns an error wrapping ErrTooHeavy; after Close it returns ErrClosed.
// Otherwise it stores value for key exactly as Set does and returns nil
// (also for a key not equal to itself, which Set drops without weighing
// it: see Cache). Like Set, it calls the Weigher once.
func (c *Cache[K, V]) TrySet(key K, value V) error {
	select {
	case <-c.c.closed:
		return ErrClosed
	default:
	}
	return c.c.set(key, value, c.c.ttl)
}
