package timingwheel

import "time"

// Queue is one of a Scheduler's inboxes with its lock, for a caller that
// keeps data of its own under that lock: a cache shard whose entries
// embed Timers, say. ScheduleAtLocked and CancelLocked, called with the
// Queue locked, hand a change to the owner with no second lock, and a
// caller's changes under one lock reach the owner in the order they were
// made. The owner takes the Queue's lock too, briefly, each time it
// collects the changes queued there (every lazyBatch changes, or sooner
// when one is urgent), so the caller must not hold it long while Timers
// fall due, nor wait for the Scheduler (Len, Stop) while holding it.
//
// Any Timer may go through any Queue, and through the Scheduler's own
// Schedule and Cancel, which pick a Queue from the Timer's address: the
// Timer's state word, not the Queue, decides what the owner does.
type Queue[T any] struct {
	in     inbox[T] // its mu is the Queue's lock
	s      *Scheduler[T]
	signal bool     // guarded by in.mu: a change asked Unlock to wake the owner
	_      [64]byte // keep the next Queue's lock off this cache line
}

// Queues returns the number of the Scheduler's Queues: WithQueues's
// value, or one chosen for runtime.GOMAXPROCS(0) at construction.
func (s *Scheduler[T]) Queues() int { return s.shards.len() }

// Queue returns Queue i, 0 <= i < Queues(); it panics for any other i.
// The same i always returns the same Queue.
func (s *Scheduler[T]) Queue(i int) *Queue[T] { return s.shards.open(i) }

// Lock locks q.
func (q *Queue[T]) Lock() { q.in.mu.Lock() }

// Unlock unlocks q and then, if a change made under the lock asked for
// it, wakes the owner goroutine (without waiting for it).
func (q *Queue[T]) Unlock() {
	wake := q.signal
	q.signal = false
	q.in.mu.Unlock()
	if wake {
		q.s.d.signal()
	}
}

// ScheduleAtLocked is [Scheduler.ScheduleAt] for a caller holding q's
// lock: t fires at the first tick at or after at. It returns an error
// wrapping ErrArgument for a nil t and ErrClosed after Stop. O(1); no
// allocation once q has grown to its working size.
func (q *Queue[T]) ScheduleAtLocked(t *Timer[T], at time.Time) error {
	if t == nil {
		return argError("nil timer")
	}
	d := q.s.d
	if d.stopped.Load() {
		return ErrClosed
	}
	if want := d.deadlineAt(at); !later(t, want) {
		q.armLocked(t, want)
	}
	return nil
}

// armLocked stores want in t and queues it if the owner must act (see
// driver.armLocked). q is locked.
func (q *Queue[T]) armLocked(t *Timer[T], want int64) {
	if q.s.d.armLocked(&q.in, t, want) {
		q.signal = true
	}
}

// cancelLocked stores dead in t and queues it if it was armed (see
// driver.cancelLocked). q is locked.
func (q *Queue[T]) cancelLocked(t *Timer[T]) {
	if t.deadline() != dead && q.s.d.cancelLocked(&q.in, t) {
		q.signal = true
	}
}

// CancelLocked is [Scheduler.Cancel] for a caller holding q's lock. It
// returns an error wrapping ErrArgument for a nil t and ErrClosed after
// Stop. O(1); no allocation once q has grown to its working size.
func (q *Queue[T]) CancelLocked(t *Timer[T]) error {
	if t == nil {
		return argError("nil timer")
	}
	if q.s.d.stopped.Load() {
		return ErrClosed
	}
	q.cancelLocked(t)
	return nil
}
