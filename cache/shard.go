package cache

import (
	"sync"
	"sync/atomic"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// node is one entry, and the only per-entry allocation besides the map
// slot: the wheel Timer, the LRU links, the deadline and flags, the key and
// the value live together.
//
// Ownership. timer's links and deadline belong to the wheel's owner
// goroutine; timer.Value (the back pointer) and sh are written once before
// the node is published and never change. key, prev, next and value are
// guarded by the shard lock, and so are the deadline and dead bits of
// stamp (written with the lock held exclusively, atomically, because arm
// reads them without it). The mark bit is set by readers holding the lock
// shared, atomically, and cleared by writers holding it exclusively.
//
// Identity. A node leaves the cache either dead (removed by Delete or by
// expiry, and then never used again) or recycled: an insertion into a full
// shard takes over its victim's node and re-arms its timer. Both are safe
// because the expiry callback trusts nothing but the node's state under the
// lock.
type node[K comparable, V any] struct {
	timer timingwheel.Timer[*node[K, V]]

	// prev and next link the shard's LRU list; both nil once the node is
	// dead (it never comes back).
	prev, next *node[K, V]

	// sh is the node's shard, so the expiry callback can lock it without
	// reading key, which a recycling writer may be changing.
	sh *shard[K, V]

	// stamp is deadline<<stampShift | dead | mark, where deadline is in
	// nanoseconds since the cache's origin (see the bit constants).
	stamp atomic.Int64

	key   K
	value V
}

const (
	// markBit is the access mark: set by a read, cleared by a write or a
	// second chance.
	markBit = 1
	// deadBit is set when the node leaves the cache for good.
	deadBit    = 2
	stampShift = 2
)

func (n *node[K, V]) deadline() int64 { return n.stamp.Load() >> stampShift }

// live reports whether n is still in its shard.
func (n *node[K, V]) live() bool { return n.prev != nil }

// setDeadlineLocked sets the deadline and clears the mark (and the dead
// bit of a recycled node).
func (n *node[K, V]) setDeadlineLocked(d int64) { n.stamp.Store(d << stampShift) }

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

// killLocked marks a node that left the cache as dead for good, for arm's
// lock-free recheck. A recycled node never gets the bit, not even for a
// moment: its stamp goes straight from the old deadline to the new one.
func (n *node[K, V]) killLocked() { n.stamp.Store(n.stamp.Load() | deadBit) }

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
		if st>>stampShift <= now {
			return n, Expired
		}
		if st&markBit == 0 {
			return n, Evicted
		}
		n.stamp.Store(st &^ markBit)
		s.moveToFrontLocked(n)
	}
}

// pending is the work a locked mutation leaves for after the unlock: at
// most one timer to arm, one to cancel and one event to deliver.
type pending[K comparable, V any] struct {
	arm     *node[K, V] // arm it to fire by armAt
	armAt   int64       // deadline, nanoseconds since origin
	armFrom int64       // the time armAt was decided at
	cancel  *node[K, V]
	event   Event[K, V]
}

// setLocked stores value for key with the given deadline (> now), as Set
// does, and reports what must happen after the unlock. now and deadline are
// nanoseconds since the cache's origin.
func (s *shard[K, V]) setLocked(key K, value V, now, deadline int64, p *pending[K, V]) {
	s.staleLoadLocked(key)
	if n := s.m[key]; n != nil {
		old := n.deadline()
		p.event = Event[K, V]{Key: key, Value: n.value, Reason: Replaced}
		if old <= now {
			p.event.Reason = Expired
		}
		s.count(p.event.Reason)
		n.value = value
		n.setDeadlineLocked(deadline)
		s.moveToFrontLocked(n)
		if deadline < old {
			// Earlier than the timer may be armed for: re-arm it. A later
			// deadline is left to the expiry callback, which re-arms the
			// timer for the remainder when it fires early.
			p.arm, p.armAt, p.armFrom = n, deadline, now
		}
		return
	}
	var n *node[K, V]
	if s.limit > 0 && len(s.m) >= s.limit {
		// Recycle the victim's node: its timer is armed (or about to be),
		// so one Schedule re-arms it for the new deadline, and neither a
		// Cancel nor an allocation is needed.
		v, reason := s.victimLocked(now)
		p.event = Event[K, V]{Key: v.key, Reason: reason}
		p.event.Value = s.removeLocked(v, reason)
		n = v
		n.key, n.value = key, value
	} else {
		n = &node[K, V]{key: key, value: value, sh: s}
		n.timer.Value = n
	}
	n.setDeadlineLocked(deadline)
	s.m[key] = n
	s.pushFrontLocked(n)
	p.arm, p.armAt, p.armFrom = n, deadline, now
}

// touchLocked gives key's live entry the new deadline (> now) without
// changing its value, as a read that also restarts the TTL, and reports
// whether there was a live entry. An expired or missing entry is left to
// Set: touching never brings a value back.
func (s *shard[K, V]) touchLocked(key K, now, deadline int64, p *pending[K, V]) bool {
	n := s.m[key]
	if n == nil {
		return false
	}
	old := n.deadline()
	if old <= now {
		return false
	}
	n.stamp.Store(deadline<<stampShift | markBit) // touched: recently used
	if deadline < old {
		p.arm, p.armAt, p.armFrom = n, deadline, now // see setLocked
	}
	return true
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
	n.killLocked()
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
