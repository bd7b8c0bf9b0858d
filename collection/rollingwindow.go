package collection

import (
	"sync"
	"time"
)

type (
	// Numerical is the constraint of the values a RollingWindow adds up:
	// every integer and floating-point type, and types defined on them. It
	// has the type set of go-zero's mathx.Numerical (which go-zero's
	// collection.Numerical aliases), so the two constraints are
	// interchangeable.
	Numerical interface {
		~int | ~int8 | ~int16 | ~int32 | ~int64 |
			~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 |
			~float32 | ~float64
	}

	// BucketInterface is what a RollingWindow keeps per interval: Add
	// records one value, Reset empties the bucket when the window moves
	// past it. [*Bucket] is the usual choice; supply your own type for
	// other statistics (a maximum, a histogram).
	BucketInterface[T Numerical] interface {
		// Add records v. The window calls it with its lock held.
		Add(v T)
		// Reset empties the bucket for reuse.
		Reset()
	}

	// RollingWindowOption configures NewRollingWindow.
	RollingWindowOption[T Numerical, B BucketInterface[T]] func(rollingWindow *RollingWindow[T, B])

	// RollingWindow is go-zero's collection.RollingWindow: a sliding window
	// over the last size intervals of time, one bucket per interval, safe
	// for concurrent use. Add records a value in the bucket of the current
	// interval; Reduce visits the buckets still inside the window.
	//
	// Intervals are counted from NewRollingWindow with the monotonic clock:
	// the k-th bucket covers [start+k×interval, start+(k+1)×interval). A
	// bucket leaves the window size intervals after it began, and is reset
	// before it is used again.
	RollingWindow[T Numerical, B BucketInterface[T]] struct {
		mu            sync.RWMutex
		buckets       []B
		interval      time.Duration
		start         time.Time // origin of the intervals; carries a monotonic reading
		cur           int       // buckets[cur] is the bucket of interval at
		at            int64     // the interval of the last Add (0 before any)
		ignoreCurrent bool
	}
)

// NewRollingWindow returns a RollingWindow of size buckets, each covering
// interval, made by newBucket, which is called size times here and never
// again. It panics when size < 1 (as go-zero's does), when interval <= 0
// (go-zero's accepts it and panics with a division by zero in the first
// Add or Reduce) or when newBucket is nil.
func NewRollingWindow[T Numerical, B BucketInterface[T]](newBucket func() B, size int,
	interval time.Duration, opts ...RollingWindowOption[T, B]) *RollingWindow[T, B] {
	switch {
	case size < 1:
		panic("collection: NewRollingWindow: size must be greater than 0")
	case interval <= 0:
		panic("collection: NewRollingWindow: interval must be positive")
	case newBucket == nil:
		panic("collection: NewRollingWindow: nil newBucket")
	}
	rw := &RollingWindow[T, B]{
		buckets:  make([]B, size),
		interval: interval,
		start:    time.Now(),
	}
	for i := range rw.buckets {
		rw.buckets[i] = newBucket()
	}
	for _, opt := range opts {
		opt(rw)
	}
	return rw
}

// IgnoreCurrentBucket makes Reduce skip the bucket of the current interval,
// which is still filling, so that a rate computed over the window is not
// pulled down by a partial bucket. Reduce then visits at most size-1
// buckets.
func IgnoreCurrentBucket[T Numerical, B BucketInterface[T]]() RollingWindowOption[T, B] {
	return func(rw *RollingWindow[T, B]) { rw.ignoreCurrent = true }
}

// Add records v in the bucket of the current interval, first resetting
// the buckets of the intervals that passed since the last Add. It reads
// the clock once. O(1), or O(size) after an idle period.
func (rw *RollingWindow[T, B]) Add(v T) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	now := rw.now()
	if passed := now - rw.at; passed > 0 {
		n := len(rw.buckets)
		for i := range int(min(passed, int64(n))) {
			rw.buckets[(rw.cur+1+i)%n].Reset()
		}
		rw.cur = int((int64(rw.cur) + passed%int64(n)) % int64(n))
		rw.at = now
	}
	rw.buckets[rw.cur].Add(v)
}

// Reduce calls fn for each bucket of the last size intervals, the current
// one included (with IgnoreCurrentBucket, without it), oldest first. The
// buckets of the intervals after the last Add are skipped, being empty:
// once the window has moved on without an Add, fn sees fewer than size
// buckets, and none once the last Add is size intervals old. A bucket of
// an earlier interval in which nothing was added is passed, empty. O(size).
//
// fn runs with the window's read lock held: it must not call Add (that
// waits for the lock forever) and must not keep B past its return.
func (rw *RollingWindow[T, B]) Reduce(fn func(b B)) {
	rw.mu.RLock()
	defer rw.mu.RUnlock()
	n := int64(len(rw.buckets))
	span := rw.now() - rw.at // intervals since the last Add's
	count := n - span        // buckets of the window that Add has filled
	if span == 0 && rw.ignoreCurrent {
		count--
	}
	for i := range max(count, 0) {
		// The oldest bucket in the window follows, in the ring, the last
		// one the window has moved past.
		fn(rw.buckets[(int64(rw.cur)+span+1+i)%n])
	}
}

// now returns the current interval, counted from rw.start.
func (rw *RollingWindow[T, B]) now() int64 {
	return int64(time.Since(rw.start) / rw.interval)
}

// Bucket is the usual bucket of a RollingWindow: the sum and the number of
// the values added in its interval.
type Bucket[T Numerical] struct {
	Sum   T     // the sum of the values added
	Count int64 // how many values were added
}

// Add adds v to the sum and counts it.
func (b *Bucket[T]) Add(v T) {
	b.Sum += v
	b.Count++
}

// Reset empties the bucket.
func (b *Bucket[T]) Reset() {
	b.Sum = 0
	b.Count = 0
}
