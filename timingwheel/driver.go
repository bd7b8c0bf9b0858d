package timingwheel

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// cmd is a function to run on the owner goroutine, for a caller that waits
// until it has run: Scheduler.Len. Everything else reaches the owner in
// the shards' inboxes.
type cmd struct {
	fn   func()
	done chan struct{} // closed once fn has run
}

// layer is what sits on the driver: the keyed wheel or the Scheduler. Every
// method runs on the owner goroutine.
type layer[T any] interface {
	// inbox returns shard i's inbox, or nil if nothing was ever queued
	// there. The shards are numbered 0 to driver.shards-1.
	inbox(i int) *inbox[T]
	// fire handles a Timer the owner has settled (its state is firing),
	// due at tick due and already unlinked, and returns the tick to re-arm
	// it at, or 0.
	fire(t *Timer[T], due int64) int64
	// flush runs after each slice of advance work.
	flush()
	// stopped runs once, when the owner goroutine exits for good.
	stopped()
}

// driver is the owner goroutine and the channels that reach it. It reads
// the clock (or counts ticker ticks), advances the wheel, sleeps until the
// next visit, and hands commands and fired timers to its layer.
//
// The owner protocol (doc/design/timingwheel-protocol.md has the picture):
// callers store a Timer's state and, for a new timer, an earlier deadline
// or a cancel, append it to its shard's inbox once (armLocked, cancelLocked);
// a later deadline is one CAS (later). The owner loops:
//   - wait: if nothing is queued and no backlog remains, publish when the
//     owner will wake unprompted (pickup, longSleep), look at every inbox
//     once more, then block until a signal on ready, a command, the alarm
//     or a tick;
//   - takeWork: read the clock, take every inbox (place) and the commands;
//   - fireDue: advance the wheel by one slice of at most WithBatch timers;
//     a due Timer fires only if its state swaps from the deadline to
//     firing (fire), and its layer hands it to the callback.
//
// A caller sends on ready only when its change cannot wait for the owner's
// next wake-up.
type driver[T any] struct {
	w        *wheel[T]
	cfg      config
	interval int64 // nanoseconds
	origin   time.Time

	// cmds carries the one request whose caller waits for an answer:
	// Scheduler.Len.
	cmds chan cmd
	// ready wakes the owner for changes that cannot wait; the owner then
	// takes every inbox. Capacity 1, sent to without waiting (see
	// signal).
	ready   chan struct{}
	shards  int           // number of the layer's inboxes
	stop    chan struct{} // closed by Stop
	done    chan struct{} // closed when the owner goroutine has exited
	once    sync.Once
	stopped atomic.Bool

	// pickup and longSleep tell callers whether a change needs a signal
	// (see urgent and removalUrgent). The owner stores them before its
	// last look at the lists ahead of a sleep; a caller reads them after
	// appending its change with its shard locked. So either that look
	// finds the change, or the caller reads what the owner stored for the
	// sleep.
	pickup    atomic.Int64 // the tick the owner will wake at unprompted
	longSleep atomic.Bool  // that wake-up is more than lazyWait away
	// lazyTicks is how many ticks a removal may wait for the owner's next
	// wake-up: lazyWait, rounded down, at least 1.
	lazyTicks int64

	// loops counts the owner's loop iterations (wake-ups); tests read it to
	// check that an idle wheel sleeps.
	loops atomic.Uint64
	// beforeAdvance, for tests, runs on the owner goroutine after it has
	// taken the queued changes and before it advances the wheel.
	beforeAdvance atomic.Pointer[func()]

	// Owner goroutine only.
	nowNs int64 // time of the current iteration, in ns since origin
	// nowTick is the tick of the current iteration: nowNs / interval, or
	// under WithTicker the ticks received, which nowNs may not be able to
	// hold (it saturates) when the interval is huge.
	nowTick int64
	// ticks counts the ticks received in ticker mode; written by the owner
	// only, read by Remaining.
	ticks atomic.Int64
	batch []cmd       // commands received, not run yet
	spare []*Timer[T] // the inbox list taken last time, for reuse
	// tookRemoval: a removal was taken since the owner last went to sleep,
	// so its next sleep is no longer than lazyWait (see wait).
	tookRemoval bool

	st counters // see stats.go
}

// lazyWait bounds how long a removal (RemoveTimer, Scheduler.Cancel) may
// sit in its shard's list without a signal (or one interval, if that is
// longer): about that long, a removed timer stays linked and a removed key
// stays referenced.
const lazyWait = time.Second

func newDriver[T any](interval time.Duration, numSlots int, cfg config) *driver[T] {
	return &driver[T]{
		w:         newWheel[T](numSlots),
		cfg:       cfg,
		interval:  int64(interval),
		origin:    time.Now(),
		cmds:      make(chan cmd, 16),
		ready:     make(chan struct{}, 1),
		shards:    queueCount(cfg),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		lazyTicks: max(int64(lazyWait/interval), 1),
		batch:     make([]cmd, 0, 4),
	}
}

// signal wakes the owner for changes that cannot wait. It never waits: a
// token already in ready wakes the owner just as well.
func (d *driver[T]) signal() {
	select {
	case d.ready <- struct{}{}:
	default:
	}
}

// urgent reports whether a timer newly due at tick want (from
// callerDeadline) needs the owner before its next unprompted wake-up.
// Relative deadlines (WithTicker) always do: they count from the tick the
// owner is at when it takes them.
func (d *driver[T]) urgent(want int64) bool {
	return want <= relativeTop || want < d.pickup.Load()
}

// removalUrgent reports whether a removal (RemoveTimer, Scheduler.Cancel)
// needs the owner before its next unprompted wake-up: only if that is more
// than lazyWait away. Having taken a removal, the owner sleeps no longer
// than lazyWait, so a steady stream of removals wakes it about once per
// lazyWait, not once per removal. Read with the shard locked, after the
// append, like pickup.
func (d *driver[T]) removalUrgent() bool { return d.longSleep.Load() }

// MaxSlots is the largest numSlots that New and NewScheduler accept. Each
// slot costs a few dozen bytes whether or not it holds a timer, and delays
// longer than a rotation are exact anyway, so more slots buy nothing.
const MaxSlots = 1 << 20

func validateWheel(interval time.Duration, numSlots int) error {
	switch {
	case interval <= 0:
		return argError("interval %v, want > 0", interval)
	case numSlots <= 0:
		return argError("numSlots %d, want > 0", numSlots)
	case numSlots > MaxSlots:
		return argError("numSlots %d, want <= %d (MaxSlots)", numSlots, MaxSlots)
	}
	return nil
}

func validDelay(delay time.Duration) error {
	if delay <= 0 {
		return argError("delay %v, want > 0", delay)
	}
	return nil
}

// call runs fn on the owner goroutine and returns once it has run. It
// waits while the command buffer is full, and returns ErrClosed if the
// wheel is stopped before fn runs.
func (d *driver[T]) call(fn func()) error {
	if d.stopped.Load() {
		return ErrClosed
	}
	c := cmd{fn: fn, done: make(chan struct{})}
	select {
	case d.cmds <- c:
	case <-d.done:
		return ErrClosed
	}
	select {
	case <-c.done:
		return nil
	case <-d.done:
		select {
		case <-c.done:
			return nil
		default:
			return ErrClosed
		}
	}
}

// shutdown stops the owner goroutine and waits for it to exit. Idempotent.
func (d *driver[T]) shutdown() {
	d.signalStop()
	<-d.done
}

// signalStop tells the owner goroutine to exit without waiting for it. Once
// it has been called, later calls touch no channel, which lets a cleanup
// call it from outside a synctest bubble for a wheel stopped inside one.
func (d *driver[T]) signalStop() {
	d.once.Do(func() {
		d.stopped.Store(true)
		close(d.stop)
	})
}

// run is the owner goroutine.
func (d *driver[T]) run(l layer[T]) {
	returned := false
	defer func() {
		if !returned {
			// A callback running on this goroutine (a Scheduler's fire,
			// or execute under WithInline) called runtime.Goexit, and has
			// been reported. The wheel is consistent between any two
			// timers it hands out, so a new owner goroutine carries on.
			go d.run(l)
			return
		}
		// Unschedule whatever is left, queued or linked, so a stopped
		// wheel holds no links into its callers' Timers, and disarm them
		// (dead, not queued) so that another Scheduler takes them up.
		for i := range d.shards {
			if b := l.inbox(i); b != nil {
				b.mu.Lock()
				for _, t := range b.takeLocked(nil) {
					t.word.Store(0)
				}
				b.mu.Unlock()
			}
		}
		d.w.drain(func(t *Timer[T]) { t.word.Store(0) })
		d.publish()
		l.stopped()
		close(d.done)
	}()
	d.loop(l)
	returned = true
}

// loop is the body of run: wait for work, take it, fire what is due. It
// returns when Stop is called.
func (d *driver[T]) loop(l layer[T]) {
	a := newAlarm(d.cfg.ticks)
	defer a.close()
	// busy: fireDue has more work for ticks already passed. It starts true
	// so that an owner taking over after a Goexit first finishes what its
	// predecessor left: the rest of a slice, the callbacks of timers
	// already fired.
	busy := true
	for {
		d.loops.Add(1)
		if !d.wait(l, &a, busy) {
			// Timers fired before a Goexit in an inline callback have
			// left the index; run them rather than drop them.
			l.flush()
			return
		}
		d.takeWork(l)
		busy = d.fireDue(l)
	}
}

// wait returns when the owner has something to do, and false once Stop
// has been called. It returns at once if a command or a signal is queued,
// or if the owner is busy with a backlog. Otherwise it publishes when the
// owner will wake unprompted (sleepUntil) and blocks until a command, a
// signal, the alarm or a tick. Commands received are kept in d.batch.
//
// Under WithTicker, commands already queued are taken before a tick is
// looked for: they were made before the tick was received and count from
// before it; a command that arrives after the tick is applied after it,
// so it counts from the tick and is never early.
func (d *driver[T]) wait(l layer[T], a *alarm, busy bool) bool {
	select {
	case <-d.stop:
		return false
	case c := <-d.cmds:
		d.batch = append(d.batch, c)
		return true
	case <-d.ready:
		return true
	default:
	}
	if busy {
		return true
	}
	next := d.sleepUntil(l, a)
	if a.timer != nil && next < a.armed {
		// Measured from the clock, not from nowNs: callbacks (WithInline,
		// Scheduler) may have run since it was read.
		a.armed = next
		a.timer.Reset(time.Until(d.origin.Add(time.Duration(mulSat(next, d.interval)))))
	}
	select {
	case <-d.stop:
		return false
	case c := <-d.cmds:
		d.batch = append(d.batch, c)
	case <-d.ready:
	case <-a.c():
		a.armed = never
	case _, ok := <-a.ticks:
		if !ok {
			a.ticks = nil // a closed ticker freezes the wheel
			break
		}
		d.ticks.Add(1)
	}
	return true
}

// sleepUntil publishes the tick the owner will wake at unprompted (pickup)
// and whether that is more than lazyWait away (longSleep), then takes
// every shard's list once more: work added before this look is found by
// it, and work added after it is signalled if it cannot wait for that
// wake-up. Work found may be due sooner; then it publishes again. Callers
// that keep adding work do not keep the owner awake: only work due before
// the published wake-up does, and that is signalled anyway. It returns
// the tick to wake at.
//
// After taking a removal the owner sleeps no longer than lazyWait, so that
// later removals need no signal (see removalUrgent). Under WithTicker the
// owner wakes for every tick, so removals wait for the next one; a closed
// ticker never wakes it, so every removal signals.
func (d *driver[T]) sleepUntil(l layer[T], a *alarm) int64 {
	frozen := a.frozen()
	next := d.sleepTarget(frozen)
	took := false
	for {
		d.pickup.Store(next)
		d.longSleep.Store(frozen || a.timer != nil && next-d.nowTick > d.lazyTicks)
		if !d.takeAll(l) {
			break
		}
		took = true
		n := d.sleepTarget(frozen)
		if n >= next {
			break
		}
		next = n
	}
	if took {
		d.publish() // the removals counted, the Timers placed
	}
	d.tookRemoval = false
	return next
}

// sleepTarget is the tick the owner should wake at: the wheel's next
// visit, or sooner after taking a removal.
func (d *driver[T]) sleepTarget(frozen bool) int64 {
	next := d.w.nextVisit()
	if d.tookRemoval && !frozen {
		next = min(next, d.nowTick+d.lazyTicks)
	}
	return next
}

// takeWork reads the clock and takes what is queued: every shard's list,
// then the commands, in batches until the command channel is empty or a
// buffer's worth has been served, so that between slices of a backlog
// callers waiting on a full buffer get through at once. Every command in
// a batch was sent before the clock is read for it, so deadlines measured
// from that reading are never early.
func (d *driver[T]) takeWork(l layer[T]) {
	for served := 0; ; {
	more:
		for len(d.batch) < cap(d.batch) {
			select {
			case c := <-d.cmds:
				d.batch = append(d.batch, c)
			case <-d.ready:
			default:
				break more
			}
		}
		d.readClock()
		d.takeAll(l) // before the commands: Scheduler.Len counts every list
		for i, c := range d.batch {
			c.fn()
			close(c.done)
			d.batch[i] = cmd{} // release what the command referenced
		}
		served += len(d.batch)
		full := len(d.batch) == cap(d.batch)
		d.batch = d.batch[:0]
		if !full || served >= max(cap(d.cmds), cap(d.batch)) {
			return
		}
	}
}

// fireDue advances the wheel to the current tick by one slice of at most
// WithBatch timers, hands the fired ones to their callbacks and publishes
// the counters. It reports whether work for ticks already passed remains.
func (d *driver[T]) fireDue(l layer[T]) (busy bool) {
	if hook := d.beforeAdvance.Load(); hook != nil {
		(*hook)()
	}
	d.startSlice()
	busy = d.w.advance(d.nowTick, d.cfg.budget, func(t *Timer[T]) int64 { return d.fire(l, t) })
	d.endSlice()
	l.flush()
	d.publish()
	return busy
}

// recovered builds the report for a callback that did not return: r is
// what recover returned, nil for a runtime.Goexit (a panic(nil) recovers
// as a *runtime.PanicNilError).
func recovered(key, r any) *PanicError {
	if r == nil {
		r = ErrGoexit
	}
	return &PanicError{Key: key, Value: r, Stack: debug.Stack()}
}
