package timingwheel

import (
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// maxDelay caps delays so that deadlines never overflow: about 146 years.
const maxDelay = time.Duration(1 << 62)

// op names a command sent to the owner goroutine.
type op uint8

const (
	opLen op = iota + 1 // Scheduler.Len, and a barrier for everything queued before it
	opRun               // run fn on the owner goroutine (TimingWheel.Drain)
)

// cmd is one request to the owner goroutine that its caller waits for;
// everything else reaches the owner in per-shard batches (see handoff).
type cmd[T any] struct {
	op  op
	fn  func()
	res *result[T]
}

// result carries the answer of a synchronous command; the owner fills it and
// closes done.
type result[T any] struct {
	done chan struct{}
	n    int
}

// layer is what sits on the driver: it interprets commands and fired timers.
// Every method runs on the owner goroutine.
type layer[T any] interface {
	apply(c *cmd[T])
	// fire handles a due timer, already unlinked, and returns the tick to
	// re-arm it at, or 0.
	fire(t *Timer[T]) int64
	// flush runs after each slice of advance work.
	flush()
	// take handles the batch of changes queued in one shard and reports
	// whether there was any. The shards are numbered 0 to driver.shards-1.
	take(shard int) bool
}

// driver is the owner goroutine and the channel that reaches it. It reads
// the clock (or counts ticker ticks), advances the wheel, sleeps until the
// next visit, and hands commands and fired timers to its layer.
type driver[T any] struct {
	w        *wheel[T]
	cfg      config
	interval int64 // nanoseconds
	origin   time.Time

	cmds chan cmd[T]
	// ready tells the owner that some shard (of the keyed layer or the
	// Scheduler) has changes that cannot wait; the owner then takes every
	// shard's list. Capacity 1, sent to without waiting (see signal).
	ready   chan struct{}
	shards  int           // number of shards of the layer's handoff lists
	stop    chan struct{} // closed by Stop
	done    chan struct{} // closed when the owner goroutine has exited
	once    sync.Once
	stopped atomic.Bool

	// pickup and eager tell callers when their batched work needs a
	// signal (see urgent and removed). The owner stores them before its
	// last look at the batches ahead of a sleep; a caller reads them after
	// adding its work with its shard locked. So either that look finds the
	// work, or the caller reads what the owner stored for the sleep.
	pickup atomic.Int64 // the tick the owner will wake at unprompted
	eager  atomic.Bool  // the owner sleeps longer than lazyWait; see removed
	// nudge tells a sleeping owner that a removal waits: the owner wakes,
	// takes it, and its next sleep is no longer than lazyWait, during
	// which removals do not nudge. Capacity 1; senders never wait.
	nudge chan struct{}
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

	st counters // see stats.go
}

// lazyWait bounds how long a removal (RemoveTimer, Scheduler.Cancel) may
// sit in its shard's batch without a signal (or one interval, if that is
// longer): about that long, a removed timer stays linked and a removed key
// stays referenced.
const lazyWait = time.Second

func newDriver[T any](interval time.Duration, numSlots int, cfg config) *driver[T] {
	return &driver[T]{
		w:         newWheel[T](numSlots),
		cfg:       cfg,
		interval:  int64(interval),
		origin:    time.Now(),
		cmds:      make(chan cmd[T], cfg.buffer),
		ready:     make(chan struct{}, 1),
		shards:    shardCount(),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		nudge:     make(chan struct{}, 1),
		lazyTicks: max(int64(lazyWait/interval), 1),
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

// removed is called by a caller that has queued a removal (RemoveTimer,
// Scheduler.Cancel), which is never urgent: it only has to reach the owner
// within about lazyWait (or one tick, if longer). If the owner sleeps for
// longer (eager), the first removal of that sleep nudges it awake (one
// send, never waiting); the sleep after that is capped at lazyWait and
// not eager, so a steady stream of removals wakes the owner about twice
// per lazyWait, not once per removal.
func (d *driver[T]) removed() {
	if d.eager.Load() && d.eager.CompareAndSwap(true, false) {
		select {
		case d.nudge <- struct{}{}:
		default:
		}
	}
}

// urgent reports whether a timer newly due at tick want (from
// callerDeadline) needs the owner before its next unprompted wake-up.
// Relative deadlines (WithTicker) always do: they count from the tick the
// owner is at when it takes them.
func (d *driver[T]) urgent(want int64) bool {
	return want <= relativeTop || want < d.pickup.Load()
}

// resolve turns a deadline from callerDeadline into an absolute tick. Owner
// only.
func (d *driver[T]) resolve(want int64) int64 {
	if want > relativeTop {
		return want
	}
	return d.after(time.Duration(relativeTop - want))
}

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

// send queues c for the owner. It waits while the buffer is full and returns
// ErrClosed once Stop has been called.
func (d *driver[T]) send(c cmd[T]) error {
	if d.stopped.Load() {
		return ErrClosed
	}
	select {
	case d.cmds <- c:
		return nil
	default:
	}
	select {
	case d.cmds <- c:
		return nil
	case <-d.done:
		return ErrClosed
	}
}

// call sends c and waits until the owner has applied it.
func (d *driver[T]) call(c cmd[T]) (*result[T], error) {
	c.res = &result[T]{done: make(chan struct{})}
	if err := d.send(c); err != nil {
		return nil, err
	}
	select {
	case <-c.res.done:
		return c.res, nil
	case <-d.done:
		select {
		case <-c.res.done:
			return c.res, nil
		default:
			return nil, ErrClosed
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

// after converts a delay, measured from the current iteration's time, into
// the first tick at or after the deadline: never early.
// Under WithTicker it counts whole ticks from the last one received.
func (d *driver[T]) after(delay time.Duration) int64 {
	if d.cfg.ticks != nil {
		return d.nowTick + ceilDiv(int64(min(delay, maxDelay)), d.interval)
	}
	return d.tickAfter(d.nowNs, delay)
}

// tickAfter returns the first tick at or after from+delay (ns since origin).
func (d *driver[T]) tickAfter(from int64, delay time.Duration) int64 {
	ns := from + int64(min(delay, maxDelay))
	return ceilDiv(ns, d.interval)
}

// callerDeadline returns the deadline tick for a delay starting now, read
// by the caller: a deadline then does not drift later while its timer waits
// for the owner, and the wheel clamps one the owner has already passed to
// its next tick. Under WithTicker only the owner knows the time, so the
// delay is returned encoded with relative, for the owner to resolve.
func (d *driver[T]) callerDeadline(delay time.Duration) int64 {
	if d.cfg.ticks != nil {
		return relative(delay)
	}
	return d.tickAfter(int64(time.Since(d.origin)), delay)
}

// deadlineAt is callerDeadline for an absolute time: the first tick at or
// after at, or tick 0 (long passed: the wheel clamps it to its next tick)
// for a time before the wheel's start. It reads the clock only under
// WithTicker.
func (d *driver[T]) deadlineAt(at time.Time) int64 {
	if d.cfg.ticks != nil {
		return relative(max(time.Until(at), 0))
	}
	return d.tickAfter(0, max(at.Sub(d.origin), 0))
}

// until returns the time from now to the start of tick want (from
// callerDeadline), at least 0. Under WithTicker, now is the last tick
// received, and a deadline the owner has still to resolve counts whole
// ticks from there.
func (d *driver[T]) until(want int64) time.Duration {
	var now int64
	switch {
	case want <= relativeTop:
		delay := relativeTop - want
		return time.Duration(mulSat(ceilDiv(delay, d.interval), d.interval))
	case d.cfg.ticks != nil:
		// In ticks: their time in ns may not fit an int64.
		return time.Duration(mulSat(max(want-d.ticks.Load(), 0), d.interval))
	default:
		now = int64(time.Since(d.origin))
	}
	return time.Duration(max(mulSat(want, d.interval)-now, 0))
}

// ceilDiv returns a/b rounded up, for a >= 0 and b > 0, without the
// overflow of (a+b-1)/b when b is huge (an interval of math.MaxInt64).
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// mulSat returns a*b for a, b >= 0, or math.MaxInt64 if that overflows.
func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// now returns the current iteration's time.
func (d *driver[T]) now() time.Time { return d.origin.Add(time.Duration(d.nowNs)) }

func (d *driver[T]) readClock() {
	if d.cfg.ticks != nil {
		d.nowTick = d.ticks.Load()
		d.nowNs = mulSat(d.nowTick, d.interval)
		return
	}
	if ns := int64(time.Since(d.origin)); ns > d.nowNs {
		d.nowNs = ns
		d.nowTick = ns / d.interval
	}
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
		// Unschedule whatever is left, so a stopped wheel holds no links
		// into its callers' Timers and they can be scheduled elsewhere.
		d.w.drain(func(*Timer[T]) {})
		d.publish()
		close(d.done)
	}()
	d.loop(l)
	returned = true
}

// loop is the body of run; it returns when Stop is called.
func (d *driver[T]) loop(l layer[T]) {
	var (
		sleep *time.Timer
		wake  <-chan time.Time
		armed = int64(never)         // tick sleep is set for
		batch = make([]cmd[T], 0, 4) // only Len and Drain send commands
		// busy: advance has more work for ticks already passed. It starts
		// true so that an owner taking over after a Goexit first finishes
		// what its predecessor left: the rest of a slice, the callbacks
		// of timers already fired.
		busy   = true
		nudged bool // a removal is waiting (see removed)
		ticks  = d.cfg.ticks
	)
	if ticks == nil {
		sleep = time.NewTimer(time.Hour)
		sleep.Stop()
		wake = sleep.C
		defer sleep.Stop()
	}
	for {
		d.loops.Add(1)
		// Serve whatever is queued first. While a backlog is pending
		// (busy), go on with it after that. Otherwise wait: commands already
		// queued are taken before a tick is looked for, because under
		// WithTicker they were made before the tick was received and count
		// from before it; a command that arrives after the tick is applied
		// after it (below), so it counts from the tick and is never early.
		select {
		case <-d.stop:
			// Timers fired before a Goexit in an inline callback have left
			// the index; run them rather than drop them.
			l.flush()
			return
		case c := <-d.cmds:
			batch = append(batch, c)
		case <-d.ready:
		case <-d.nudge:
			nudged = true
		default:
			if busy {
				break
			}
			// Publish when the owner will wake unprompted, then look at
			// every batch once more: work added before this look is found
			// by it, and work added after it is signalled if it cannot wait
			// for that wake-up (see urgent). Work found may be due sooner;
			// then publish again. Callers that keep adding work do not keep
			// the owner awake: only work due before the published wake-up
			// does, and that is signalled anyway.
			//
			// A sleep longer than lazyWait makes the first removal nudge
			// the owner awake; the sleep after a nudge is cut to lazyWait
			// and removals do not nudge it (see removed).
			// Under WithTicker the owner wakes for every tick, so a removal
			// waits for the next one; a closed ticker never wakes it, so
			// every removal nudges.
			nowTick := d.nowTick
			next := d.w.nextVisit()
			frozen := sleep == nil && ticks == nil
			if nudged && !frozen {
				next = min(next, nowTick+d.lazyTicks)
			}
			nudged = false
			for {
				d.pickup.Store(next)
				d.eager.Store(frozen || sleep != nil && next-nowTick > d.lazyTicks)
				if !d.takeAll(l) {
					break
				}
				if n := d.w.nextVisit(); n < next {
					next = n
					continue
				}
				break
			}
			if sleep != nil {
				if next < armed {
					// Measured from the clock, not from nowNs: callbacks
					// (WithInline, Scheduler) may have run since it was read.
					armed = next
					sleep.Reset(time.Until(d.origin.Add(time.Duration(mulSat(next, d.interval)))))
				}
			}
			select {
			case <-d.stop:
				return
			case c := <-d.cmds:
				batch = append(batch, c)
			case <-d.ready:
			case <-d.nudge:
				nudged = true
			case <-wake:
				armed = never
			case _, ok := <-ticks:
				if !ok {
					ticks = nil // a closed ticker freezes the wheel
					break
				}
				d.ticks.Add(1)
			}
		}
		// Take what else is queued, in batches, until the queue is empty or
		// a buffer's worth has been served: between slices of a backlog,
		// callers waiting on a full buffer get through at once. Every
		// command in a batch was sent before the clock is read for it, so
		// deadlines measured from that reading are never early.
		for served := 0; ; {
		more:
			for len(batch) < cap(batch) {
				select {
				case c := <-d.cmds:
					batch = append(batch, c)
				case <-d.ready:
				default:
					break more
				}
			}
			d.readClock()
			d.takeAll(l) // before the commands: Scheduler.Len counts every batch
			for i := range batch {
				l.apply(&batch[i])
				batch[i] = cmd[T]{} // release what the command referenced
			}
			served += len(batch)
			full := len(batch) == cap(batch)
			batch = batch[:0]
			if !full || served >= max(cap(d.cmds), cap(batch)) {
				break
			}
		}
		if hook := d.beforeAdvance.Load(); hook != nil {
			(*hook)()
		}
		d.startSlice()
		busy = d.w.advance(d.nowTick, d.cfg.budget, l.fire)
		d.endSlice()
		l.flush()
		d.publish()
	}
}

// takeAll has l take every shard's batch, signalled or not, and reports
// whether there was any work. Owner only.
func (d *driver[T]) takeAll(l layer[T]) bool {
	took := false
	for i := range d.shards {
		took = l.take(i) || took
	}
	return took
}

// recovered builds the Panic report for a callback that did not return:
// r is what recover returned, nil for a runtime.Goexit (a panic(nil)
// recovers as a *runtime.PanicNilError).
func recovered(key, r any) Panic {
	if r == nil {
		r = ErrGoexit
	}
	return Panic{Key: key, Recovered: r, Stack: debug.Stack()}
}
