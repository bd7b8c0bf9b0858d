package sharedcache

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// flight is one Take of a key in progress on this instance; the other
// Takes of the key wait for it.
type flight[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// Take returns key's value like Get; when there is none it loads it once
// across every instance on the store: the instance that takes the key's
// lease and then still finds no value in the store runs load and writes
// the result (a value with Options.TTL, or a
// not-found placeholder with Options.NotFoundTTL when load returns
// ErrNotFound); the others wait for that write, up to Options.LeaseWait,
// and then run load themselves. Concurrent Takes of one key on this
// instance share one call. An error from load is returned and nothing is
// stored.
//
// With the store unreachable, Take returns the local copy if there is one,
// otherwise the result of load, which is not kept (an error wrapping
// ErrUnavailable is never returned when load succeeds).
func (c *Cache[V]) Take(ctx context.Context, key string, load func(context.Context) (V, error)) (V, error) {
	if e, ok := c.l1.Get(key); ok {
		return e.value()
	}
	if c.closed.Load() {
		var zero V
		return zero, ErrClosed
	}
	f := &flight[V]{done: make(chan struct{})}
	if prev, loaded := c.flights.LoadOrStore(key, f); loaded {
		p := prev.(*flight[V])
		select {
		case <-p.done:
			return p.v, p.err
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
	}
	defer func() {
		c.flights.Delete(key)
		close(f.done)
	}()
	f.v, f.err = c.take(ctx, key, load)
	return f.v, f.err
}

func (c *Cache[V]) take(ctx context.Context, key string, load func(context.Context) (V, error)) (V, error) {
	var zero V
	deadline := time.Now().Add(c.opts.LeaseWait)
	waited, leased := false, false
	for {
		// Registered before the read, so a write landing after the read
		// still wakes this wait.
		ch := c.waiter(key)
		e, found, err := c.fetch(ctx, key)
		if err != nil {
			if errors.Is(err, ErrUnavailable) {
				return c.loadAlone(ctx, key, load, false)
			}
			return zero, err
		}
		if found {
			return e.value()
		}
		// A Take loads only if the key is absent from the store after it
		// holds the lease. A read made before the lease proves nothing:
		// between the two, another instance may have loaded the key,
		// written it and released its lease.
		if leased {
			return c.loadAlone(ctx, key, load, true)
		}
		// A failed lease call (a timeout on a busy server) is not a reason
		// to load here too: wait and try again, up to LeaseWait. A store
		// that is down fails the next read at once.
		release, held, err := c.store.lease(ctx, key)
		if err == nil && held {
			defer release()
			leased = true
			continue // read again, under the lease
		}
		if !waited {
			waited = true
			c.leaseWaits.Add(1)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return c.loadAlone(ctx, key, load, true)
		}
		// Wait for the leaseholder's write, or retry the lease (which
		// expires if its holder crashed) a few times per LeaseTTL.
		if h := testHookWaiting; h != nil {
			h(key)
		}
		t := time.NewTimer(min(left, c.opts.LeaseTTL/4))
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return zero, ctx.Err()
		}
		t.Stop()
	}
}

// testHookWaiting, when set by tests, runs each time a Take starts waiting
// for another instance's load.
var testHookWaiting func(key string)

// waiter returns a channel closed at the next event for key.
func (c *Cache[V]) waiter(key string) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.waiters[key]
	if ch == nil {
		ch = make(chan struct{})
		c.waiters[key] = ch
	}
	return ch
}

// loadAlone runs load and, when keep is set, writes its result to the
// store; a failed write is not an error, as the value is correct.
func (c *Cache[V]) loadAlone(ctx context.Context, key string, load func(context.Context) (V, error), keep bool) (V, error) {
	c.loads.Add(1)
	v, err := load(ctx)
	switch {
	case errors.Is(err, ErrNotFound):
		if keep && c.opts.NotFoundTTL > 0 {
			_ = c.write(ctx, key, kindNotFound, nil, entry[V]{notFound: true}, c.opts.NotFoundTTL)
		}
		var zero V
		return zero, ErrNotFound
	case err != nil:
		var zero V
		return zero, err
	}
	if keep {
		b, merr := c.opts.Marshal(v)
		if merr != nil {
			return v, fmt.Errorf("sharedcache: marshal %q: %w", key, merr)
		}
		_ = c.write(ctx, key, kindValue, b, entry[V]{v: v}, c.opts.TTL)
	}
	return v, nil
}
