package cache

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The eviction policy of a bounded shard is W-TinyLFU with CLOCK-style
// recency (doc/design/cache.md has the picture):
//
//   - Every new entry enters the window, a small queue in recency order.
//   - An entry pushed out of the window is a candidate for the main
//     space, which is split into probation (20%) and protected (80%). If
//     the main space is full, the candidate is compared with the entry
//     main would evict (probation's oldest): the one the frequency sketch
//     has seen more often stays, and on a tie the incumbent stays. So a
//     key used once never displaces a key used often, and a loop larger
//     than the cache keeps a stable part of itself instead of nothing.
//   - An entry read while in probation moves to protected; protected's
//     oldest moves back to probation when protected is over its share.
//   - The window's share adapts (see climber): a workload where recency
//     wins grows it, one where frequency wins shrinks it.
//
// Reads take no lock: Get adds one to the node's reads counter, which
// saturates at maxReads, so a hot entry is written at most maxReads times
// between two visits of the policy. The policy looks at reads only when an
// entry reaches the old end of its queue under the shard lock (as CLOCK
// looks at its mark): reads > 0 means "used since the last look", which
// earns the entry a new lap (window, protected) or a promotion
// (probation), and the reads are then added to the sketch. Recency is
// therefore approximate, like CLOCK's, and frequency counts a hot entry at
// most maxReads times per lap.

// Queues, stored in a node's stamp (with dead, the queue of no queue).
const (
	window = iota
	probation
	protected
)

const (
	// maxReads is where a node's reads counter saturates.
	maxReads = 15
	// maxEntryWeight is the largest weight one entry may have.
	maxEntryWeight = 1<<30 - 1
	// fracOne is a window share of 100%, in the climber's units.
	fracOne = 1 << 16
)

// noteRead records a read of n for the policy: one compare-and-swap until
// the counter saturates, nothing after. Lock-free; a lost race loses one
// count, which only makes the policy's estimate coarser.
func (n *node[K, V]) noteRead() { n.noteReadAt(n.stamp.Load()) }

// noteReadAt is noteRead for a reader that has loaded st from n's stamp.
func (n *node[K, V]) noteReadAt(st uint64) {
	if st&readsMask != readsMask {
		n.stamp.CompareAndSwap(st, st+readsOne)
	}
}

// reads returns the reads n's stamp counts.
func (n *node[K, V]) reads() int { return int(n.stamp.Load() & readsMask / readsOne) }

func (n *node[K, V]) queue() int { return int(n.stamp.Load() & queueMask) }

// weightOf returns n's weight: 1 without a Weigher (see weighedNode).
func (s *shard[K, V]) weightOf(n *node[K, V]) int64 {
	if !s.weighed {
		return 1
	}
	return (*weighedNode[K, V])(unsafe.Pointer(n)).weight
}

// pushFrontLocked links an unlinked n at the new end of queue q.
func (s *shard[K, V]) pushFrontLocked(n *node[K, V], q int) {
	head := &s.q[q]
	n.setStampLocked(queueMask, uint64(q))
	l := n.links()
	l.prev = &head.node
	l.next = head.next
	head.next.links().prev = n
	head.next = n
	s.held[q] += s.weightOf(n)
}

// unlinkLocked takes n out of its queue.
func (s *shard[K, V]) unlinkLocked(n *node[K, V]) { s.unlinkFromLocked(n, n.queue()) }

// unlinkFromLocked takes n out of queue q, its queue (n may be dead
// already: see killLocked).
func (s *shard[K, V]) unlinkFromLocked(n *node[K, V], q int) {
	s.held[q] -= s.weightOf(n)
	l := n.links()
	l.prev.links().next = l.next
	l.next.links().prev = l.prev
	l.prev, l.next = nil, nil
}

// spliceLocked puts n, unlinked, in o's place in o's queue q and unlinks
// o (which may be dead already). They weigh the same.
func (s *shard[K, V]) spliceLocked(o, n *node[K, V], q int) {
	n.setStampLocked(queueMask, uint64(q))
	ol, nl := o.links(), n.links()
	nl.prev, nl.next = ol.prev, ol.next
	ol.prev.links().next = n
	ol.next.links().prev = n
	ol.prev, ol.next = nil, nil
}

// moveLocked moves n to the new end of queue q (its own or another).
func (s *shard[K, V]) moveLocked(n *node[K, V], q int) {
	if n.queue() == q && s.q[q].next == n {
		return
	}
	s.unlinkLocked(n)
	s.pushFrontLocked(n, q)
}

// oldest returns the old end of queue q, or nil if it is empty.
func (s *shard[K, V]) oldest(q int) *node[K, V] {
	if n := s.q[q].prev; n != &s.q[q].node {
		return n
	}
	return nil
}

// total is the weight held (the number of entries without a Weigher).
func (s *shard[K, V]) total() int64 {
	return s.held[window] + s.held[probation] + s.held[protected]
}

// foldLocked moves n's reads into the sketch and reports whether there
// were any: whether n was used since the policy last looked at it.
func (s *shard[K, V]) foldLocked(n *node[K, V]) bool {
	if n.stamp.Load()&readsMask == 0 {
		return false
	}
	r := (n.stamp.And(^uint64(readsMask)) & readsMask) / readsOne
	s.sk.add(s.tab.Hash(n.key()), int(r))
	return r > 0
}

// growSketchLocked makes or enlarges the sketch once the shard is half
// full with a new entry of weight w, sized for the entries it holds (its
// Limit without a Weigher), so that an empty or small bounded cache pays
// nothing for it.
//
// Without a Weigher it is sized once, for the Limit: counting the entry
// about to come in (and go out again: the shard is full) as one more
// would double it a second time, as it did, to 16 bytes per entry.
func (s *shard[K, V]) growSketchLocked(w int64) {
	n := int(s.limit)
	if s.weighed {
		n = s.tab.Len() + 1
	}
	if 2*(s.total()+w) < s.limit || n <= s.sk.cap {
		return
	}
	s.sk.init(max(n, 2*s.sk.cap))
}

// makeRoomLocked evicts until an entry of weight w fits (the shard is
// bounded), appending what it removes to p (see evictLocked). Each turn
// of the loop evicts one entry or moves one from the window to main, so
// it ends. Sparing a used entry costs a look; one call spares at most as
// many entries as the shard holds, so that readers reading entries again
// behind the scans cannot keep it going (see spareLocked).
func (s *shard[K, V]) makeRoomLocked(w, now int64, p *pending[K, V]) {
	s.spares = s.tab.Len()
	for s.total()+w > s.limit {
		// The window's share, and at least the entry about to enter it:
		// moving a candidate to main must not leave the newcomer to
		// push out main's victim without the admission test.
		winMax := s.limit * s.frac.Load() / fracOne
		mainMax := s.limit - max(winMax, w)
		main := s.held[probation] + s.held[protected]
		if s.held[window] > 0 && (s.held[window]+w > winMax || main == 0) {
			cand := s.candidateLocked()
			if cand.deadline() <= now {
				s.evictLocked(cand, Expired, now, p)
				continue
			}
			cw := s.weightOf(cand)
			if cw > mainMax {
				// It could never enter main (the window holds nearly all
				// the shard): no admission test, nothing displaced.
				s.evictLocked(cand, Evicted, now, p)
				continue
			}
			if main+cw <= mainMax {
				s.moveLocked(cand, probation)
				continue
			}
			victim := s.victimLocked(now)
			switch {
			case victim == nil:
				s.evictLocked(cand, Evicted, now, p) // not reachable: main holds more than mainMax-cw
			case victim.deadline() <= now:
				s.evictLocked(victim, Expired, now, p)
			case s.admitLocked(cand, victim):
				s.evictLocked(victim, Evicted, now, p)
				if s.held[probation]+s.held[protected]+cw <= mainMax {
					s.moveLocked(cand, probation)
				}
			default:
				s.evictLocked(cand, Evicted, now, p)
			}
			continue
		}
		victim := s.victimLocked(now)
		if victim == nil {
			victim = s.oldest(window) // main is empty, so the window is not
		}
		reason := Evicted
		if victim.deadline() <= now {
			reason = Expired
		}
		s.evictLocked(victim, reason, now, p)
	}
}

// spareLocked reports whether n, at the old end of its queue, was used
// since the policy last looked at it (and so is spared: a new lap, or a
// promotion), folding its reads into the sketch. Once the budget of
// makeRoomLocked is spent, nothing is spared.
func (s *shard[K, V]) spareLocked(n *node[K, V]) bool {
	if s.spares <= 0 || !s.foldLocked(n) {
		return false
	}
	s.spares--
	if afterSpare != nil {
		defer afterSpare()
	}
	return true
}

// candidateLocked returns the window's oldest entry not used since the
// policy last looked, giving used ones a new lap. The window must not be
// empty.
func (s *shard[K, V]) candidateLocked() *node[K, V] {
	for {
		n := s.oldest(window)
		if !s.spareLocked(n) {
			return n
		}
		s.moveLocked(n, window)
	}
}

// victimLocked returns the entry main would evict: probation's oldest
// entry that was not used since the policy last looked, or an expired one
// met on the way. Used probation entries are promoted to protected, and
// protected's overflow goes back to probation (used ones get a new lap in
// protected first). When probation is empty, protected's oldest moves
// there. It returns nil only if main is empty.
func (s *shard[K, V]) victimLocked(now int64) *node[K, V] {
	protMax := (s.limit - s.limit*s.frac.Load()/fracOne) * 4 / 5
	for {
		n := s.oldest(probation)
		if n == nil {
			n = s.oldest(protected)
			if n == nil {
				return nil
			}
			if s.spareLocked(n) {
				s.moveLocked(n, protected)
			} else {
				s.moveLocked(n, probation)
			}
			continue
		}
		if n.deadline() <= now || !s.spareLocked(n) {
			return n
		}
		s.moveLocked(n, protected)
		for s.held[protected] > protMax {
			d := s.oldest(protected)
			if s.spareLocked(d) {
				s.moveLocked(d, protected)
			} else {
				s.moveLocked(d, probation)
			}
		}
	}
}

// admitLocked reports whether the candidate should replace the victim in
// main: only if the sketch has seen it more often. A tie keeps the
// incumbent, which is what keeps part of a loop in the cache.
func (s *shard[K, V]) admitLocked(cand, victim *node[K, V]) bool {
	return s.sk.estimate(s.tab.Hash(cand.key())) > s.sk.estimate(s.tab.Hash(victim.key()))
}

// evictLocked removes n for the policy and records it in p: its timer to
// cancel (p.cancel, then p.cancels) and its event (p.event, then p.more).
// An entry judged expired by now that an overwrite without the lock made
// live again before it died goes as Evicted, with the overwrite's value.
func (s *shard[K, V]) evictLocked(n *node[K, V], reason Reason, now int64, p *pending[K, V]) {
	k := n.key()
	st := n.killLocked()
	if reason == Expired && deadlineOf(st) > now {
		reason = Evicted
	}
	s.dropLocked(n, s.tab.Hash(k), st, reason)
	ev := Event[K, V]{Key: k, Value: s.valueAt(n, st), Reason: reason}
	if p.event.Reason == 0 {
		p.event = ev
	} else {
		p.more = append(p.more, ev)
	}
	p.cancelLater(n)
}

// climber adapts the window's share of a bounded cache by hill climbing
// on the hit ratio: after each sample of lookups it moves the share by a
// step, in the same direction if the hit ratio of the sample was at least
// that of the previous one, else in the other. The step shrinks a little
// each sample, so the share settles, and returns to its full size when the
// hit ratio jumps (the workload changed). One climber serves every shard:
// they see the same workload, and the cache-wide counters give it a
// larger sample.
type climber struct {
	frac atomic.Int64 // the window's share, in 1/fracOne

	mu           sync.Mutex // held by the goroutine taking a sample
	sample       uint64     // lookups per sample
	hits, misses uint64     // the counters at the start of the sample
	prev         float64    // the previous sample's hit ratio; -1 before the first
	step         float64    // the next move, in 1/fracOne, signed
}

const (
	// firstFrac is the window's share to start with: 1%, as W-TinyLFU
	// starts, favouring frequency.
	firstFrac = fracOne / 100
	// fullStep is the largest move: 1/16 of the cache.
	fullStep = fracOne / 16
	// stepDecay shrinks the step after each sample.
	stepDecay = 0.98
	// restartJump is the change in hit ratio that restores the full step.
	restartJump = 0.05
)

func (cl *climber) init(limit int) {
	cl.frac.Store(firstFrac)
	cl.sample = uint64(max(limit, sampleMin))
	cl.prev = -1
	cl.step = fullStep
}

// A sample is max(Limit, sampleMin) lookups: at least one Limit's worth,
// so that the cache's content has turned over since the last move before
// the move is judged, and at least sampleMin, so that the hit ratio of a
// sample has a standard error under 0.6 points (0.5/sqrt(8192)), below
// what a full step changes. (Caffeine samples ten Limits; at 25% of a
// trace's keys that is one sample in a million lookups, and the cache
// stays at its first window share. TestTraceHitRatio: 10 x Limit gives a
// mean of 45.3%, max(Limit, 8192) 46.0%.)
const sampleMin = 8192

// climb takes a sample if one is complete: hits and misses are the
// cache's counters now. It never waits: a sample being taken by another
// goroutine is left to it.
func (cl *climber) climb(sum func() (uint64, uint64)) {
	if !cl.mu.TryLock() {
		return
	}
	defer cl.mu.Unlock()
	hits, misses := sum()
	n := hits - cl.hits + misses - cl.misses
	if n < cl.sample {
		return
	}
	ratio := float64(hits-cl.hits) / float64(n)
	cl.hits, cl.misses = hits, misses
	if cl.prev >= 0 {
		if ratio < cl.prev {
			cl.step = -cl.step
		}
		if math.Abs(ratio-cl.prev) >= restartJump {
			cl.step = math.Copysign(fullStep, cl.step)
		} else {
			cl.step *= stepDecay
		}
	}
	cl.prev = ratio
	f := cl.frac.Load() + int64(cl.step)
	cl.frac.Store(min(max(f, 0), fracOne))
}
