package collection

import (
	"time"

	"github.com/ttlkit/ttlkit/cache"
)

type (
	// CacheOption customizes a Cache; pass it to NewCache.
	CacheOption func(cache *Cache)

	// Cache is go-zero's collection.Cache over cache.Cache: an in-process
	// cache whose entries expire after a TTL, spread by ±5% as go-zero
	// does. Unlike go-zero's, an entry is never returned after its TTL, a
	// racing Del and Set never leave an entry that lives forever, and Close
	// releases its goroutines. Safe for concurrent use.
	Cache struct {
		c     *cache.Cache[string, any]
		name  string
		limit int
	}
)

// NewCache returns a Cache whose entries expire after expire (±5%). It
// returns an error wrapping cache.ErrOptions for expire <= 0: go-zero
// accepts it and keeps entries forever.
func NewCache(expire time.Duration, opts ...CacheOption) (*Cache, error) {
	c := &Cache{}
	for _, opt := range opts {
		opt(c)
	}
	inner, err := cache.New(cache.Options[string, any]{
		TTL:    expire,
		Limit:  c.limit,
		Jitter: cache.DefaultJitter,
		Name:   c.name,
	})
	if err != nil {
		return nil, err
	}
	c.c = inner
	return c, nil
}

// WithLimit bounds the cache to limit entries. Beyond it the cache evicts
// by W-TinyLFU, not by go-zero's strict LRU: a key used once does not
// displace one used more often (see package cache, and doc/compat.md for
// the test that pins the difference). A limit <= 0 means no limit, as in
// go-zero.
func WithLimit(limit int) CacheOption {
	return func(c *Cache) {
		if limit > 0 {
			c.limit = limit
		}
	}
}

// WithName names the cache; the name appears in the panic reports of its
// expiry engine. go-zero also logs stats under it every minute; this one
// doesn't (call Stats).
func WithName(name string) CacheOption {
	return func(c *Cache) { c.name = name }
}

// Del removes key's entry, if any, and its expiry timer.
func (c *Cache) Del(key string) { c.c.Delete(key) }

// Get returns key's value and true, or nil and false if key has no entry or
// its TTL has passed.
func (c *Cache) Get(key string) (any, bool) { return c.c.Get(key) }

// Set stores value under key with the cache's TTL (±5%).
func (c *Cache) Set(key string, value any) { c.c.Set(key, value) }

// SetWithExpire stores value under key with its own TTL (±5%). An
// expire <= 0 stores nothing and removes any entry for key (go-zero keeps
// such an entry forever).
func (c *Cache) SetWithExpire(key string, value any, expire time.Duration) {
	c.c.SetWithExpire(key, value, expire)
}

// Take returns key's value if it has a live entry; otherwise it calls fetch,
// stores the result and returns it. Concurrent Takes of one key call fetch
// once and share its result. Errors are returned to every caller and not
// stored; if fetch panics, every waiter gets a *timingwheel.PanicError (go-zero's
// get nil, nil).
func (c *Cache) Take(key string, fetch func() (any, error)) (any, error) {
	return c.c.Take(key, fetch)
}

// Close stops the cache's expiry goroutine and drops its entries. Later
// calls of Get miss, Set and Del do nothing, and Take returns
// cache.ErrClosed. go-zero's Cache has no Close and leaks its goroutines.
func (c *Cache) Close() error { return c.c.Close() }

// Len returns the number of entries held. go-zero has no such method.
func (c *Cache) Len() int { return c.c.Len() }

// Stats returns the cache's counters. go-zero logs them instead.
func (c *Cache) Stats() cache.Stats { return c.c.Stats() }
