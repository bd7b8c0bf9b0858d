package cache

import (
	"math/bits"
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
// choice needs no per-goroutine state and no runtime hook; two goroutines
// that collide on a stripe still count correctly, only slower.
type readCounters struct {
	stripes []counterStripe
	shift   uint // 64 - log2(len(stripes))
}

// counterStripe is padded to two cache lines: some processors fetch lines
// in adjacent pairs.
type counterStripe struct {
	hits, misses atomic.Uint64
	_            [128 - 16]byte
}

// init makes about sixteen stripes per processor, a power of two in
// [32, 512]: two goroutines that pick the same stripe keep picking it, and
// their hits then cost twice as much (measured: reads of a few hot keys
// from two goroutines), so collisions must be rare, not merely harmless.
func (r *readCounters) init(procs int) {
	n := 1 << bits.Len(uint(min(max(16*procs, 32), 512)-1))
	r.stripes = make([]counterStripe, n)
	r.shift = uint(64 - bits.TrailingZeros(uint(n)))
}

// stripe returns the calling goroutine's stripe.
func (r *readCounters) stripe() *counterStripe {
	var here byte
	// Stacks are at least 2 KiB apart; drop the bits that vary with the
	// call depth inside one goroutine, then spread the rest (Fibonacci
	// hashing keeps the top bits).
	a := uint64(uintptr(unsafe.Pointer(&here))) >> 11
	return &r.stripes[(a*0x9E3779B97F4A7C15)>>r.shift]
}

func (r *readCounters) hit()  { r.stripe().hits.Add(1) }
func (r *readCounters) miss() { r.stripe().misses.Add(1) }

// sum returns the totals. Concurrent lookups may or may not be included.
func (r *readCounters) sum() (hits, misses uint64) {
	for i := range r.stripes {
		hits += r.stripes[i].hits.Load()
		misses += r.stripes[i].misses.Load()
	}
	return hits, misses
}
