package cache

import (
	"context"
	"time"
)

// call is one load, refresh or Compute of a key in flight, registered in
// its shard's calls. val, err and notFound are written before done is
// closed and read after.
type call[V any] struct {
	done     chan struct{}
	val      V
	err      error
	notFound bool // the loader found nothing (err is nil)
	stale    bool // a Set or Delete of the key overtook the load; guarded by the shard lock
	refresh  bool // a background reload of a live entry (set before registration)
	compute  bool // a Compute: waiters look the key up again (set before registration)
}

// Take returns the value stored for key if there is a live one; otherwise
// it calls fetch, stores its value with the default TTL and returns it.
// Concurrent Takes of one key run fetch once: the others wait for it and
// receive the same value and error.
//
// An error from fetch is returned to every caller and nothing is stored
// (no negative caching). If fetch panics, the goroutine that ran it panics
// with a *timingwheel.PanicError (Key is key) and every waiter receives
// that *timingwheel.PanicError as its error; if fetch exits its goroutine
// (runtime.Goexit), waiters receive a *timingwheel.PanicError whose Value
// is timingwheel.ErrGoexit (errors.Is(err, timingwheel.ErrGoexit)). A Set
// or Delete of key while fetch runs wins: the fetched value is returned to
// this load's callers but not stored. Take shares loads with
// Load and LoadAll: a Take that waited for a Load that found nothing, or
// that finds a remembered not-found answer (Options.NotFoundTTL), returns
// ErrNotFound. After Close, Take returns ErrClosed without calling fetch.
func (c *Cache[K, V]) Take(key K, fetch func() (V, error)) (V, error) {
	return c.c.take(context.Background(), key, c.c.ttl, func(context.Context) (V, error) { return fetch() })
}

// TakeWithExpire is Take storing the fetched value with ttl instead of
// Options.TTL. With ttl <= 0 the fetched value is returned but not stored.
func (c *Cache[K, V]) TakeWithExpire(key K, ttl time.Duration, fetch func() (V, error)) (V, error) {
	return c.c.take(context.Background(), key, ttl, func(context.Context) (V, error) { return fetch() })
}

// TakeCtx is Take with a context. fetch runs with the context of the caller
// that starts the load, so that caller's cancellation reaches fetch (and,
// through fetch's error, every waiter). A waiter stops waiting when its own
// ctx is done and returns ctx.Err(); the load goes on for the others.
func (c *Cache[K, V]) TakeCtx(ctx context.Context, key K, fetch func(context.Context) (V, error)) (V, error) {
	return c.c.take(ctx, key, c.c.ttl, fetch)
}

// TakeCtxWithExpire is TakeCtx storing the fetched value with ttl instead of
// Options.TTL. With ttl <= 0 the fetched value is returned but not stored.
func (c *Cache[K, V]) TakeCtxWithExpire(ctx context.Context, key K, ttl time.Duration, fetch func(context.Context) (V, error)) (V, error) {
	return c.c.take(ctx, key, ttl, fetch)
}

// take is Take's load-through: fetch's value is kept for ttl, or returned
// without being kept when ttl <= 0.
func (c *cache[K, V]) take(ctx context.Context, key K, ttl time.Duration, fetch func(context.Context) (V, error)) (V, error) {
	if ttl <= 0 {
		ttl = -1
	}
	return c.obtain(ctx, key, func(ctx context.Context) (Loaded[V], error) {
		v, err := fetch(ctx)
		return Loaded[V]{Value: v, TTL: ttl}, err
	})
}
