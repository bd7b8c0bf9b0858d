package cache

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// readCounters are the hit and miss counters, striped so that concurrent
// readers do not write one cache line on every lookup: a hot key's shard
// would otherwise bounce its counter line between cores on each hit.
//
// A lookup adds to the stripe picked by the address of a variable on its
// own stack. Goroutines running at the same time have different stacks, so
// they usually pick different stripes, and a goroutine keeps picking the
// same one (until its stack moves, which only changes the stripe). The
// choice needs no per-goroutine state and no runtime hook.
//
// Stripes grow with contention: a cache starts with a few, and an add that
// finds its stripe changed under it (a compare-and-swap that fails, which
// only another core's add can cause) counts a collision; after a few, the
// stripes are replaced by four times as many, up to about sixteen per
// processor. Two goroutines that share a stripe keep sharing it and then
// each hit costs twice as much (measured: reads of a few hot keys from two
// goroutines), so collisions must become rare, not merely harmless. A
// cache that is read from one goroutine at a time keeps its few stripes.
// Replaced stripes are kept, with their counts, for sum.
type readCounters struct {
	cur atomic.Pointer[stripes]
	max int // most stripes, a power of two

	mu  sync.Mutex
	old []*stripes // replaced sets; guarded by mu
}

// stripes is one set of counter stripes.
type stripes struct {
	s          []counterStripe
	shift      uint         // 64 - log2(len(s))
	collisions atomic.Int32 // failed compare-and-swaps on this set
}

// counterStripe is padded to two cache lines: some processors fetch lines
// in adjacent pairs.
type counterStripe struct {
	hits, misses atomic.Uint64
	_            [128 - 16]byte
}

const (
	firstStripes   = 4
	growCollisions = 8 // collisions on a set before it is replaced
)

// init starts with firstStripes stripes and allows about sixteen per
// processor, a power of two in [32, 512].
func (r *readCounters) init(procs int) {
	r.max = 1 << bits.Len(uint(min(max(16*procs, 32), 512)-1))
	r.cur.Store(newStripes(min(firstStripes, r.max)))
}

func newStripes(n int) *stripes {
	return &stripes{s: make([]counterStripe, n), shift: uint(64 - bits.TrailingZeros(uint(n)))}
}

// stripe returns the calling goroutine's stripe of set.
func (set *stripes) stripe() *counterStripe {
	var here byte
	// Stacks are at least 2 KiB apart; drop the bits that vary with the
	// call depth inside one goroutine, then spread the rest (Fibonacci
	// hashing keeps the top bits).
	a := uint64(uintptr(unsafe.Pointer(&here))) >> 11
	return &set.s[(a*0x9E3779B97F4A7C15)>>set.shift]
}

func (r *readCounters) hit() {
	set := r.cur.Load()
	r.add(set, &set.stripe().hits)
}

func (r *readCounters) miss() {
	set := r.cur.Load()
	r.add(set, &set.stripe().misses)
}

// add adds one to counter, a counter of set. The compare-and-swap costs
// what an atomic add does, and its failure is the sign of contention.
func (r *readCounters) add(set *stripes, counter *atomic.Uint64) {
	if v := counter.Load(); counter.CompareAndSwap(v, v+1) {
		return
	}
	counter.Add(1)
	if set.collisions.Add(1) == growCollisions && len(set.s) < r.max {
		r.grow(set)
	}
}

// grow replaces set, if still current, by four times as many stripes.
func (r *readCounters) grow(set *stripes) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur.Load() != set {
		return
	}
	r.old = append(r.old, set)
	r.cur.Store(newStripes(min(4*len(set.s), r.max)))
}

// sum returns the totals. Concurrent lookups may or may not be included.
func (r *readCounters) sum() (hits, misses uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, set := range r.old {
		hits, misses = set.addTo(hits, misses)
	}
	return r.cur.Load().addTo(hits, misses)
}

func (set *stripes) addTo(hits, misses uint64) (uint64, uint64) {
	for i := range set.s {
		hits += set.s[i].hits.Load()
		misses += set.s[i].misses.Load()
	}
	return hits, misses
}

// loadCounters are the counters of the loading features that shards do
// not keep. Loads are rare next to reads, so plain atomics do.
type loadCounters struct {
	waits, notFoundHits, loadsNotFound, bulkLoads atomic.Uint64
	refreshes, refreshErrors                      atomic.Uint64
}

// addTo adds the counters to st.
func (l *loadCounters) addTo(st *Stats) {
	st.Waits = l.waits.Load()
	st.NotFoundHits = l.notFoundHits.Load()
	st.LoadsNotFound = l.loadsNotFound.Load()
	st.BulkLoads = l.bulkLoads.Load()
	st.Refreshes = l.refreshes.Load()
	st.RefreshErrors = l.refreshErrors.Load()
}
