package timingwheel

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
)

// inbox is one shard's list of Timers for the owner goroutine: a new
// timer, an earlier deadline or a cancel stores the Timer's state and
// appends the Timer here once (its queued bit says it is here already).
// mu guards items, removed and the setting of the queued bit of every
// Timer of the shard (the owner clears it after taking the list);
// the keyed wheel's index shard embeds an inbox, and mu guards its key
// table too, so a SetTimer takes one lock.
//
// The owner takes every inbox whole each time it wakes and once more
// before it sleeps (see driver.sleepUntil), so most changes need no
// signal: only one due before the owner's next wake-up (driver.urgent), a
// cancel while the owner sleeps longer than lazyWait, or any change once
// the inbox holds lazyBatch Timers, which bounds its memory.
type inbox[T any] struct {
	mu      sync.Mutex
	items   []*Timer[T]
	removed uint64 // cancels of armed Timers, counted into Stats by the owner
}

// lazyBatch is the inbox length at which a change that is not urgent
// signals the owner all the same.
const lazyBatch = 256

// addLocked appends t, whose queued bit the caller has just set, unless
// the bit was set already (queued: t is in the list), and reports whether
// the caller must signal the owner (after unlocking): urgent is
// driver.urgent's verdict on the change.
func (b *inbox[T]) addLocked(t *Timer[T], queued, urgent bool) (notify bool) {
	if !queued {
		b.items = append(b.items, t)
	}
	return urgent || len(b.items) >= lazyBatch
}

// takeLocked returns the inbox's Timers and leaves spare (an empty list,
// or nil if a burst grew it) in their place; an empty inbox is left as it
// is and nil returned. The Timers' queued bits stay set: the owner clears
// each one after the unlock, just before it reads the Timer's state to
// place it (see driver.placeAll), so a change made while the bit is still
// set needs no second entry (the owner reads it), and one made after it
// appends the Timer again. Clearing them here cost one atomic operation on
// another core's cache line per Timer with the lock held, which callers of
// the shard waited for (RemoveTimer of 1M pending, issue 22).
func (b *inbox[T]) takeLocked(spare []*Timer[T]) []*Timer[T] {
	items := b.items
	if len(items) == 0 {
		return nil
	}
	if cap(spare) > 4096 {
		spare = nil // give back what a burst grew
	}
	b.items = spare[:0]
	return items
}

// shardCount is the number of shards of a key index or a Scheduler's
// queues: enough that callers on different cores rarely meet on one lock,
// few enough that a burst of calls is handed to the owner in large
// batches.
func shardCount() int {
	return 1 << bits.Len(uint(min(max(8*runtime.GOMAXPROCS(0), 8), 256)-1))
}

// queueCount is the number of shards cfg asks for: WithQueues's n
// rounded up to a power of two, or shardCount().
func queueCount(cfg config) int {
	if !cfg.queuesSet {
		return shardCount()
	}
	return 1 << bits.Len(uint(cfg.queues-1))
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
