package cache

import (
	"context"
	"errors"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// LoadAll returns the values of keys: the live ones from the cache, the
// others loaded with one call of Options.BulkLoader (without one, with
// Options.Loader, key after key), stored and returned. A key with a load
// already in flight (a concurrent LoadAll, Load or Take of it) is not
// loaded again: LoadAll waits for that load's result, until ctx is done.
// So however calls overlap, each key is loaded once at a time.
//
// The map holds every key that has a value. A key the loader reported as
// not found (or remembered as such, see Options.NotFoundTTL) is left out.
// The error is nil when no key failed; otherwise it is a KeyErrors with
// the error of each key that failed (a loader error, ctx.Err() for a key
// whose wait ctx ended, ErrClosed after Close), and the map still holds
// the others. Duplicate keys count once. A panic in the loader reaches
// the waiters of its keys as a *timingwheel.PanicError, and LoadAll re-panics with it.
// Without a loader LoadAll returns ErrNoLoader.
//
// Each key counts in Stats as a lookup, as Load does; a BulkLoader call
// counts once in BulkLoads and LoadTime.
func (c *Cache[K, V]) LoadAll(ctx context.Context, keys []K) (map[K]V, error) {
	if c.c.loader == nil && c.c.bulk == nil {
		return nil, ErrNoLoader
	}
	return c.c.loadAll(ctx, keys)
}

// bulkKey is a key of a LoadAll that has no live value: the call that
// loads it, run by this LoadAll (mine) or by another caller.
type bulkKey[K comparable, V any] struct {
	key K
	h   uint64
	s   *shard[K, V]
	cl  *call[V]
}

func (c *cache[K, V]) loadAll(ctx context.Context, keys []K) (map[K]V, error) {
	vals := make(map[K]V, len(keys))
	var errs KeyErrors[K]
	fail := func(key K, err error) {
		if errs == nil {
			errs = make(KeyErrors[K])
		}
		errs[key] = err
	}
	// keep records the result of a finished call.
	keep := func(key K, v V, err error) {
		switch {
		case err == nil:
			vals[key] = v
		case !errors.Is(err, ErrNotFound):
			fail(key, err)
		}
	}
	seen := make(map[K]struct{}, len(keys))
	var mine, joined []bulkKey[K, V]
	for _, key := range keys {
		if _, dup := seen[key]; dup {
			continue
		}
		seen[key] = struct{}{}
		h := c.hash(key)
		v, cl, own, err := c.claim(key, h)
		switch {
		case cl == nil:
			keep(key, v, err)
		case own:
			mine = append(mine, bulkKey[K, V]{key, h, c.shardFor(h), cl})
		default:
			joined = append(joined, bulkKey[K, V]{key, h, nil, cl})
		}
	}
	// Load our keys before waiting for others': two LoadAlls that each
	// wait for a key the other loads both get there.
	if len(mine) > 0 {
		c.loadMany(ctx, mine)
		for _, k := range mine {
			v, err := k.cl.result()
			keep(k.key, v, err)
		}
	}
	for _, k := range joined {
		v, err, retry := c.await(ctx, k.cl)
		if retry {
			// A Compute held the key: load it as Load does.
			v, err = c.obtain(ctx, k.key, c.loaderFor(k.key))
		}
		keep(k.key, v, err)
	}
	if errs != nil {
		return vals, errs
	}
	return vals, nil
}

// loadMany runs the loads of mine, calls this caller registered, and
// completes every one of them however the loader ends: a panic reaches
// their waiters and is then re-raised; a runtime.Goexit fails the keys it
// left.
func (c *cache[K, V]) loadMany(ctx context.Context, mine []bulkKey[K, V]) {
	next := 0 // mine[:next] are completed
	defer func() {
		for ; next < len(mine); next++ {
			k := mine[next]
			c.complete(k.s, k.key, k.h, k.cl, Loaded[V]{}, goexitError(&k.key), 0, 0, false)
		}
	}()
	if c.bulk == nil {
		// One Loader call per key, each timed; a panic is re-raised once
		// every key is complete.
		var perr *timingwheel.PanicError
		for next < len(mine) {
			k := mine[next]
			begin := c.now()
			var l Loaded[V]
			var err error
			var w int64
			guard(&k.key, false, func() { l, err = c.loader(ctx, k.key); w = c.weighLoaded(k.key, l, err) }, func(failure error) {
				if failure != nil {
					l, err = Loaded[V]{}, failure
					if p, ok := failure.(*timingwheel.PanicError); ok && perr == nil {
						perr = p
					}
				} else if err == nil && l.Err != nil {
					err = l.Err
				}
				next++
				c.complete(k.s, k.key, k.h, k.cl, l, err, w, begin, true)
			})
		}
		if perr != nil {
			panic(perr)
		}
		return
	}
	keys := make([]K, len(mine))
	for i, k := range mine {
		keys[i] = k.key
	}
	c.lc.bulkLoads.Add(1)
	begin := c.now()
	var m map[K]Loaded[V]
	var err error
	var weights []int64 // of mine's values, in order; nil without a Weigher
	guard[K](nil, true, func() {
		m, err = c.bulk(ctx, keys)
		if c.weigher != nil {
			weights = make([]int64, len(mine))
			for i, k := range mine {
				if l, ok := m[k.key]; ok {
					weights[i] = c.weighLoaded(k.key, l, nil)
				}
			}
		}
	}, func(failure error) {
		if failure != nil {
			m, err = nil, failure
		}
		for next < len(mine) {
			k := mine[next]
			w := int64(1)
			if weights != nil {
				w = weights[next]
			}
			next++
			l, ok := m[k.key]
			kerr := err
			switch {
			case ok && l.Err != nil:
				kerr = l.Err
			case ok:
				kerr = nil
			case err == nil:
				l.NotFound = true
			}
			c.complete(k.s, k.key, k.h, k.cl, l, kerr, w, begin, next == 1)
		}
	})
}
