package sharedcache

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// flight is one Take of a key in progress on this instance; the other
// Takes of the key wait for it. It lives in Cache.flights from the Take's
// start to its end, so what a Take keeps is gone when it returns.
type flight[V any] struct {
	done chan struct{}
	// wake holds one token when an event for the key (or a reconnect)
	// happened since the Take last looked: it then reads the store again.
	// A token from before a read only costs one more read.
	wake chan struct{}
	v    V
	err  error
}

// wakeFlight tells the Take of key in flight, if any, that the key may
// have changed in the store. It never blocks.
func (c *Cache[V]) wakeFlight(key any, f any) bool {
	select {
	case f.(*flight[V]).wake <- struct{}{}:
	default:
	}
	return true
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
// With the store unreachable, Take returns the local copy if there is one
// (with Options.StaleIfError, one past its deadline within that bound),
// otherwise the result of load, which is not kept (an error wrapping
// ErrUnavailable is never returned when load succeeds).
func (c *Cache[V]) Take(ctx context.Context, key string, load func(context.Context) (V, error)) (V, error) {
	if e := c.local(key); e != nil {
		return e.value()
	}
	if c.closed.Load() {
		var zero V
		return zero, ErrClosed
	}
	f := &flight[V]{done: make(chan struct{}), wake: make(chan struct{}, 1)}
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
	f.v, f.err = c.take(ctx, key, f.wake, load)
	return f.v, f.err
}

// take runs a Take's protocol; wake is its flight's wake-up, registered
// before the first read, so a write landing after a read still ends a wait.
func (c *Cache[V]) take(ctx context.Context, key string, wake chan struct{}, load func(context.Context) (V, error)) (V, error) {
	var zero V
	deadline := time.Now().Add(c.opts.LeaseWait)
	waited, leased := false, false
	for {
		e, found, err := c.fetch(ctx, key)
		if err != nil {
			if s := c.stale(key, err); s != nil {
				return s.value()
			}
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
		case <-wake:
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
