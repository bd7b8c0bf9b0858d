package timingwheel

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ttlkit/ttlkit/internal/table"
)

// Scheduler is the handle-level layer under [TimingWheel]: it schedules
// Timers that the caller owns, typically embedded in the caller's own
// entries, so no second index by key is needed and scheduling allocates
// nothing. The cache and idletimeout packages are built on it.
//
// All methods are safe for concurrent use. Schedule and Cancel queue a
// command for the owner goroutine and return without ever waiting for it;
// the commands for one Timer take effect in the order they were made, and
// the owner picks them up in batches. A Cancel nevertheless takes effect
// at once for firing: see Cancel.
type Scheduler[T any] struct {
	d      *driver[T]
	onFire func(t *Timer[T], now time.Time) time.Duration
	shards shardSet[schedShard[T]]

	// Owner only.
	spare     []change[T] // the list taken from a shard last time
	firing    *Timer[T]   // the Timer whose firing checkCancel is deciding
	cancelled bool        // a Cancel of firing was among the commands taken

	beforeQueue func() // tests only: runs before a command's shard is locked
}

// schedShard queues Schedule and Cancel commands for the owner. A Timer's
// commands always go to the same shard (picked by its address), so they
// take effect in order; the owner takes a shard's whole list at once.
//
// cancels counts the Cancels queued in the shard; taken is its value when
// the owner last took the list. Before the owner fires a Timer, it
// compares the two for the Timer's shard: if a Cancel has come since, it
// takes the list first (see checkCancel). That comparison is the moment a
// firing begins: a Cancel counted before it stops the firing, one counted
// after it comes too late.
type schedShard[T any] struct {
	mu      sync.Mutex
	pending handoff[change[T]]
	cancels atomic.Uint32 // written under mu
	taken   uint32        // owner only, written under mu
	_       [64]byte
}

// change is one Schedule or Cancel waiting in a shard for the owner.
type change[T any] struct {
	timer *Timer[T]
	when  int64 // the deadline, from callerDeadline or deadlineAt; dead for a Cancel
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
// without a trip through the channel, which is also the way to recheck a
// deadline that was pushed later while the Timer waited; any d shorter than
// one interval (1ns, say) re-arms it for the next tick. A panic in fire is
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
	s.shards = newShardSet[schedShard[T]](s.d.shards, nil)
	go s.d.run(s)
	return s, nil
}

// Schedule arms t to fire after delay, whether or not it is already
// scheduled: an earlier deadline relinks it, a later one only rewrites its
// deadline. A Schedule made just before t's old deadline may reach the
// owner after t fired there; t then fires at both (have fire check the
// state it acts on, or Cancel first). It returns an error wrapping ErrArgument for a nil t or
// delay <= 0, and ErrClosed after Stop. O(1); no allocation once the
// shard's queue has grown to its working size.
func (s *Scheduler[T]) Schedule(t *Timer[T], delay time.Duration) error {
	if err := validDelay(delay); err != nil {
		return err
	}
	if t == nil {
		return argError("nil timer")
	}
	return s.queue(change[T]{t, s.d.callerDeadline(delay)})
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
	return s.queue(change[T]{t, s.d.deadlineAt(at)})
}

// Cancel unschedules t if it is scheduled; a Timer that already fired, or
// was never scheduled, is left alone. No firing of t begins after Cancel
// returns (unless t is scheduled again), even when t is already due and
// the owner is busy firing the Timers of its tick: a fire callback may
// cancel a sibling due on the same tick. A firing that has begun is not
// recalled, and Cancel does not wait for it (as time.Timer.Stop). The owner
// unlinks t, and so stops referencing it, when it takes the command:
// within about a second, or one interval if that is longer (at the next
// tick under WithTicker). It returns ErrArgument for a nil t and ErrClosed
// after Stop. O(1); no allocation once the shard's queue has grown to its
// working size.
func (s *Scheduler[T]) Cancel(t *Timer[T]) error {
	if t == nil {
		return argError("nil timer")
	}
	return s.queue(change[T]{t, dead})
}

// queue appends c to its Timer's shard and tells the owner if c is urgent
// (see handoff). Urgency is decided with the shard locked, after the
// append, as the owner protocol requires (see driver). It never waits.
func (s *Scheduler[T]) queue(c change[T]) error {
	if s.d.stopped.Load() {
		return ErrClosed
	}
	if s.beforeQueue != nil {
		s.beforeQueue()
	}
	sh := s.shards.open(s.shardOf(c.timer))
	sh.mu.Lock()
	var notify bool
	if c.when == dead {
		notify = sh.pending.addLocked(c, s.d.removalUrgent())
		sh.cancels.Add(1)
	} else {
		notify = sh.pending.addLocked(c, s.d.urgent(c.when))
	}
	sh.mu.Unlock()
	if notify {
		s.d.signal()
	}
	return nil
}

// take applies shard i's queued commands and reports whether there were
// any. Owner only.
func (s *Scheduler[T]) take(i int) bool {
	sh := s.shards.get(i)
	if sh == nil {
		return false
	}
	sh.mu.Lock()
	batch := sh.pending.takeLocked(s.spare)
	sh.taken = sh.cancels.Load()
	sh.mu.Unlock()
	if batch == nil {
		return false
	}
	for j := range batch {
		s.applyChange(&batch[j])
	}
	s.spare = recycle(batch)
	return true
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

// applyChange applies one queued Schedule or Cancel. Owner only.
func (s *Scheduler[T]) applyChange(c *change[T]) {
	if c.when != dead {
		s.d.w.schedule(c.timer, s.d.resolve(c.when))
		return
	}
	s.d.tookRemoval = true
	// The Timer being fired is unlinked already: the first Cancel of it
	// counts as the removal of its firing. A Cancel of it once it has been
	// scheduled again counts when it unlinks it, as for any Timer.
	first := c.timer == s.firing && !s.cancelled
	if c.timer == s.firing {
		s.cancelled = true
	}
	if s.d.w.cancel(c.timer) || first {
		s.d.removedOne()
	}
}

// fire calls the fire callback for t and reports a panic or a Goexit (see
// Panic); t then stays unscheduled.
func (s *Scheduler[T]) fire(t *Timer[T]) (rearm int64) {
	if !s.checkCancel(t) {
		return 0
	}
	s.d.fired(t.when)
	returned := false
	defer func() {
		if !returned {
			rearm = 0
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
// hash: cheaper than maphash, and the owner computes it for every firing.
func (s *Scheduler[T]) shardOf(t *Timer[T]) int {
	h := uint64(uintptr(unsafe.Pointer(t))) * 0x9e3779b97f4a7c15
	return table.Shard(h, s.shards.len())
}

// checkCancel reports whether t, due and already unlinked by advance, is
// to fire. If a Cancel has been queued in t's shard since the owner last
// took it, the owner takes the shard's commands now, in the middle of the
// slice (the wheel is consistent between two timers), and t fires only if
// they neither cancelled it nor scheduled it again. Owner only; O(1)
// unless a Cancel came in t's shard since the last take.
func (s *Scheduler[T]) checkCancel(t *Timer[T]) bool {
	i := s.shardOf(t)
	sh := s.shards.get(i) // not nil: t was scheduled through it
	if sh.cancels.Load() == sh.taken {
		return true
	}
	s.firing, s.cancelled = t, false
	s.take(i)
	s.firing = nil
	return !s.cancelled && !t.scheduled()
}
