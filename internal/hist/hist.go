// Package hist counts durations in the fixed buckets that the Stats of
// cache and jobs publish (the same bounds as timingwheel.DurationBounds),
// so an exporter can turn any of them into a histogram the same way.
//
// Counts is a plain histogram for a caller that holds a lock anyway;
// Striped is one that goroutines running at the same time update without a
// lock, each on a stripe of its own most of the time.
package hist

import (
	"math/bits"
	"sync/atomic"
	"time"
	"unsafe"
)

// Bounds are the buckets' upper bounds, in order; the last bucket counts
// what is longer than the last bound.
var Bounds = [...]time.Duration{
	100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond,
	100 * time.Millisecond, time.Second, 10 * time.Second,
}

// Len is the number of buckets.
const Len = len(Bounds) + 1

// Counts is a histogram of durations. timingwheel.Durations, the Stats type
// of cache and jobs, has the same fields, so a Counts converts to it.
type Counts struct {
	Count uint64        // durations observed
	Sum   time.Duration // their sum
	Max   time.Duration // the longest
	// Buckets[i] counts the durations at most Bounds[i] and more than
	// Bounds[i-1] (any, for i=0); the last counts those beyond every bound.
	Buckets [Len]uint64
}

// bucket returns the index of d's bucket.
func bucket(d time.Duration) int {
	i := 0
	for i < len(Bounds) && d > Bounds[i] {
		i++
	}
	return i
}

// Observe adds d, counted as 0 if negative.
func (c *Counts) Observe(d time.Duration) {
	d = max(d, 0)
	c.Count++
	c.Sum += d
	c.Max = max(c.Max, d)
	c.Buckets[bucket(d)]++
}

// Add adds o's observations to c.
func (c *Counts) Add(o *Counts) {
	c.Count += o.Count
	c.Sum += o.Sum
	c.Max = max(c.Max, o.Max)
	for i, n := range o.Buckets {
		c.Buckets[i] += n
	}
}

// Striped is a histogram updated with atomics on one of several stripes,
// so that goroutines observing at the same time rarely write the same
// cache line. The stripe is picked by the address of a variable on the
// caller's stack, as cache's hit and miss counters do: goroutines running
// at the same time have different stacks, and a long-lived goroutine (a
// worker) keeps picking the same stripe. Two goroutines that pick the same
// stripe share it: correct, only slower. The zero Striped is not usable:
// call Init.
type Striped struct {
	s     []stripe
	shift uint // 64 - log2(len(s))
}

// stripe is padded to two cache lines: some processors fetch lines in
// adjacent pairs. The count is the sum of the buckets.
type stripe struct {
	sum     atomic.Int64
	max     atomic.Int64
	buckets [Len]atomic.Uint64
	_       [128 - (2+Len)*8]byte
}

// Init makes n stripes, rounded up to a power of two (at least one).
func (h *Striped) Init(n int) {
	n = 1 << bits.Len(uint(max(n, 1)-1))
	h.s = make([]stripe, n)
	h.shift = uint(64 - bits.TrailingZeros(uint(n)))
}

// Observe adds d, counted as 0 if negative: two atomic adds, and a
// compare-and-swap when d is a new maximum of its stripe. It never
// allocates nor blocks.
func (h *Striped) Observe(d time.Duration) {
	d = max(d, 0)
	var here byte
	// Stacks are at least 2 KiB apart: drop the bits that vary with the
	// call depth, then spread the rest (Fibonacci hashing keeps the top
	// bits; with one stripe, the shift by 64 gives 0).
	a := uint64(uintptr(unsafe.Pointer(&here))) >> 11
	s := &h.s[(a*0x9E3779B97F4A7C15)>>h.shift]
	s.sum.Add(int64(d))
	s.buckets[bucket(d)].Add(1)
	for m := s.max.Load(); int64(d) > m; m = s.max.Load() {
		if s.max.CompareAndSwap(m, int64(d)) {
			break
		}
	}
}

// Load returns the sum of the stripes. Observations made meanwhile may or
// may not be included, and Count may not match Sum exactly then.
func (h *Striped) Load() Counts {
	var c Counts
	for i := range h.s {
		s := &h.s[i]
		c.Sum += time.Duration(s.sum.Load())
		c.Max = max(c.Max, time.Duration(s.max.Load()))
		for b := range s.buckets {
			n := s.buckets[b].Load()
			c.Buckets[b] += n
			c.Count += n
		}
	}
	return c
}
