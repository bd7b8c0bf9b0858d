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
		lk            windowLock
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
	rw.lk.cond.L = &rw.lk.mu
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
	rw.lk.lock()
	defer rw.lk.unlock()
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
// Reduce calls run side by side, and Add waits for those running. So fn
// may call Reduce (on this window or another), but must not call Add on
// this window, directly or through a goroutine it waits for: that Add
// would wait for fn's own Reduce to return, for ever. fn must not keep B
// past its return. B's Add and Reset run under the window's lock and must
// not call the window at all.
func (rw *RollingWindow[T, B]) Reduce(fn func(b B)) {
	rw.lk.rlock()
	defer rw.lk.runlock()
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

// windowLock is a RollingWindow's lock: Add holds it alone, Reduce calls
// share it. Unlike a sync.RWMutex, a Reduce never waits behind an Add
// while another Reduce runs, which would deadlock a Reduce called from a
// Reduce's fn (issue 20 item 8): it joins the running ones. A Reduce
// that finds none running cannot be nested, and lets waiting Adds go
// first, so an Add waits only while Reduce calls overlap without a gap.
type windowLock struct {
	mu      sync.Mutex // held by Add while it changes the window
	cond    sync.Cond  // on mu: Add waits for readers, Reduce for writers
	readers int        // Reduce calls running; guarded by mu
	writers int        // Add calls waiting for readers to end; guarded by mu
}

// lock waits for the running Reduce calls to end and returns with mu
// held, shutting out Reduce calls until unlock.
func (l *windowLock) lock() {
	l.mu.Lock()
	if l.readers == 0 {
		return
	}
	l.writers++
	for l.readers > 0 {
		l.cond.Wait()
	}
	if l.writers--; l.writers == 0 {
		l.cond.Broadcast() // Reduce calls held back for the writers
	}
}

func (l *windowLock) unlock() { l.mu.Unlock() }

// rlock counts a Reduce in: at once if others run, otherwise once no Add
// waits.
func (l *windowLock) rlock() {
	l.mu.Lock()
	for l.readers == 0 && l.writers > 0 {
		l.cond.Wait()
	}
	l.readers++
	l.mu.Unlock()
}

// runlock counts a Reduce out, waking the waiting Adds after the last.
func (l *windowLock) runlock() {
	l.mu.Lock()
	if l.readers--; l.readers == 0 && l.writers > 0 {
		l.cond.Broadcast()
	}
	l.mu.Unlock()
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
