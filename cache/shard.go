package cache

import (
	"hash/maphash"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ttlkit/ttlkit/internal/hist"
	"github.com/ttlkit/ttlkit/internal/table"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// node is one entry: its wheel timer (whose payload is the key), the
// policy's queue links, the deadline and flags, the policy's read counter
// and the value live together in one allocation, and its index slot in
// the shard's table. Nothing else is allocated per entry, but a box for a
// value written over another (see Value).
//
// Identity. A node belongs to one key for its whole life: the key is
// written before the node is published (in the table, with an atomic
// store) and never changes, so a lock-free reader that finds a node by its
// key can trust n.key(). A node leaves the cache dead (removed by Delete,
// by an eviction or by expiry) and is never used again; nodes are not
// recycled, and neither are their timers.
//
// Timer. The wheel links the node into its slots through timer, and hands
// timer back to the expiry callback, which finds the node at the same
// address (timer is the first field; see nodeOf) and its shard from the
// key's hash: no back pointer, no second allocation. The Timer's payload,
// timer.Value, is the key itself.
//
// Value. val points to the current value, and is nil once the node is
// dead. For a V without pointers the first value is stored inline, in the
// value field of an inlineNode whose first field is the node, and val
// points there; every later value (an overwrite), and every value of a V
// with pointers, is a separate box that an overwrite replaces with one
// atomic store. A node of a V with pointers is a bare node, with no inline
// field it would never use (a []byte value would leave 24 bytes of every
// node empty). A box, once published, is never written again, so a reader
// that loaded val copies a value that no writer touches: never torn, never
// another key's. The inline value is never written after publication
// either; it outlives an overwrite only for V without pointers, where it
// pins no other memory. Either way a value is reached only through val,
// so no code but newNodeLocked knows which shape a node has.
//
// Ownership. The key and value are written once before the node is
// published and never change. timer's links and deadline belong to the
// wheel's owner goroutine. prev, next and meta are guarded by the shard
// lock. val and stamp are written with the shard lock held, atomically,
// because readers, arm and the expiry callback load them without it. reads
// is incremented by readers without any lock (see noteRead) and reset by
// the policy under the lock.
//
// Size. A node is the Timer, the links (16 bytes), and stamp, val, reads
// and meta (24). For uint64 keys and values it is 72 bytes, 80 as an
// inlineNode with its value, one size class of the allocator (a node of 64
// and an expiry of 48 took 112). For string keys and []byte values it is
// 80 bytes plus a 24-byte box, where a node with an unused inline field
// took 112.
type node[K comparable, V any] struct {
	// timer must stay the first field: nodeOf converts its address.
	timer timingwheel.Timer[K]

	// prev and next link the node into its queue (see policy.go); both
	// nil once the node is dead (it never comes back).
	prev, next *node[K, V]

	// stamp is deadline<<stampShift | dead, where deadline is in
	// nanoseconds since the cache's origin (see the bit constants).
	stamp atomic.Int64

	val   atomic.Pointer[V] // the current value; nil once dead
	reads atomic.Uint32     // reads since the policy last looked, saturating
	meta  uint32            // weight<<2 | queue
}

// inlineNode is the shape of a node for a V without pointers: the node
// and, after it, its first value, which the node's val points to (see
// node). Only newNodeLocked names it; everything else holds the *node.
type inlineNode[K comparable, V any] struct {
	node  node[K, V] // first field: a *node is the inlineNode's address
	value V          // the first value; never written after publication
}

// nodeOf returns the node whose timer t is. Every Timer the cache's
// Scheduler holds is the first field of a node, so the node starts at the
// Timer's address (and the conversion stays within the node's
// allocation, as the checkptr instrumentation of -race verifies).
func nodeOf[K comparable, V any](t *timingwheel.Timer[K]) *node[K, V] {
	return (*node[K, V])(unsafe.Pointer(t))
}

// key returns the node's key.
func (n *node[K, V]) key() K { return n.timer.Value }

const (
	// deadBit is set when the node leaves the cache for good.
	deadBit    = 2
	stampShift = 2
)

func nodeKey[K comparable, V any](n *node[K, V]) K { return n.key() }

func (n *node[K, V]) deadline() int64 { return n.stamp.Load() >> stampShift }

// live reports whether n is still in its shard. Shard lock held.
func (n *node[K, V]) live() bool { return n.prev != nil }

// setDeadlineLocked sets the deadline.
func (n *node[K, V]) setDeadlineLocked(d int64) { n.stamp.Store(d << stampShift) }

// replaceLocked makes box, with deadline d, the live node's value instead
// of the one with deadline old. The stamp never exceeds the deadline of
// the value val points to: an earlier deadline is stored before the new
// value, and a later one after it. A lock-free reader that loads the stamp
// between two loads of val that agree (see cache.lookup) therefore never
// pairs a value with a later deadline than its own.
func (n *node[K, V]) replaceLocked(box *V, old, d int64) {
	if d < old {
		n.setDeadlineLocked(d)
	}
	n.val.Store(box)
	n.setDeadlineLocked(d)
}

// killLocked marks a node that left the cache as dead for good, for arm's
// lock-free recheck, and drops its value: a dead node that the wheel or a
// reader still references pins no boxed value.
func (n *node[K, V]) killLocked() {
	n.val.Store(nil)
	n.stamp.Or(deadBit)
}

// shard is one lock's worth of the cache: an index from key to node
// (lock-free for readers), the eviction policy's queues through the nodes
// (see policy.go), the in-flight loads, and the write counters.
type shard[K comparable, V any] struct {
	mu sync.Mutex

	// tab is read without the lock by Get, Take and Touch's fast paths;
	// written only with mu held.
	tab table.Table[K, node[K, V]]

	// Guarded by mu.
	q       [3]node[K, V]  // sentinels of the window, probation and protected queues; unbounded shards use the window only
	held    [3]int64       // weight in each queue
	limit   int64          // the shard's share of Limit or MaxWeight; 0 = unbounded
	weighed bool           // weights come from a Weigher
	sk      sketch         // made when a bounded shard is half full
	inserts int            // new keys since the last climb
	spares  int            // what makeRoomLocked may still spare
	inline  bool           // V has no pointers: first values go inline
	calls   map[K]*call[V] // loads in flight; nil when none since a burst
	peak    int            // most loads in flight since calls was made
	closed  bool

	// frac is the cache's window share (climber.frac); set once.
	frac *atomic.Int64

	loads, loadErrors, sets             uint64
	expired, evicted, deleted, replaced uint64
	loadTime                            hist.Counts

	_ [64]byte // keep the next allocation off this shard's last line
}

func (s *shard[K, V]) init(limit int64, weighed, inline bool, seed maphash.Seed, frac *atomic.Int64) {
	s.tab.InitSeed(nodeKey[K, V], 0, seed)
	s.resetQueuesLocked()
	s.limit = limit
	s.weighed = weighed
	s.inline = inline
	s.frac = frac
}

// resetQueuesLocked empties the queues without visiting their nodes.
func (s *shard[K, V]) resetQueuesLocked() {
	for q := range s.q {
		s.q[q].next, s.q[q].prev = &s.q[q], &s.q[q]
		s.held[q] = 0
	}
}

// each calls f for every live node, queue by queue, newest first. f must
// not unlink the node it is given... except that it may, as long as it
// does not touch others: the next node is read before f runs.
func (s *shard[K, V]) each(f func(*node[K, V])) {
	for q := range s.q {
		for n := s.q[q].next; n != &s.q[q]; {
			next := n.next
			f(n)
			n = next
		}
	}
}

// newNodeLocked returns an unpublished node for key holding value with
// the given deadline.
func (s *shard[K, V]) newNodeLocked(key K, value V, w, deadline int64) *node[K, V] {
	var n *node[K, V]
	if s.inline {
		in := &inlineNode[K, V]{value: value}
		n = &in.node
		n.val.Store(&in.value)
	} else {
		n = new(node[K, V])
		box := new(V)
		*box = value
		n.val.Store(box)
	}
	n.meta = uint32(w) << 2
	n.timer.Value = key
	n.setDeadlineLocked(deadline)
	return n
}

// hasPointers reports whether values of type t can hold pointers (and so
// keep other memory alive). It errs towards true.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}

// removeLocked takes the live node n (whose key hashes to h) out of the
// shard, kills it, counts it under reason and returns its value. The
// caller cancels n's timer after the unlock.
func (s *shard[K, V]) removeLocked(n *node[K, V], h uint64, reason Reason) V {
	s.tab.DeleteEntry(n, h)
	s.unlinkLocked(n)
	v := *n.val.Load()
	n.killLocked()
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

// afterSpare, when set by a test, runs after each entry the victim scan
// spares, with the shard lock held.
var afterSpare func()

// pending is the work a locked mutation leaves for after the unlock: at
// most one timer to arm, timers to cancel and events to deliver. Without
// a Weigher, a mutation removes at most one entry, and the slices stay nil.
type pending[K comparable, V any] struct {
	arm    *node[K, V] // arm its timer to fire by armAt
	armAt  int64       // deadline, nanoseconds since origin
	cancel *node[K, V] // cancel its timer: it left the cache
	event  Event[K, V]

	// What the policy evicted beyond the first (see evictLocked): timers
	// to cancel, and events after p.event.
	cancels []*node[K, V]
	more    []Event[K, V]
	climb   bool // a climber sample may be complete
}

// setLocked stores value for key (whose hash is h and weight w) with the
// given deadline (> now), as Set does, and reports what must happen after
// the unlock. now and deadline are nanoseconds since the cache's origin.
// A bounded shard must be able to hold w (w <= limit).
func (s *shard[K, V]) setLocked(key K, h uint64, value V, w, now, deadline int64, p *pending[K, V]) {
	s.sets++
	s.staleLoadLocked(key)
	if n := s.tab.Get(key, h); n != nil {
		old := n.deadline()
		p.event = Event[K, V]{Key: key, Value: *n.val.Load(), Reason: Replaced}
		if old <= now {
			p.event.Reason = Expired
		}
		s.count(p.event.Reason)
		box := new(V)
		*box = value
		n.replaceLocked(box, old, deadline)
		if s.limit > 0 {
			// A write is a use; the policy sees it at its next look.
			n.noteRead()
			if n.weight() != w {
				// Weighed again: it makes room as a new entry does (it
				// cannot be chosen itself) and enters the window.
				s.unlinkLocked(n)
				n.meta = uint32(w) << 2
				s.makeRoomLocked(w, now, p)
				s.pushFrontLocked(n, window)
			}
		}
		if deadline < old {
			// Earlier than the timer may be armed for: re-arm it. A later
			// deadline is left to the expiry callback, which re-arms the
			// timer for the remainder when it fires early.
			p.arm, p.armAt = n, deadline
		}
		return
	}
	if s.limit > 0 {
		s.growSketchLocked(w)
		s.sk.add(h, 1) // the miss that brought the key
		s.makeRoomLocked(w, now, p)
		if s.inserts++; s.inserts >= climbEvery {
			s.inserts = 0
			p.climb = true
		}
	}
	n := s.newNodeLocked(key, value, w, deadline)
	s.tab.Put(n, h)
	s.pushFrontLocked(n, window)
	p.arm, p.armAt = n, deadline
}

// climbEvery is how many new keys a shard takes between two calls of the
// climber, which takes a sample only when one is complete.
const climbEvery = 16

// touchLocked gives key's live entry the new deadline (> now) without
// changing its value, as a read that also restarts the TTL, and reports
// whether there was a live entry. An expired or missing entry is left to
// Set: touching never brings a value back.
func (s *shard[K, V]) touchLocked(key K, h uint64, now, deadline int64, p *pending[K, V]) bool {
	n := s.tab.Get(key, h)
	if n == nil {
		return false
	}
	old := n.deadline()
	if old <= now {
		return false
	}
	n.setDeadlineLocked(deadline)
	n.noteRead() // touched: recently used
	if deadline < old {
		p.arm, p.armAt = n, deadline // see setLocked
	}
	return true
}

// deleteLocked removes key if present and reports what must happen after
// the unlock; ok is false when there was nothing to remove.
func (s *shard[K, V]) deleteLocked(key K, h uint64, now int64, p *pending[K, V]) (ok bool) {
	s.staleLoadLocked(key)
	n := s.tab.Get(key, h)
	if n == nil {
		return false
	}
	reason := Deleted
	if n.deadline() <= now {
		reason = Expired
	}
	p.event = Event[K, V]{Key: key, Reason: reason}
	p.event.Value = s.removeLocked(n, h, reason)
	p.cancel = n
	return true
}

// clearLocked removes every entry of the shard, as deleteLocked does for
// one, and marks every load in flight as overtaken. It appends the events
// to report (only with report set) and the removed nodes, whose timers
// the caller cancels after the unlock.
func (s *shard[K, V]) clearLocked(now int64, report bool, events []Event[K, V], removed []*node[K, V]) ([]Event[K, V], []*node[K, V]) {
	s.each(func(n *node[K, V]) {
		reason := Deleted
		if n.deadline() <= now {
			reason = Expired
		}
		if report {
			events = append(events, Event[K, V]{Key: n.key(), Value: *n.val.Load(), Reason: reason})
		}
		n.prev, n.next = nil, nil // every node goes: no neighbour to relink
		n.killLocked()
		removed = append(removed, n)
		s.count(reason)
	})
	s.resetQueuesLocked()
	s.tab.Clear()
	for _, cl := range s.calls {
		cl.stale = true
	}
	s.calls, s.peak = nil, 0
	return events, removed
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
		s.endCallLocked(key)
	}
}

// startCallLocked records cl as the load in flight for key.
func (s *shard[K, V]) startCallLocked(key K, cl *call[V]) {
	if s.calls == nil {
		s.calls = make(map[K]*call[V])
	}
	s.calls[key] = cl
	s.peak = max(s.peak, len(s.calls))
}

// endCallLocked forgets the load in flight for key. A map never shrinks,
// so once a burst of loads (more than fit in a map's first group) is over,
// the map is dropped; a few loads at a time keep reusing it.
func (s *shard[K, V]) endCallLocked(key K) {
	delete(s.calls, key)
	if len(s.calls) == 0 && s.peak > 8 {
		s.calls, s.peak = nil, 0
	}
}
