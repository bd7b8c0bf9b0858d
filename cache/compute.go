package cache

import "fmt"

// Action is what a Compute function decides for its key. The zero Action
// is invalid.
type Action uint8

const (
	// Keep leaves the key as it was: its value, if any, and its deadline.
	Keep Action = iota + 1
	// Store stores the returned value with the default TTL, as Set does.
	Store
	// Remove removes the key's entry, if any, as Delete does.
	Remove
)

// String returns the action's name, such as "Store".
func (a Action) String() string {
	switch a {
	case Keep:
		return "Keep"
	case Store:
		return "Store"
	case Remove:
		return "Remove"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Compute atomically reads, changes and writes key's entry: it calls fn
// with the live value and true (or the zero V and false if there is
// none), then does what fn's Action says, and returns the value key then
// holds and whether it holds one. fn runs exactly once per call, on the
// calling goroutine.
//
// Computes of one key run one at a time, and never beside a load of the
// key (Take, Load, LoadAll, a refresh): a Compute waits for the one in
// flight to finish, a load waits for a Compute and then looks again. This
// holds because a Compute registers itself as the key's call in flight,
// under the shard lock, before it reads the value. While fn runs, no lock
// is held: other keys, and Get, Peek and Set of this one, go on. A Set,
// Delete or Clear of key while fn runs wins, as it does over a load: fn's
// Store or Remove is then dropped (as if it had happened just before that
// write) and not reported to OnEvict, and Compute returns what fn decided.
// Such a write also releases the key, so the next Compute or load may
// start while fn still runs; only one of them can apply its decision.
//
// A Store counts in Stats.Sets; a Compute counts neither as a hit nor as
// a miss. fn must not call Compute, Take, Load or LoadAll for the same
// key (it would wait for itself). If fn, or Options.Weigher weighing the
// value fn stores, panics or exits its goroutine, nothing changes, the key
// is released, and the panic goes on as a *timingwheel.PanicError. A
// Store of a value heavier than one entry may be (see Options.MaxWeight)
// stores nothing and removes the key's entry, as Set does. An Action
// other than Keep, Store and Remove panics after releasing the key. After
// Close, and for a key not equal to itself (see Cache), fn is not called
// and Compute returns the zero V and false.
func (c *Cache[K, V]) Compute(key K, fn func(old V, found bool) (V, Action)) (V, bool) {
	return c.c.compute(key, fn)
}

func (c *cache[K, V]) compute(key K, fn func(V, bool) (V, Action)) (V, bool) {
	var zero V
	if c.unstorable(key) {
		return zero, false
	}
	h := c.hash(key)
	s := c.shardFor(h)
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return zero, false
		}
		if cl := s.calls[key]; cl != nil {
			s.mu.Unlock()
			<-cl.done
			continue
		}
		// Counted before the entry is read, for overwrites without the
		// lock (see cache.overwrite); the clock is read before the stamp
		// (see settled).
		cl := &call[V]{done: make(chan struct{}), compute: true}
		s.startCallLocked(key, cl)
		old, found := zero, false
		now := c.now()
		if n := s.tab.Get(key, h); n != nil && deadlineOf(n.settled()) > now {
			old, found = s.valueOf(n), true
		}
		s.mu.Unlock()
		return c.runCompute(s, key, h, cl, old, found, fn)
	}
}

// runCompute calls fn and applies its decision, unless a write overtook
// it; it always releases the key.
func (c *cache[K, V]) runCompute(s *shard[K, V], key K, h uint64, cl *call[V], old V, found bool, fn func(V, bool) (V, Action)) (v V, ok bool) {
	var a Action
	w, fits := int64(1), true
	guard(&key, true, func() {
		v, a = fn(old, found)
		if a == Store {
			// Inside the guard: a Weigher that panics or exits fails the
			// Compute as fn would, and the key is released.
			w, fits = c.weigh(key, v)
		}
	}, func(failure error) {
		var p pending[K, V]
		var np pending[K, struct{}]
		now := c.now()
		s.mu.Lock()
		apply := !cl.stale && !s.closed && failure == nil
		if !cl.stale {
			s.endCallLocked(key)
		}
		if apply {
			switch a {
			case Store:
				if fits {
					s.setLocked(key, h, v, w, now, dueAt(now, c.lifetime(c.ttl)), &p)
				} else {
					// Too heavy: stored nothing, and the old value goes, as for Set.
					s.deleteLocked(key, h, now, &p)
				}
				c.forgetNotFoundLocked(key, &np)
			case Remove:
				s.deleteLocked(key, h, now, &p)
				c.forgetNotFoundLocked(key, &np)
			}
		}
		s.unlock(&p)
		close(cl.done)
		c.finish(&p)
		if c.neg != nil {
			c.neg.finish(&np)
		}
	})
	switch a {
	case Keep:
		return old, found
	case Store:
		return v, true
	case Remove:
		var zero V
		return zero, false
	}
	panic(fmt.Sprintf("cache: Compute function returned %v, want Keep, Store or Remove", a))
}
