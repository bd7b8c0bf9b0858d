package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

var (
	// ErrNotFound is what Load returns for a key the loader reported as
	// not found (Loaded.NotFound), freshly or from memory (see
	// Options.NotFoundTTL), and what a Take that shared such a load
	// returns. LoadAll leaves such keys out of its result instead.
	ErrNotFound = errors.New("cache: not found")
	// ErrNoLoader is returned by Load and LoadAll on a cache without
	// Options.Loader and Options.BulkLoader.
	ErrNoLoader = errors.New("cache: no Loader or BulkLoader in Options")
)

// Loaded is what a loader returns for one key: a value, or not found,
// each with how long to keep it.
type Loaded[V any] struct {
	// Value is the key's value. It is ignored when NotFound or Err is set.
	Value V
	// TTL is how long to keep the result. 0 means the default:
	// Options.TTL for a value, Options.NotFoundTTL for NotFound. A
	// positive TTL is used instead (Jitter applies, as for SetWithExpire):
	// this is how a loader gives each entry the expiry its source says. A
	// negative TTL returns the result to the callers without keeping it.
	TTL time.Duration
	// NotFound reports that the key has no value at the source. Load
	// returns ErrNotFound, LoadAll leaves the key out, and, in a cache
	// with Options.NotFoundTTL, the answer is remembered for TTL.
	NotFound bool
	// Err fails the load of this key alone: its callers receive Err and
	// nothing is kept. For a BulkLoader it is the per-key error; for a
	// Loader it is the same as returning Err as the error.
	Err error
}

// KeyErrors is the error LoadAll returns when the loads of some keys
// failed: the error of each such key. Keys absent from both LoadAll's
// values and its KeyErrors were not found.
type KeyErrors[K comparable] map[K]error

// Error lists the failed keys and their errors, sorted by key text.
func (e KeyErrors[K]) Error() string {
	lines := make([]string, 0, len(e))
	for k, err := range e {
		lines = append(lines, fmt.Sprintf("%v: %v", k, err))
	}
	slices.Sort(lines)
	return fmt.Sprintf("cache: %d keys failed to load: %s", len(e), strings.Join(lines, "; "))
}

// Unwrap returns the keys' errors, so that errors.Is(err, context.Canceled)
// tells whether any key failed for that reason.
func (e KeyErrors[K]) Unwrap() []error {
	errs := make([]error, 0, len(e))
	for _, err := range e {
		errs = append(errs, err)
	}
	return errs
}

// loadFunc loads one key: Take's fetch, or the configured loader bound to
// a key.
type loadFunc[V any] func(ctx context.Context) (Loaded[V], error)

// Load returns the live value stored for key; if there is none, it loads
// it with Options.Loader (or Options.BulkLoader, with one key), stores it
// and returns it. Concurrent Loads, Takes and LoadAlls of one key share
// one load: the first caller runs the loader with its ctx, the others
// wait for its result, each until its own ctx is done (then it returns
// ctx.Err() and the load goes on for the others).
//
// A key the loader reported as not found yields ErrNotFound, and so does
// every Load of it for NotFoundTTL after, without a load. A loader error
// is returned to every waiter and not kept. A panic in the loader reaches
// the waiters as a *timingwheel.PanicError, and the goroutine that ran it re-panics
// with it. A Set or Delete of key during the load wins over the loaded
// result, which is returned but not stored. Without a loader Load returns
// ErrNoLoader; after Close, ErrClosed. A hit costs what Get does.
func (c *Cache[K, V]) Load(ctx context.Context, key K) (V, error) {
	if c.c.loader == nil && c.c.bulk == nil {
		var zero V
		return zero, ErrNoLoader
	}
	return c.c.obtain(ctx, key, c.c.loaderFor(key))
}

// loaderFor binds the configured loader to key.
func (c *cache[K, V]) loaderFor(key K) loadFunc[V] {
	if c.loader != nil {
		return func(ctx context.Context) (Loaded[V], error) { return c.loader(ctx, key) }
	}
	return func(ctx context.Context) (Loaded[V], error) {
		c.lc.bulkLoads.Add(1)
		m, err := c.bulk(ctx, []K{key})
		if l, ok := m[key]; ok {
			return l, nil
		}
		return Loaded[V]{NotFound: err == nil}, err
	}
}

// obtain is the load-through of Take and Load: the live value, a
// remembered not-found, a share of a load in flight, or a load of its own
// with fn.
func (c *cache[K, V]) obtain(ctx context.Context, key K, fn loadFunc[V]) (V, error) {
	h := c.hash(key)
	for {
		v, cl, own, err := c.claim(key, h)
		switch {
		case cl == nil:
			return v, err
		case own:
			return c.loadOne(ctx, c.shardFor(h), key, h, cl, fn)
		}
		if v, err, retry := c.await(ctx, cl); !retry {
			return v, err
		}
	}
}

// claim looks key (whose hash is h) up for a load-through and counts the
// lookup, unless it returns a call to wait for. It returns one of:
//
//   - the live value, or ErrNotFound for a remembered not-found, or
//     ErrClosed (cl nil);
//   - a new call the caller must run and complete (own set), registered
//     as the key's load in flight unless the key cannot be stored;
//   - the call in flight for the key, to await (own clear).
func (c *cache[K, V]) claim(key K, h uint64) (v V, cl *call[V], own bool, err error) {
	if v, _, ok := c.lookup(key, h, true); ok {
		c.reads.hit()
		return v, nil, false, nil
	}
	if c.notFound(key) {
		c.reads.hit()
		c.lc.notFoundHits.Add(1)
		return v, nil, false, ErrNotFound
	}
	s := c.shardFor(h)
	if c.unstorable(key) {
		// No later caller could find this load, nor the entry it would
		// store: load for this caller alone, store nothing.
		select {
		case <-c.closed:
			return v, nil, false, ErrClosed
		default:
		}
		c.reads.miss()
		return v, &call[V]{done: make(chan struct{}), stale: true}, true, nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return v, nil, false, ErrClosed
	}
	now := c.now()
	if n := s.tab.Get(key, h); n != nil && deadlineOf(n.settled()) > now { // now first: see settled
		// Stored since the lookup.
		v = s.valueOf(n)
		s.mu.Unlock()
		c.reads.hit()
		return v, nil, false, nil
	}
	if cl = s.calls[key]; cl != nil {
		s.mu.Unlock()
		return v, cl, false, nil
	}
	c.reads.miss()
	cl = &call[V]{done: make(chan struct{})}
	s.startCallLocked(key, cl)
	s.mu.Unlock()
	return v, cl, true, nil
}

// await waits for cl, a call another caller runs, until ctx is done, and
// counts the lookup. retry reports that cl was a Compute, after which the
// caller looks the key up again (and counts nothing yet).
func (c *cache[K, V]) await(ctx context.Context, cl *call[V]) (v V, err error, retry bool) {
	select {
	case <-cl.done:
	case <-ctx.Done():
		c.lc.waits.Add(1)
		c.reads.miss()
		return v, ctx.Err(), false
	}
	if cl.compute {
		return v, nil, true
	}
	c.lc.waits.Add(1)
	v, err = c.waited(cl)
	return v, err, false
}

// waited counts a lookup that waited for cl and returns cl's result.
func (c *cache[K, V]) waited(cl *call[V]) (V, error) {
	if cl.err != nil {
		c.reads.miss()
	} else {
		c.reads.hit()
	}
	return cl.result()
}

// result is what the callers of a finished load receive.
func (cl *call[V]) result() (V, error) {
	if cl.notFound && cl.err == nil {
		var zero V
		return zero, ErrNotFound
	}
	return cl.val, cl.err
}

// loadOne runs fn for the waiters of cl, keeps the result, and releases
// the waiters whether fn returns, panics or exits its goroutine. A panic
// is re-raised, as a *timingwheel.PanicError, once the waiters have it.
func (c *cache[K, V]) loadOne(ctx context.Context, s *shard[K, V], key K, h uint64, cl *call[V], fn loadFunc[V]) (V, error) {
	begin := c.now() // for Stats.LoadTime
	var l Loaded[V]
	var err error
	var w int64
	guard(&key, true, func() { l, err = fn(ctx); w = c.weighLoaded(key, l, err) }, func(failure error) {
		if failure != nil {
			l, err = Loaded[V]{}, failure
		} else if err == nil && l.Err != nil {
			err = l.Err
		}
		c.complete(s, key, h, cl, l, err, w, begin, true)
	})
	return cl.result()
}

// guard calls f, then done with nil; if f panics, done gets a
// *timingwheel.PanicError for key (keyed by nil when key is nil, for a bulk
// load), and guard re-panics with it when repanic is set; if f exits its
// goroutine (runtime.Goexit), done gets one of timingwheel.ErrGoexit and
// the exit goes on. key is boxed only then, so a load allocates nothing for it.
func guard[K any](key *K, repanic bool, f func(), done func(failure error)) {
	returned := false
	var perr *timingwheel.PanicError
	defer func() {
		switch {
		case perr != nil:
			done(perr)
			if repanic {
				panic(perr)
			}
		case !returned:
			done(goexitError(key))
		default:
			done(nil)
		}
	}()
	func() {
		defer func() {
			if !returned {
				if r := recover(); r != nil {
					perr = &timingwheel.PanicError{Value: r, Stack: debug.Stack()}
					if key != nil {
						perr.Key = *key
					}
				}
			}
		}()
		f()
		returned = true
	}()
}

// goexitError is what the waiters of a load of key (nil: of a bulk load)
// receive when the loader called runtime.Goexit, as t.FailNow does,
// instead of returning: the module's one panic report, with the Value
// timingwheel.ErrGoexit and the stack of the exiting goroutine.
func goexitError[K any](key *K) *timingwheel.PanicError {
	e := &timingwheel.PanicError{Value: timingwheel.ErrGoexit, Stack: debug.Stack()}
	if key != nil {
		e.Key = *key
	}
	return e
}

// weighLoaded returns the weight of l.Value, loaded for key with error err,
// for complete: 0 if it is not to be kept (the load failed or found
// nothing, l.TTL says not to keep it, key is not equal to itself, or the
// value is too heavy, see Options.MaxWeight). A load calls it inside its
// guard, as part of the load, so that a Weigher that panics or calls
// runtime.Goexit fails the load as its loader would, and the load's call
// is released.
func (c *cache[K, V]) weighLoaded(key K, l Loaded[V], err error) int64 {
	if err != nil || l.Err != nil || l.NotFound || l.TTL < 0 || c.unstorable(key) {
		return 0
	}
	if w, ok := c.weigh(key, l.Value); ok {
		return w
	}
	return 0
}

// complete keeps the result of a load of key (l, of weight w, see
// weighLoaded, or the failure err), counts it, and wakes its waiters.
// begin is when the loader was called;
// timed says whether this load's duration counts in LoadTime (a bulk load
// counts once). A load overtaken by a write (cl.stale), or finishing after
// Close, keeps nothing.
//
// The shard lock is held to end the call and store the result, so that a
// caller that finds no call in flight finds the result instead; a
// not-found result goes to the not-found cache under the same hold (its
// shard lock nests inside this one, never the other way).
func (c *cache[K, V]) complete(s *shard[K, V], key K, h uint64, cl *call[V], l Loaded[V], err error, w int64, begin int64, timed bool) {
	var p pending[K, V]
	var np pending[K, struct{}]
	now := c.now()
	s.mu.Lock()
	if !cl.stale {
		s.endCallLocked(key)
	}
	keep := !cl.stale && !s.closed
	s.loads++
	if timed {
		s.loadTime.Observe(time.Duration(now - begin))
	}
	switch {
	case err != nil:
		s.loadErrors++
	case l.NotFound:
		c.lc.loadsNotFound.Add(1)
		if keep {
			if cl.refresh {
				// The source no longer has the key: its old value goes.
				s.deleteLocked(key, h, now, &p)
			}
			if ttl := l.TTL; ttl >= 0 && c.neg != nil {
				if ttl == 0 {
					ttl = c.negTTL
				}
				if ttl > 0 {
					c.putNotFoundLocked(key, ttl, &np)
				}
			}
		}
	default:
		ttl := l.TTL
		if ttl == 0 {
			ttl = c.ttl
		}
		if keep && ttl > 0 && w > 0 { // w 0: not to keep (see weighLoaded), a value too heavy included
			s.setLocked(key, h, l.Value, w, now, dueAt(now, c.lifetime(ttl)), &p)
			c.forgetNotFoundLocked(key, &np)
		}
	}
	s.unlock(&p)
	cl.val, cl.err, cl.notFound = l.Value, err, l.NotFound && err == nil
	if err != nil || cl.notFound {
		var zero V
		cl.val = zero
	}
	close(cl.done)
	c.finish(&p)
	if c.neg != nil {
		c.neg.finish(&np)
	}
}

// loading is the state of the loading features (this file, bulk.go,
// refresh.go, negative.go), set by New and read-only after, but for the
// counters and the refresher.
type loading[K comparable, V any] struct {
	loader         func(context.Context, K) (Loaded[V], error)
	bulk           func(context.Context, []K) (map[K]Loaded[V], error)
	onRefreshError func(RefreshError[K, V])

	// neg remembers not-found answers for negTTL (Options.NotFoundTTL);
	// nil when negTTL is 0. negW is its Cache, kept so that its cleanup
	// never runs while this cache uses it.
	neg    *cache[K, struct{}]
	negW   *Cache[K, struct{}]
	negTTL time.Duration

	// onRead: lookups that are uses call read (sliding or refreshDue).
	onRead  bool
	sliding bool // Options.ExpireAfterAccess
	// refreshDue: an entry with at most this much time left (nanoseconds)
	// is due for refresh: TTL - RefreshAfter.
	refreshDue int64
	refr       refresher[K]

	lc loadCounters
}

// initLoading sets up the loading features from o, once c.seed and c.ttl
// are set.
func (c *cache[K, V]) initLoading(o *Options[K, V]) {
	c.loader, c.bulk, c.onRefreshError = o.Loader, o.BulkLoader, o.OnRefreshError
	c.sliding = o.ExpireAfterAccess
	c.refreshDue = refreshDue(o.TTL, o.RefreshAfter)
	c.onRead = o.ExpireAfterAccess || o.RefreshAfter > 0
	if o.NotFoundTTL > 0 {
		c.negTTL = o.NotFoundTTL
		c.negW = newNotFound(o)
		c.neg = c.negW.c
	}
	if c.loader != nil || c.bulk != nil {
		c.refr.tab.InitSeed(refreshKeyOf[K], 0, c.seed)
		c.refr.ctx, c.refr.cancel = context.WithCancel(context.Background())
	}
}

// closeLoading stops the loading features: background reloads (waited for
// with wait) and the not-found cache.
func (c *cache[K, V]) closeLoading(wait bool) {
	c.refr.mu.Lock()
	c.refr.closed = true
	c.refr.mu.Unlock()
	if c.refr.cancel != nil {
		c.refr.cancel()
	}
	if wait {
		c.refr.wg.Wait()
	}
	if c.neg != nil {
		c.neg.close(wait)
	}
}
