package cache

import (
	"sync"
	"sync/atomic"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// node is one entry, and the only per-entry allocation besides the map
// slot: the wheel Timer, the LRU links, the deadline and access mark, the
// key and the value live together.
//
// Ownership. timer's links and deadline belong to the wheel's owner
// goroutine; timer.Value (the back pointer) and key are written once before
// the node is published and never change. prev, next, value and the
// deadline half of stamp are guarded by the shard lock (written with it held
// exclusively). The access bit of stamp is set by readers holding the lock
// shared, atomically, and cleared by writers holding it exclusively.
type node[K comparable, V any] struct {
	timer timingwheel.Timer[*node[K, V]]

	// prev and next link the shard's LRU list; both nil once the node has
	// left the cache (it is dead, and never comes back).
	prev, next *node[K, V]

	// stamp is deadline<<1 | accessed, where deadline is in nanoseconds
	// since the cache's origin.
	stamp atomic.Int64

	key   K
	value V
}

func (n *node[K, V]) deadline() int64 { return n.stamp.Load() >> 1 }

// live reports whether n is still in its shard.
func (n *node[K, V]) live() bool { return n.prev != nil }

// shard is one lock's worth of the cache: a map from key to node, an LRU
// list through the nodes, the in-flight loads, and the counters.
type shard[K comparable, V any] struct {
	mu sync.RWMutex
	// hits and misses are bumped by readers under mu held shared; they sit
	// on the lock's cache line, which a reader writes anyway.
	hits, misses atomic.Uint64

	// Guarded by mu.
	m      map[K]*node[K, V]
	lru    node[K, V] // sentinel: lru.next is the most recently written
	limit  int        // 0 = unbounded
	calls  map[K]*call[V]
	closed bool

	loads, loadErrors                   uint64
	expired, evicted, deleted, replaced uint64

	_ [64]byte // keep the next shard's lock off this shard's last line
}

func (s *shard[K, V]) init(limit int) {
	s.m = make(map[K]*node[K, V])
	s.lru.next, s.lru.prev = &s.lru, &s.lru
	s.limit = limit
}

// pushFrontLocked links an unlinked n at the head of the LRU list.
func (s *shard[K, V]) pushFrontLocked(n *node[K, V]) {
	n.prev = &s.lru
	n.next = s.lru.next
	s.lru.next.prev = n
	s.lru.next = n
}

func (s *shard[K, V]) unlinkLocked(n *node[K, V]) {
	n.prev.next = n.next
	n.next.prev = n.prev
	n.prev, n.next = nil, nil
}

func (s *shard[K, V]) moveToFrontLocked(n *node[K, V]) {
	if s.lru.next == n {
		return
	}
	s.unlinkLocked(n)
	s.pushFrontLocked(n)
}

// removeLocked takes n out of the shard, counts it under reason and
// returns its value, which the node no longer holds: a dead node still
// referenced by the wheel pins neither the value nor its LRU neighbours.
func (s *shard[K, V]) removeLocked(n *node[K, V], reason Reason) V {
	delete(s.m, n.key)
	s.unlinkLocked(n)
	v := n.value
	var zero V
	n.value = zero
	s.count(reason)
	return v
}

func (s *shard[K, V]) count(reason Reason) {
	switch reason {
	case Expired:
		s.expired++
	case Evicted:
		s.evicted++
	case Deleted:
		s.deleted++
	case Replaced:
		s.replaced++
	}
}

// victimLocked picks the entry to evict from a full shard, CLOCK style:
// starting at the LRU tail, an unexpired entry read since it was written
// (or last spared) loses its mark and moves to the head; the first entry
// without a mark, or already expired, is the victim. Each entry is spared
// at most once per call, so the loop ends within len+1 steps; the marks it
// clears were each paid for by a read. The shard must not be empty.
func (s *shard[K, V]) victimLocked(now int64) (*node[K, V], Reason) {
	for {
		n := s.lru.prev
		st := n.stamp.Load()
		if st>>1 <= now {
			return n, Expired
		}
		if st&1 == 0 {
			return n, Evicted
		}
		n.stamp.Store(st &^ 1)
		s.moveToFrontLocked(n)
	}
}

// pending is the work a locked mutation leaves for after the unlock:
// at most one timer to arm, one to cancel and one event to deliver.
type pending[K comparable, V any] struct {
	arm      *node[K, V]
	armDelay int64
	cancel   *node[K, V]
	event    Event[K, V]
}

// setLocked stores value for key with the given deadline (> now), as Set
// does, and reports what must happen after the unlock. now and deadline are
// nanoseconds since the cache's origin.
func (s *shard[K, V]) setLocked(key K, value V, now, deadline int64, p *pending[K, V]) {
	s.staleLoadLocked(key)
	if n := s.m[key]; n != nil {
		old := n.stamp.Load() >> 1
		p.event = Event[K, V]{Key: key, Value: n.value, Reason: Replaced}
		if old <= now {
			p.event.Reason = Expired
		}
		s.count(p.event.Reason)
		n.value = value
		n.stamp.Store(deadline << 1)
		s.moveToFrontLocked(n)
		if deadline < old {
			// Earlier than the timer may be armed for: re-arm it. A later
			// deadline is left to the expiry callback, which re-arms the
			// timer for the remainder when it fires early.
			p.arm, p.armDelay = n, deadline-now
		}
		return
	}
	if s.limit > 0 && len(s.m) >= s.limit {
		v, reason := s.victimLocked(now)
		p.event = Event[K, V]{Key: v.key, Reason: reason}
		p.event.Value = s.removeLocked(v, reason)
		p.cancel = v
	}
	n := &node[K, V]{key: key, value: value}
	n.timer.Value = n
	n.stamp.Store(deadline << 1)
	s.m[key] = n
	s.pushFrontLocked(n)
	p.arm, p.armDelay = n, deadline-now
}

// deleteLocked removes key if present and reports what must happen after
// the unlock; ok is false when there was nothing to remove.
func (s *shard[K, V]) deleteLocked(key K, now int64, p *pending[K, V]) (ok bool) {
	s.staleLoadLocked(key)
	n := s.m[key]
	if n == nil {
		return false
	}
	reason := Deleted
	if n.deadline() <= now {
		reason = Expired
	}
	p.event = Event[K, V]{Key: key, Reason: reason}
	p.event.Value = s.removeLocked(n, reason)
	p.cancel = n
	return true
}

// staleLoadLocked marks a load in flight for key, if any, as overtaken by
// a write: its result is still handed to its callers but not stored, and
// a later Take of key starts a new load instead of joining it.
func (s *shard[K, V]) staleLoadLocked(key K) {
	if len(s.calls) == 0 {
		return
	}
	if c := s.calls[key]; c != nil {
		c.stale = true
		delete(s.calls, key)
	}
}
