package cache

import (
	"hash/maphash"
	"reflect"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ttlkit/ttlkit/internal/hist"
	"github.com/ttlkit/ttlkit/internal/table"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// node is one entry: its wheel timer (whose payload is the key) and its
// stamp (deadline, the policy's read counter and queue), in one allocation
// with, for a bounded shard, the policy's queue links (see linkedNode),
// then the value's slot (see entry), and its index slot in the shard's
// table. Nothing else is allocated per entry but, for an entry overwritten
// since it was made, its value's box.
//
// Identity. A node belongs to one key for its whole life, written before
// the node is published (in the table, with an atomic store), so a
// lock-free reader that finds a node by its key can trust n.key(). Its
// value changes in place only if it is a word value (8 bytes without
// pointers, see wordValue) or boxed (see boxed), and then only with a
// later deadline, stored after the value, with the write bit held (see
// lockWrite). Any other write over a live entry replaces the node (see
// swapLocked), and the new node is boxed unless its value is a word. A
// node leaves the cache dead (replaced, deleted, evicted, expired or
// cleared) and is never used again; nodes are not recycled, and neither
// are their timers.
//
// Timer. The wheel links the node into its slots through timer, and hands
// timer back to the expiry callback, which finds the node at the same
// address (timer is the first field; see nodeOf) and its shard from the
// key's hash: no back pointer, no second allocation. The Timer's payload,
// timer.Value, is the key itself.
//
// Stamp. One atomic word holds deadline<<stampShift | boxed | writing |
// reads<<2 | queue: the deadline in ticks of 8 ns since the cache's
// origin (see dueAt), whether the value is boxed (fixed when the node is
// made), the write bit (see lockWrite), the reads since the policy last
// looked (see noteRead), and the queue the node is in, or dead. The value
// and the deadline change, and the node dies, only with the write bit
// held; the queue changes with the shard lock held. Readers add to reads
// and, with sliding expiry, move the deadline, both by compare-and-swap on
// the word they loaded, so a writer's change always stands.
//
// Ownership. timer's links and deadline belong to the wheel's owner
// goroutine; the links of a linkedNode are guarded by the shard lock.
//
// Shape. An unbounded shard has no policy: its nodes are bare. A bounded
// shard's nodes are linkedNodes, with the queue links after the node, and
// with a Weigher weighedNodes, with the weight after those. The value's
// slot follows the shape, at the shard's slotAt (see entry).
//
// Size. For uint64 keys and values a node is 48 bytes (the Timer 32, stamp
// and value 16), 64 in a bounded shard (links 16), each one size class of
// the allocator (a node with a value pointer, a separate read counter and
// queue word, and links in every shard, took 80). For string keys and
// []byte values it is 72 bytes (the 80 class), 88 in a bounded shard (the
// 96 class); boxed, 56 and 72 (the 64 and 80 classes) and a box of 24.
type node[K comparable, V any] struct {
	// timer must stay the first field: nodeOf converts its address.
	timer timingwheel.Timer[K]

	stamp atomic.Uint64 // deadline<<stampShift | boxed | writing | reads<<2 | queue; see node
}

// entry is the allocation of a node: its shape N (node, linkedNode or
// weighedNode) and the value's slot S, a V inline or, boxed, a *V (see
// boxed). The slot's offset is the size of N in every case (each shape is
// a multiple of 8 bytes, as the stamp's alignment makes it), so a shard
// finds any node's slot at one offset (slotAt) whether it is boxed or not.
type entry[N, S any] struct {
	head N
	slot S
}

// linkedNode is the shape of a node in a bounded shard: the node and,
// after it, the links of the policy's queue (see policy.go). Only
// newNodeLocked makes one; everything else holds the *node and reaches
// the links through links(), which only the policy's code and the
// bounded paths of the shard's call.
type linkedNode[K comparable, V any] struct {
	node[K, V] // first field: a *node is the linkedNode's address

	// prev and next link the node into its queue; both nil once the node
	// is dead (it never comes back). Shard lock held.
	prev, next *node[K, V]
}

// weighedNode is the shape of a node in a shard with a Weigher: a
// linkedNode and the entry's weight, written before publication.
type weighedNode[K comparable, V any] struct {
	linkedNode[K, V]
	weight int64
}

// nodeOf returns the node whose timer t is. Every Timer the cache's
// Scheduler holds is the first field of a node, so the node starts at the
// Timer's address (and the conversion stays within the node's
// allocation, as the checkptr instrumentation of -race verifies).
func nodeOf[K comparable, V any](t *timingwheel.Timer[K]) *node[K, V] {
	return (*node[K, V])(unsafe.Pointer(t))
}

// links returns the linkedNode that n is the first field of. Only for
// the nodes of a bounded shard (and its sentinels), which newNodeLocked
// makes as linkedNodes; the -race build's checkptr catches any other use.
func (n *node[K, V]) links() *linkedNode[K, V] {
	return (*linkedNode[K, V])(unsafe.Pointer(n))
}

// key returns the node's key.
func (n *node[K, V]) key() K { return n.timer.Value }

// The stamp's fields (see node).
const (
	queueMask = 3             // the queue: window, probation, protected or dead
	dead      = queueMask     // the queue of a node that left the cache
	readsOne  = 1 << 2        // one read
	readsMask = 15 * readsOne // reads, 0 to maxReads
	writing   = 1 << 6        // the write bit (see lockWrite)
	boxed     = 1 << 7        // the value is boxed (see boxed)
	stampLow  = 1<<stampShift - 1
	// stampShift leaves the deadline 56 bits, counted in ticks of
	// 1<<tickShift = 8 ns: the horizon, the first deadline a stamp cannot
	// hold, is 2^59 ns (about 18.3 years) after the cache was made, and
	// maxDeadline, the last one it can, is 8 ns before it.
	stampShift  = 8
	tickShift   = 3
	maxDeadline = (1<<(64-stampShift) - 1) << tickShift
)

func nodeKey[K comparable, V any](n *node[K, V]) K { return n.key() }

func (n *node[K, V]) deadline() int64 { return deadlineOf(n.stamp.Load()) }

// live reports whether n is still in its shard. Shard lock held.
func (n *node[K, V]) live() bool { return n.stamp.Load()&queueMask != dead }

// setStampLocked replaces the fields of n's stamp in mask with bits,
// keeping the others, against readers' concurrent compare-and-swaps.
func (n *node[K, V]) setStampLocked(mask, bits uint64) {
	for {
		st := n.stamp.Load()
		if n.stamp.CompareAndSwap(st, st&^mask|bits) {
			return
		}
	}
}

// lockWrite takes n's write bit and returns the stamp as it was, without
// it. Whoever changes a live node's value or deadline holds the bit: an
// overwrite without the shard lock (see cache.overwrite), and holders of
// the lock that write in place or move a deadline. A holder stores a few
// words, reads the clock at most once, and lets go: it never waits,
// allocates or runs user code meanwhile, so a goroutine that finds the
// bit held spins, and yields only if the holder lost its processor. A
// node dies by one compare-and-swap on a stamp without the bit (see
// killLocked): the expiry engine never holds it.
func (n *node[K, V]) lockWrite() uint64 {
	for i := 0; ; i++ {
		if st := n.stamp.Load(); st&writing == 0 && n.stamp.CompareAndSwap(st, st|writing) {
			return st
		}
		spin(i)
	}
}

// spin is the i-th wait (from 0) for a write bit: yield the processor
// once the holder has had time for its few stores.
func spin(i int) {
	if i >= 64 {
		runtime.Gosched()
	}
}

// unlockWrite lets n's write bit go, replacing the fields in mask with
// bits and keeping the others (reads and queue may have changed while the
// bit was held).
func (n *node[K, V]) unlockWrite(mask, bits uint64) {
	for {
		st := n.stamp.Load()
		if n.stamp.CompareAndSwap(st, st&^(mask|writing)|bits) {
			return
		}
	}
}

// settled returns n's stamp once no write is in progress. A holder of the
// shard lock that judges from it whether an entry is live, and acts on
// that judgement, reads the clock before it calls settled; an overwrite
// without the lock reads the clock after it takes the bit. So an entry
// that the lock holder finds expired is expired for the overwrite too,
// which then leaves the write to the shard lock: nothing the lock holder
// treats as gone comes back behind its back.
func (n *node[K, V]) settled() uint64 {
	for i := 0; ; i++ {
		if st := n.stamp.Load(); st&writing == 0 {
			return st
		}
		spin(i)
	}
}

// wordValue reports whether V is a word value: 8 bytes without pointers
// (an int, uint64, float64, time.Duration...) or one pointer (a *T, a
// map, a chan, a func; see pointerValue). A word value is stored and
// loaded atomically, as one uint64 or one pointer, so a write over a live
// entry can go in place instead of replacing the node, under one rule
// that lets a lock-free reader pair it with its own deadline or an
// earlier one: a live node's deadline never moves earlier in place (an
// earlier deadline replaces the node), and an in-place write stores the
// value before its later deadline. A reader loads the stamp before the
// value (see lookup).
func wordValue[V any]() bool {
	var v V
	return unsafe.Sizeof(v) == 8 && !hasPointers(reflect.TypeFor[V]()) || pointerValue[V]()
}

// pointerValue reports whether V is one pointer: a value of a pointer's
// size that holds a pointer can hold nothing else.
func pointerValue[V any]() bool {
	var v V
	return unsafe.Sizeof(v) == unsafe.Sizeof(uintptr(0)) && hasPointers(reflect.TypeFor[V]())
}

// boxed values. A value that is not a word is kept inline in the node it
// was made with, and never changes there, so that a lock-free reader can
// copy it without tearing. A write over it replaces the node (see
// swapLocked) with a boxed one: its slot points to the value, in a box of
// its own that never changes after it is published, and later writes with
// a later deadline store a new box in the slot, as a word value is
// stored: atomically, before the deadline, with the write bit held. So an
// entry that is written once pays nothing for boxes, and one written again
// and again pays a box per write, no node, no lock and no wheel command.
// Whether a node is boxed is fixed when it is made, in its stamp.

// slot returns the address of n's value slot (see entry).
func (s *shard[K, V]) slot(n *node[K, V]) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(n), s.slotAt)
}

// valueOf returns n's value: loaded atomically if it is a word value or
// boxed, which an overwrite may store without the shard lock.
func (s *shard[K, V]) valueOf(n *node[K, V]) V { return s.valueAt(n, n.stamp.Load()) }

// valueAt is valueOf for a reader that has loaded st from n's stamp.
func (s *shard[K, V]) valueAt(n *node[K, V], st uint64) V {
	p := s.slot(n)
	switch {
	case st&boxed != 0:
		return *(*atomic.Pointer[V])(p).Load()
	case s.pointer:
		w := atomic.LoadPointer((*unsafe.Pointer)(p))
		return *(*V)(unsafe.Pointer(&w))
	case s.word:
		w := atomic.LoadUint64((*uint64)(p))
		return *(*V)(unsafe.Pointer(&w))
	}
	return *(*V)(p)
}

// inPlace reports whether a write of n, whose stamp is st, may store its
// value in place: a word value or a boxed one.
func (s *shard[K, V]) inPlace(st uint64) bool { return s.word || st&boxed != 0 }

// boxOf returns what writeInPlace stores for value: nil for a word value,
// else a new box holding it. It allocates, so it runs before the write bit
// is taken.
func (s *shard[K, V]) boxOf(value V) *V {
	if s.word {
		return nil
	}
	b := new(V)
	*b = value
	return b
}

// writeInPlace stores value, a word value, or box, its box (see boxOf),
// in n, whose write bit the caller holds and which inPlace allows, and
// lets the bit go with deadline, which is later than n's (see wordValue),
// and, with use set, one more read (saturating). It returns the value
// replaced.
func (s *shard[K, V]) writeInPlace(n *node[K, V], value V, box *V, deadline int64, use bool) V {
	p := s.slot(n)
	var old V
	switch {
	case box != nil:
		old = *(*atomic.Pointer[V])(p).Swap(box)
	case s.pointer:
		w := atomic.SwapPointer((*unsafe.Pointer)(p), *(*unsafe.Pointer)(unsafe.Pointer(&value)))
		old = *(*V)(unsafe.Pointer(&w))
	default:
		w := atomic.SwapUint64((*uint64)(p), *(*uint64)(unsafe.Pointer(&value)))
		old = *(*V)(unsafe.Pointer(&w))
	}
	for {
		st := n.stamp.Load()
		next := st&(stampLow&^writing) | stampOf(deadline)
		if use && st&readsMask < readsMask {
			next += readsOne
		}
		if n.stamp.CompareAndSwap(st, next) {
			return old
		}
	}
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

// killLocked marks a node that leaves the cache as dead for good, for
// arm's and fire's lock-free checks and the overwrite's, and returns its
// last stamp (alive, so the queue it was in). One compare-and-swap on a
// stamp without the write bit, waiting for an in-place write in progress:
// the value no longer changes after it. It stays for readers that found
// the node before it left (they read it as of then); the node, and what
// its value references, becomes garbage once the wheel has dropped its
// timer, which the caller cancels after the unlock.
func (n *node[K, V]) killLocked() uint64 {
	st, _ := n.killIfDueLocked(maxDeadline)
	return st
}

// killIfDueLocked kills n, as killLocked does, if its deadline is at or
// before at, and returns its last stamp and 0; otherwise it leaves n alone
// and returns the time left (> 0). The judgement and the death are one
// compare-and-swap: an overwrite in progress, which may push the deadline
// later, finishes first.
func (n *node[K, V]) killIfDueLocked(at int64) (uint64, int64) {
	for i := 0; ; i++ {
		st := n.stamp.Load()
		if st&writing == 0 {
			if left := deadlineOf(st) - at; left > 0 {
				return st, left
			}
			if n.stamp.CompareAndSwap(st, st|dead) {
				return st, 0
			}
		}
		spin(i)
	}
}

// shard is one lock's worth of the cache: an index from key to node
// (lock-free for readers), the eviction policy's queues through the nodes
// (see policy.go), the in-flight loads, and the write counters.
type shard[K comparable, V any] struct {
	// mu is the shard's lock: the lock of its Queue in the expiry wheel,
	// so that the timers a mutation arms and cancels are queued for the
	// wheel's owner under the lock the mutation holds (see queueLocked).
	mu     *timingwheel.Queue[K]
	origin time.Time // the cache's origin, for the wheel's deadlines

	beforeArm *func() // the cache's hook of that name (tests only)

	// tab is read without the lock by Get, Take and Touch's fast paths;
	// written only with mu held.
	tab table.Table[K, node[K, V]]

	// Guarded by mu.
	q       [3]linkedNode[K, V] // sentinels of the window, probation and protected queues; unused by unbounded shards
	held    [3]int64            // weight in each queue
	limit   int64               // the shard's share of Limit or MaxWeight; 0 = unbounded
	weighed bool                // weights come from a Weigher
	word    bool                // V is a word value (see wordValue): later overwrites go in place
	pointer bool                // the word is one pointer (see pointerValue)
	slotAt  uintptr             // the offset of a node's value slot (see entry)
	sk      sketch              // made when a bounded shard is half full
	inserts int                 // new keys since the last climb
	spares  int                 // what makeRoomLocked may still spare
	calls   map[K]*call[V]      // loads in flight; nil when none since a burst
	peak    int                 // most loads in flight since calls was made
	closed  bool

	// frac is the cache's window share (climber.frac); set once.
	frac *atomic.Int64

	// inflight is len(calls), written with mu held, for the overwrite
	// without the lock (see cache.overwrite), which leaves the write to
	// setLocked while a call is in flight in the shard.
	inflight atomic.Int32
	// overwrites counts the overwrites without the lock: each is a Set
	// and a Replaced.
	overwrites atomic.Uint64

	loads, loadErrors, sets             uint64
	expired, evicted, deleted, replaced uint64
	loadTime                            hist.Counts

	_ [64]byte // keep the next allocation off this shard's last line
}

func (s *shard[K, V]) init(limit int64, weighed bool, seed maphash.Seed, frac *atomic.Int64) {
	s.word = wordValue[V]()
	s.pointer = pointerValue[V]()
	s.tab.InitSeed(nodeKey[K, V], 0, seed)
	s.tab.ShareLen() // Cache.Len takes no lock
	s.resetQueuesLocked()
	s.limit = limit
	s.weighed = weighed
	s.frac = frac
	switch {
	case weighed:
		s.slotAt = unsafe.Offsetof(entry[weighedNode[K, V], V]{}.slot)
	case limit > 0:
		s.slotAt = unsafe.Offsetof(entry[linkedNode[K, V], V]{}.slot)
	default:
		s.slotAt = unsafe.Offsetof(entry[node[K, V], V]{}.slot)
	}
}

// resetQueuesLocked empties the queues without visiting their nodes.
func (s *shard[K, V]) resetQueuesLocked() {
	for q := range s.q {
		s.q[q].next, s.q[q].prev = &s.q[q].node, &s.q[q].node
		s.held[q] = 0
	}
}

// each calls f for every live node: in a bounded shard queue by queue,
// newest first, in an unbounded one in table order. f may kill the node
// it is given and clear its links, but not change the table or the
// queues: the next node is read before f runs.
func (s *shard[K, V]) each(f func(*node[K, V])) {
	if s.limit == 0 {
		s.tab.All(func(n *node[K, V]) bool { f(n); return true })
		return
	}
	for q := range s.q {
		for n := s.q[q].next; n != &s.q[q].node; {
			next := n.links().next
			f(n)
			n = next
		}
	}
}

// newNodeLocked returns an unpublished node for key holding value with
// the given deadline and weight, in the shape the shard needs (see
// linkedNode and weighedNode), boxed if box is set (see boxed), reads
// counted as given and queue window.
func (s *shard[K, V]) newNodeLocked(key K, value V, w, deadline int64, reads uint64, box bool) *node[K, V] {
	var n *node[K, V]
	switch {
	case s.weighed && box:
		n = alloc[K, V, weighedNode[K, V], *V]()
	case s.weighed:
		n = alloc[K, V, weighedNode[K, V], V]()
	case s.limit > 0 && box:
		n = alloc[K, V, linkedNode[K, V], *V]()
	case s.limit > 0:
		n = alloc[K, V, linkedNode[K, V], V]()
	case box:
		n = alloc[K, V, node[K, V], *V]() // no policy, no queue
	default:
		n = alloc[K, V, node[K, V], V]()
	}
	if s.weighed {
		(*weighedNode[K, V])(unsafe.Pointer(n)).weight = w
	}
	n.timer.Value = key
	if box {
		reads |= boxed
	}
	s.fill(n, value, box)
	n.stamp.Store(stampOf(deadline) | reads)
	return n
}

// fill stores value in the slot of n, which is not published yet: in a
// new box if box is set.
func (s *shard[K, V]) fill(n *node[K, V], value V, box bool) {
	if box {
		b := new(V)
		*b = value
		*(**V)(s.slot(n)) = b
	} else {
		*(*V)(s.slot(n)) = value
	}
}

// alloc returns a new node of shape N with a value slot S (see entry).
func alloc[K comparable, V, N, S any]() *node[K, V] {
	return (*node[K, V])(unsafe.Pointer(new(entry[N, S])))
}

// dueAt returns the deadline life nanoseconds after now (both since the
// cache's origin, life > 0) as a stamp holds it: rounded down to a tick
// of 8 ns, so never later than now+life, and at most maxDeadline, so a
// deadline past the horizon (reached only by a cache older than about
// 13.7 years: see maxTTL) is cut to its last tick. The result may be at or
// before now (a life under 8 ns, or a cache past its horizon): the entry
// is then expired on arrival, never kept late. Every deadline that goes
// into a stamp, and into the wheel (see arm), is made here, so the two
// agree to the nanosecond.
func dueAt(now, life int64) int64 { return min(now+life, maxDeadline) &^ (1<<tickShift - 1) }

// stampOf returns the stamp of deadline d, a result of dueAt (0 to
// maxDeadline). The shifts drop any part of a tick, so d cannot spill into
// the flags.
func stampOf(d int64) uint64 { return uint64(d) >> tickShift << stampShift }

// deadlineOf returns the deadline in stamp st, in nanoseconds since the
// cache's origin (a multiple of 8).
func deadlineOf(st uint64) int64 { return int64(st>>stampShift) << tickShift }

// dropLocked takes n, just killed with its last stamp st, out of the
// shard's table and queue, and counts it under reason.
func (s *shard[K, V]) dropLocked(n *node[K, V], h, st uint64, reason Reason) {
	s.tab.DeleteEntry(n, h)
	if s.limit > 0 {
		s.unlinkFromLocked(n, int(st&queueMask))
	}
	s.count(reason)
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

// pending is the work a locked mutation leaves: at most one timer to arm
// and timers to cancel, queued for the wheel before the unlock
// (queueLocked), and events to deliver after it (finish). Without a
// Weigher, a mutation removes at most one entry, and the slices stay nil.
type pending[K comparable, V any] struct {
	arm    *node[K, V] // arm its timer to fire by armAt
	armAt  int64       // deadline, nanoseconds since origin, as in the stamp (see dueAt)
	cancel *node[K, V] // cancel its timer: it left the cache
	event  Event[K, V]

	// What the policy evicted beyond the first (see evictLocked): timers
	// to cancel, and events after p.event.
	cancels []*node[K, V]
	more    []Event[K, V]
	climb   bool // a climber sample may be complete
}

// queueLocked hands the wheel what a mutation under s's lock left in p:
// the timer to arm (p.arm) and those to cancel (p.cancel, p.cancels), in
// the shard's Queue, whose lock is the shard's, so no second lock is
// taken and the changes reach the wheel in the order the shard made them:
// a timer is armed for the deadline its node's stamp holds under the
// lock, and cancelled in the same hold as its node dies. It clears them
// from p; c.finish does the rest after the unlock. An error means the
// cache was closed: nothing to do.
func (s *shard[K, V]) queueLocked(p *pending[K, V]) {
	if p.arm != nil {
		if f := *s.beforeArm; f != nil {
			f()
		}
		_ = s.mu.ScheduleAtLocked(&p.arm.timer, s.origin.Add(time.Duration(p.armAt)))
		p.arm = nil
	}
	if p.cancel != nil {
		_ = s.mu.CancelLocked(&p.cancel.timer)
		p.cancel = nil
	}
	for _, n := range p.cancels {
		_ = s.mu.CancelLocked(&n.timer)
	}
	clear(p.cancels) // hold no removed node
	p.cancels = p.cancels[:0]
}

// unlock queues p's timer changes (queueLocked) and unlocks s.
func (s *shard[K, V]) unlock(p *pending[K, V]) {
	s.queueLocked(p)
	s.mu.Unlock()
}

// cancelLater records n's timer to be cancelled before the unlock.
func (p *pending[K, V]) cancelLater(n *node[K, V]) {
	if p.cancel == nil {
		p.cancel = n
	} else {
		p.cancels = append(p.cancels, n)
	}
}

// setLocked stores value for key (whose hash is h and weight w) with the
// given deadline (> now), as Set does, and reports what must happen after
// the unlock. now and deadline are nanoseconds since the cache's origin.
// A bounded shard must be able to hold w (w <= limit).
func (s *shard[K, V]) setLocked(key K, h uint64, value V, w, now, deadline int64, p *pending[K, V]) {
	s.sets++
	s.staleLoadLocked(key)
	if o := s.tab.Get(key, h); o != nil {
		s.replaceLocked(o, h, value, w, now, deadline, p)
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
	n := s.newNodeLocked(key, value, w, deadline, 0, false)
	s.tab.Put(n, h)
	if s.limit > 0 {
		s.pushFrontLocked(n, window)
	}
	p.arm, p.armAt = n, deadline
}

// replaceLocked is setLocked for a key whose node o (whose hash is h) is in
// the shard. A word or boxed value with a later deadline is written in
// place (see writeInPlace); otherwise swapLocked replaces o by a new node.
// Either way the write counts as a use for the policy.
func (s *shard[K, V]) replaceLocked(o *node[K, V], h uint64, value V, w, now, deadline int64, p *pending[K, V]) {
	// The event first: evictions that make room for a new weight follow it
	// (see evictLocked).
	p.event = Event[K, V]{Key: o.key(), Reason: Replaced}
	var st uint64
	if s.inPlace(o.stamp.Load()) && s.weightOf(o) == w {
		box := s.boxOf(value) // before the bit: it allocates
		st = o.lockWrite()
		if deadline > deadlineOf(st) {
			p.event.Value = s.writeInPlace(o, value, box, deadline, s.limit > 0)
			// A later deadline: the expiry callback re-arms when it fires.
		} else {
			o.unlockWrite(0, 0)
			p.event.Value, st = s.swapLocked(o, h, value, false, w, now, deadline, p)
		}
	} else {
		p.event.Value, st = s.swapLocked(o, h, value, false, w, now, deadline, p)
	}
	if deadlineOf(st) <= now {
		p.event.Reason = Expired
	}
	s.count(p.event.Reason)
}

// swapLocked kills o and makes a new node with value (o's last one, with
// keep set), weight w and deadline take o's place in the table and in its
// queue, with o's reads and, in a bounded shard, one more (a write or a
// touch is a use; the policy sees it at its next look). The new node is
// boxed unless V is a word (see boxed): its next write goes in place. It
// returns o's last value and stamp. A reader that found o before returns
// o's value, as of before the swap; one that looks later finds the new
// node, which is published once the shard has room for it (a new weight
// makes room first, o staying in the table, dead, meanwhile). The new
// node's timer is armed, o's cancelled: both after the unlock.
func (s *shard[K, V]) swapLocked(o *node[K, V], h uint64, value V, keep bool, w, now, deadline int64, p *pending[K, V]) (V, uint64) {
	// Allocated before o's write bit is taken: the allocator may make
	// this goroutine assist the collector.
	box := !s.word
	n := s.newNodeLocked(o.key(), value, w, deadline, 0, box)
	st := o.killLocked() // first: its value no longer changes
	old := s.valueAt(o, st)
	if keep {
		s.fill(n, old, box)
	}
	reads := st & readsMask
	if s.limit > 0 && reads < readsMask {
		reads += readsOne
	}
	if box {
		reads |= boxed
	}
	n.stamp.Store(stampOf(deadline) | reads)
	again := s.limit > 0 && s.weightOf(o) != w
	switch {
	case s.limit == 0: // no queue
	case again:
		// Weighed again: it makes room as a new entry does (it cannot be
		// chosen itself), before it is published: meanwhile readers find
		// o, dead, with its old value and weight, so the weight they can
		// see never exceeds the limit.
		s.unlinkFromLocked(o, int(st&queueMask))
		s.makeRoomLocked(w, now, p)
	default:
		s.spliceLocked(o, n, int(st&queueMask))
	}
	s.tab.Put(n, h)
	if again {
		s.pushFrontLocked(n, window)
	}
	p.cancelLater(o)
	p.arm, p.armAt = n, deadline
	return old, st
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
	st := n.lockWrite() // after now: see settled
	old := deadlineOf(st)
	if old <= now {
		n.unlockWrite(0, 0)
		return false
	}
	if s.inPlace(st) && deadline < old {
		// The deadline of a value written in place never moves earlier
		// (see wordValue): the entry moves to a new node.
		n.unlockWrite(0, 0)
		s.swapLocked(n, h, *new(V), true, s.weightOf(n), now, deadline, p)
		return true
	}
	n.unlockWrite(^uint64(stampLow), stampOf(deadline))
	if s.limit > 0 {
		n.noteRead() // touched: recently used
	}
	if deadline < old {
		// Earlier than the timer may be armed for: re-arm it. A later
		// deadline is left to the expiry callback, which re-arms the
		// timer for the remainder when it fires early.
		p.arm, p.armAt = n, deadline
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
	st := n.killLocked()
	p.event = Event[K, V]{Key: key, Value: s.valueAt(n, st), Reason: Deleted}
	if deadlineOf(st) <= now {
		p.event.Reason = Expired
	}
	s.dropLocked(n, h, st, p.event.Reason)
	p.cancel = n
	return true
}

// clearLocked removes every entry of the shard, as deleteLocked does for
// one, cancelling its timer, and marks every load in flight as
// overtaken. It appends the events to report (only with report set).
func (s *shard[K, V]) clearLocked(now int64, report bool, events []Event[K, V]) []Event[K, V] {
	s.each(func(n *node[K, V]) {
		reason := Deleted
		st := n.killLocked()
		if deadlineOf(st) <= now {
			reason = Expired
		}
		if report {
			events = append(events, Event[K, V]{Key: n.key(), Value: s.valueAt(n, st), Reason: reason})
		}
		if s.limit > 0 {
			l := n.links()
			l.prev, l.next = nil, nil // every node goes: no neighbour to relink
		}
		_ = s.mu.CancelLocked(&n.timer) // an error: closed, nothing to do
		s.count(reason)
	})
	s.resetQueuesLocked()
	s.tab.Clear()
	for _, cl := range s.calls {
		cl.stale = true
	}
	s.calls, s.peak = nil, 0
	s.inflight.Store(0)
	return events
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
	s.inflight.Store(int32(len(s.calls)))
}

// endCallLocked forgets the load in flight for key. A map never shrinks,
// so once a burst of loads (more than fit in a map's first group) is over,
// the map is dropped; a few loads at a time keep reusing it.
func (s *shard[K, V]) endCallLocked(key K) {
	delete(s.calls, key)
	s.inflight.Store(int32(len(s.calls)))
	if len(s.calls) == 0 && s.peak > 8 {
		s.calls, s.peak = nil, 0
	}
}
