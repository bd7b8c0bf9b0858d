package timingwheel

import (
	"context"
	"time"
	"unsafe"

	"github.com/ttlkit/ttlkit/internal/table"
)

// Scheduler is the handle-level API beside [TimingWheel], on the same
// owner protocol without its key index: it schedules Timers that the
// caller owns, typically embedded in the caller's own entries, so no
// second index by key is needed and scheduling allocates nothing. The
// cache, idletimeout, jobs and natsjobs packages are built on it.
//
// All methods are safe for concurrent use. Schedule and Cancel store the
// Timer's deadline (or dead) in the Timer itself and return without ever
// waiting for the owner goroutine; a Timer the owner must link, relink or
// unlink is also appended to its shard's inbox, which the owner takes in
// batches. The last call on a Timer wins, and a firing is decided by one
// atomic swap of the Timer's state: see Cancel.
type Scheduler[T any] struct {
	d      *driver[T]
	onFire func(t *Timer[T], now time.Time) time.Duration
	shards shardSet[Queue[T]]

	beforeQueue func() // tests only: runs before a Timer's inbox is locked
}

// NewScheduler returns a started Scheduler that advances every interval over
// numSlots slots and calls fire for each Timer that falls due.
//
// fire runs on the owner goroutine, one call at a time, with the Timer
// already unscheduled and now the time the wheel is processing (never
// before the Timer's deadline). It must be quick, must not block on
// anything that may wait for the Scheduler, and must not call the
// Scheduler's Len or Stop, which would wait for the goroutine running fire.
// Schedule and Cancel never wait and may be called from fire.
// To re-arm the Timer, return d > 0: it is re-armed to fire d after now,
// without a trip through an inbox; any d shorter than one interval (1ns,
// say) re-arms it for the next tick. A Cancel or Schedule of the Timer made
// while fire runs wins over the re-arm. A Schedule to a later deadline made
// before the Timer fell due moves it, so fire is not called at the old
// deadline. A panic in fire is
// recovered and reported to the panic handler, and the Timer stays
// unscheduled.
//
// Accuracy, errors and options are as for [New]; WithConcurrency and
// WithInline do not apply.
func NewScheduler[T any](interval time.Duration, numSlots int, fire func(t *Timer[T], now time.Time) time.Duration, opts ...Option) (*Scheduler[T], error) {
	if err := validateWheel(interval, numSlots); err != nil {
		return nil, err
	}
	if fire == nil {
		return nil, argError("nil fire")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s := &Scheduler[T]{
		d:      newDriver[T](interval, numSlots, cfg),
		onFire: fire,
	}
	s.shards = newShardSet(s.d.shards, func(q *Queue[T]) { q.s = s })
	go s.d.run(s)
	return s, nil
}

// Schedule arms t to fire after delay, whether or not it is already
// scheduled: an earlier deadline relinks it, a later one only rewrites its
// deadline (one atomic operation, no lock). A Schedule that lands before
// the owner settles t's firing at its old deadline moves it; one that
// lands after re-arms it for the new deadline once it has fired (as it
// would after fire returned). It returns an error wrapping ErrArgument for
// a nil t or delay <= 0, and ErrClosed after Stop. O(1); no allocation
// once the shard's inbox has grown to its working size.
func (s *Scheduler[T]) Schedule(t *Timer[T], delay time.Duration) error {
	if err := validDelay(delay); err != nil {
		return err
	}
	if t == nil {
		return argError("nil timer")
	}
	return s.arm(t, s.d.callerDeadline(delay))
}

// ScheduleAt is Schedule with a deadline instead of a delay: t fires at the
// first tick at or after at, or on the next tick if at has passed. It reads
// no clock, so a caller that already holds the current time saves one
// reading per call. at is compared with the Scheduler's start by its
// monotonic reading when it has one (times from time.Now and their Add do);
// under WithTicker, whose time is the ticks received, at counts from
// time.Now instead. It returns ErrArgument for a nil t and ErrClosed after
// Stop. O(1), as Schedule.
func (s *Scheduler[T]) ScheduleAt(t *Timer[T], at time.Time) error {
	if t == nil {
		return argError("nil timer")
	}
	return s.arm(t, s.d.deadlineAt(at))
}

// Cancel unschedules t if it is scheduled; a Timer that already fired, or
// was never scheduled, is left alone. No firing of t begins after Cancel
// returns (unless t is scheduled again), even when t is already due and
// the owner is busy firing the Timers of its tick: a fire callback may
// cancel a sibling due on the same tick. A firing that has begun is not
// recalled, and Cancel does not wait for it (as time.Timer.Stop), but the
// re-arm its fire returns is dropped. The owner unlinks t, and so stops
// referencing it, when it takes t from its inbox: within about a second,
// or one interval if that is longer (at the next tick under WithTicker).
// It returns ErrArgument for a nil t and ErrClosed after Stop. O(1); no
// allocation once the shard's inbox has grown to its working size.
func (s *Scheduler[T]) Cancel(t *Timer[T]) error {
	if t == nil {
		return argError("nil timer")
	}
	if s.d.stopped.Load() {
		return ErrClosed
	}
	if t.deadline() == dead {
		return nil // not armed: nothing to stop, nothing to unlink
	}
	q := s.shards.open(s.shardOf(t))
	q.Lock()
	q.cancelLocked(t)
	q.Unlock()
	return nil
}

// arm makes t due at tick want: one CAS for a later deadline, else a store
// and an append to t's inbox, with a signal if the owner must wake for it.
// It never waits.
func (s *Scheduler[T]) arm(t *Timer[T], want int64) error {
	if s.d.stopped.Load() {
		return ErrClosed
	}
	if later(t, want) {
		return nil
	}
	if s.beforeQueue != nil {
		s.beforeQueue()
	}
	q := s.shards.open(s.shardOf(t))
	q.Lock()
	q.armLocked(t, want)
	q.Unlock()
	return nil
}

// inbox returns Queue i's inbox, or nil. Owner side of layer.
func (s *Scheduler[T]) inbox(i int) *inbox[T] {
	if q := s.shards.get(i); q != nil {
		return &q.in
	}
	return nil
}

// Len returns the number of scheduled Timers, counting every command queued
// before the call. It returns 0 after Stop.
func (s *Scheduler[T]) Len() int {
	n := 0
	// The owner takes every shard's list before it runs a command, so
	// the count includes what was queued before the call.
	if err := s.d.call(func() { n = s.d.w.count }); err != nil {
		return 0
	}
	return n
}

// Stop stops the Scheduler and returns once its owner goroutine has
// exited; since fire runs on that goroutine, no fire is running or will run
// once Stop returns. Scheduled Timers never fire and are unscheduled, so
// they may be scheduled on another Scheduler; later calls of other methods
// return ErrClosed, and calling Stop again does nothing. It must not be
// called from fire.
func (s *Scheduler[T]) Stop() { s.d.shutdown() }

// Shutdown is Stop with a bound on the wait: it stops the Scheduler and
// waits for its owner goroutine (and so for a running fire) to exit, or
// for ctx to be done. It returns nil once the owner has exited, or
// ctx.Err() if ctx ended first; the Scheduler is stopped either way. It
// may be called more than once, and after Stop, but not from fire.
func (s *Scheduler[T]) Shutdown(ctx context.Context) error {
	s.d.signalStop()
	select {
	case <-s.d.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns the Scheduler's counters, as of the owner goroutine's
// last wake-up. It never waits for the owner, works after Stop, and is
// O(1).
func (s *Scheduler[T]) Stats() Stats { return s.d.stats() }

// fire calls the fire callback for t, whose firing the owner has settled,
// and reports a panic or a Goexit (see WithPanicHandler); t then stays unscheduled.
func (s *Scheduler[T]) fire(t *Timer[T], due int64) (rearm int64) {
	s.d.fired(due)
	returned := false
	defer func() {
		if !returned {
			rearm = 0
			// On a Goexit the owner does not get to settle t: do it here.
			t.casDeadline(firing, dead)
			s.d.cfg.onPanic(recovered(t.Value, recover()))
		}
	}()
	d := s.onFire(t, s.d.now())
	returned = true
	if d > 0 {
		return s.d.after(d)
	}
	return 0
}

func (s *Scheduler[T]) flush()   {}
func (s *Scheduler[T]) stopped() {}

// shardOf returns the index of t's shard, from its address (a scheduled
// Timer is on the heap, which does not move) spread by a multiplicative
// hash: cheaper than maphash.
func (s *Scheduler[T]) shardOf(t *Timer[T]) int {
	h := uint64(uintptr(unsafe.Pointer(t))) * 0x9e3779b97f4a7c15
	return table.Shard(h, s.shards.len())
}
