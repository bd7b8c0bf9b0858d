package timingwheel

import (
	"math/bits"
	"runtime"
	"sync/atomic"
)

// handoff is one shard's list of work for the owner goroutine, used by the
// keyed layer (timers to place) and the Scheduler (commands to apply). It
// is guarded by its shard's lock.
//
// The owner takes every shard's list each time it wakes and once more
// before it goes to sleep, so most work needs no signal: a timer due no
// earlier than the owner's next wake-up (driver.pickup) is placed in time
// anyway. A caller signals (driver.signal) only for urgent work: a timer
// due before that wake-up (driver.urgent), a removal while the owner
// sleeps longer than lazyWait (driver.removalUrgent), or any work once the
// list holds lazyBatch items, which bounds the memory a list holds.
type handoff[E any] struct {
	items []E
}

// lazyBatch is the list length at which work that is not urgent is
// signalled all the same.
const lazyBatch = 256

// addLocked appends e and reports whether the caller must signal the owner.
func (h *handoff[E]) addLocked(e E, urgent bool) (notify bool) {
	h.items = append(h.items, e)
	return h.wantLocked(urgent)
}

// wantLocked reports whether the caller must signal the owner for work just
// added, or already in the list and now urgent.
func (h *handoff[E]) wantLocked(urgent bool) bool {
	return urgent || len(h.items) >= lazyBatch
}

// takeLocked returns the list and replaces it with spare, which the owner
// got back from recycle; an empty list is left in place and nil returned.
func (h *handoff[E]) takeLocked(spare []E) []E {
	if len(h.items) == 0 {
		return nil
	}
	items := h.items
	h.items = spare[:0]
	return items
}

// recycle clears a processed list for reuse as the next spare, giving back
// what a burst grew.
func recycle[E any](items []E) []E {
	if cap(items) > 4096 {
		return nil
	}
	clear(items)
	return items[:0]
}

// shardCount is the number of shards of a key index or a Scheduler's
// queues: enough that callers on different cores rarely meet on one lock,
// few enough that a burst of calls is handed to the owner in large
// batches.
func shardCount() int {
	return 1 << bits.Len(uint(min(max(8*runtime.GOMAXPROCS(0), 8), 256)-1))
}

// shardSet is a fixed number of shards, each allocated when first written
// to, so that a wheel holding few timers pays for few shards (an empty one
// for none) however many processors there are. Readers that find no shard
// treat it as empty.
type shardSet[S any] struct {
	p    []atomic.Pointer[S]
	init func(*S) // prepares a new shard before it is published; may be nil
}

func newShardSet[S any](n int, init func(*S)) shardSet[S] {
	return shardSet[S]{p: make([]atomic.Pointer[S], n), init: init}
}

// len returns the number of shards, allocated or not.
func (s *shardSet[S]) len() int { return len(s.p) }

// get returns shard i, or nil if it has never been written to.
func (s *shardSet[S]) get(i int) *S { return s.p[i].Load() }

// open returns shard i, allocating it on first use.
func (s *shardSet[S]) open(i int) *S {
	if sh := s.p[i].Load(); sh != nil {
		return sh
	}
	return s.alloc(i)
}

func (s *shardSet[S]) alloc(i int) *S {
	sh := new(S)
	if s.init != nil {
		s.init(sh)
	}
	if s.p[i].CompareAndSwap(nil, sh) {
		return sh
	}
	return s.p[i].Load() // another caller published it first
}
