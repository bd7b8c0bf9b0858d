package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// errGoexit is what waiters receive when fetch called runtime.Goexit (as
// t.FailNow does) instead of returning.
var errGoexit = errors.New("cache: fetch exited its goroutine without returning")

// PanicError is the error Take's waiters receive when fetch panicked, and
// the value the goroutine that ran fetch panics with.
type PanicError struct {
	Value any    // the value fetch panicked with
	Stack []byte // the stack of the panicking goroutine
}

// Error returns the panic value and the stack of the goroutine that
// panicked.
func (e *PanicError) Error() string {
	return fmt.Sprintf("cache: fetch panicked: %v\n\n%s", e.Value, e.Stack)
}

// Unwrap returns the panic value if it is an error, else nil.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// call is one load in flight. val and err are written before done is
// closed and read after.
type call[V any] struct {
	done  chan struct{}
	val   V
	err   error
	stale bool // a Set or Delete of the key overtook the load; guarded by the shard lock
}

// Take returns the value stored for key if there is a live one; otherwise
// it calls fetch, stores its value with the default TTL and returns it.
// Concurrent Takes of one key run fetch once: the others wait for it and
// receive the same value and error.
//
// An error from fetch is returned to every caller and nothing is stored
// (no negative caching). If fetch panics, the goroutine that ran it panics
// with a *PanicError and every waiter receives that *PanicError as its
// error; if fetch exits its goroutine (runtime.Goexit), waiters receive an
// error. A Set or Delete of key while fetch runs wins: the fetched value is
// returned to this load's callers but not stored. After Close, Take
// returns ErrClosed without calling fetch.
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

func (c *cache[K, V]) take(ctx context.Context, key K, ttl time.Duration, fetch func(context.Context) (V, error)) (V, error) {
	h := c.hash(key)
	// Fast path: a live entry, without the lock.
	if v, _, ok := c.lookup(key, h, true); ok {
		c.reads.hit()
		return v, nil
	}

	s := c.shardFor(h)
	var zero V
	if c.unstorable(key) {
		// No later Take could find this load, nor the entry it would
		// store: load for this caller alone, store nothing.
		select {
		case <-c.closed:
			return zero, ErrClosed
		default:
		}
		c.reads.miss()
		return c.load(ctx, s, key, h, ttl, &call[V]{done: make(chan struct{}), stale: true}, fetch)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return zero, ErrClosed
	}
	if n := s.tab.Get(key, h); n != nil && n.deadline() > c.now() {
		// Stored since the lookup.
		v := *n.val.Load()
		s.mu.Unlock()
		c.reads.hit()
		return v, nil
	}
	c.reads.miss()
	if cl := s.calls[key]; cl != nil {
		s.mu.Unlock()
		select {
		case <-cl.done:
			return cl.val, cl.err
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
	cl := &call[V]{done: make(chan struct{})}
	s.startCallLocked(key, cl)
	s.mu.Unlock()
	return c.load(ctx, s, key, h, ttl, cl, fetch)
}

// load runs fetch for the waiters of cl, stores a successful result, and
// releases the waiters whether fetch returns, panics or exits.
func (c *cache[K, V]) load(ctx context.Context, s *shard[K, V], key K, h uint64, ttl time.Duration, cl *call[V], fetch func(context.Context) (V, error)) (val V, err error) {
	begin := c.now() // for Stats.LoadTime
	returned := false
	var perr *PanicError
	defer func() {
		if !returned && perr == nil {
			err = errGoexit
		}
		if perr != nil {
			err = perr
		}
		c.complete(s, key, h, ttl, cl, val, err, begin)
		if perr != nil {
			panic(perr)
		}
	}()
	func() {
		defer func() {
			if !returned {
				if r := recover(); r != nil {
					perr = &PanicError{Value: r, Stack: debug.Stack()}
				}
			}
		}()
		val, err = fetch(ctx)
		returned = true
	}()
	return val, err
}

// complete stores a successful, not overtaken load, counts it (begin is
// when fetch was called), and wakes its waiters.
func (c *cache[K, V]) complete(s *shard[K, V], key K, h uint64, ttl time.Duration, cl *call[V], val V, err error, begin int64) {
	var p pending[K, V]
	now := c.now()
	var deadline int64
	w, fits := int64(1), true
	if err == nil && ttl > 0 {
		deadline = now + c.lifetime(ttl)
		w, fits = c.weigh(key, val) // too heavy: returned, not stored
	}
	s.mu.Lock()
	if !cl.stale {
		s.endCallLocked(key)
	}
	s.loads++
	s.loadTime.Observe(time.Duration(now - begin))
	if err != nil {
		s.loadErrors++
	} else if !cl.stale && !s.closed && deadline > 0 && fits {
		s.setLocked(key, h, val, w, now, deadline, &p)
	}
	s.mu.Unlock()
	cl.val, cl.err = val, err
	close(cl.done)
	c.finish(&p)
}
