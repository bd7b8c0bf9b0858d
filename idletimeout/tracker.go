package idletimeout

import (
	"errors"
	"log/slog"
	"math"
	"math/bits"
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttlkit/ttlkit/internal/pool"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// tracker is one timing wheel and its activity clock, shared by the
// connections of a Listener, or by the connections Wrap gives the same
// Resolution.
//
// The activity clock. While any connection is tracked, a clock timer fires
// on every tick of the wheel and publishes the wheel's time into now. Read
// and Write copy now into the connection's stamp when it is newer: an
// atomic load and compare per call, a store at most once per tick. A stamp
// s says the activity happened after s was published, and before its
// successor publication was stored. The owner remembers, for the last
// publications, both the published value and a clock reading taken right
// after the store (the ring), so a check can turn a stamp into an upper
// bound of the activity's time that is never too early and at most one tick
// too late.
type tracker struct {
	// now is the activity clock, ns since origin. Written by the owner,
	// read by every Read and Write; alone on its cache line.
	now atomic.Int64
	_   [56]byte

	origin time.Time
	res    int64 // Resolution, ns
	sched  *timingwheel.Scheduler[*Conn]

	clock   timingwheel.Timer[*Conn] // the clock timer; Value is nil
	clockOn atomic.Bool              // clock timer scheduled or firing
	tracked atomic.Int64             // tracked connections
	stopped atomic.Bool              // stop was called: track fails

	// Owner goroutine only (and the constructor, before the owner starts).
	ring []publication
	mask int64
	head int64 // publications so far; ring[(head-1)&mask] is the current one

	// afterStore, tests only, runs on the owner between a publication's
	// store and the reading that bounds it: a late owner.
	afterStore func()

	wg    sync.WaitGroup // event goroutines
	stats counters

	// Reaps without an OnIdle (plain closes) queue here for up to
	// GOMAXPROCS reaper goroutines (the module's worker pool), so a storm
	// of expiries does not start a goroutine each; they leave when the
	// queue is empty.
	reapers *pool.Pool[verdict, struct{}]

	// Shared trackers (Wrap): key in the shared map, refs guarded by sharedMu.
	key  *sharedKey
	refs int
}

// publication is one value of the activity clock: at is the value
// published, stored a clock reading taken after it was stored.
type publication struct{ at, stored int64 }

type counters struct {
	accepted, wrapped, closed, released atomic.Uint64
	reaped                              [numReasons]atomic.Uint64
	events, kept, panics                atomic.Uint64
	open                                atomic.Int64
}

// ringSize returns how many publications a tracker for s remembers: a
// power of two above the longest timeout in resolutions, so a check can
// always place a stamp as old as one timeout.
func ringSize(s *settings) int64 {
	if !s.enabled() {
		return 0
	}
	ratio := ceilDiv(max(s.maxT, int64(s.res)), int64(s.res))
	return int64(1) << bits.Len64(uint64(ratio+8))
}

// newTracker returns a tracker with resolution res remembering ring
// publications; start runs its wheel.
func newTracker(res time.Duration, ring int64) *tracker {
	t := &tracker{origin: time.Now(), res: int64(res)}
	t.reapers = pool.New(pool.Config[verdict, struct{}]{
		Workers:      max(runtime.GOMAXPROCS(0), 2),
		ExitWhenIdle: true,
		Run:          t.reapOne,
	})
	if ring > 0 {
		t.ring = make([]publication, ring)
		t.mask = ring - 1
		t.ring[0] = publication{at: 0, stored: t.since()}
		t.head = 1
	}
	return t
}

// start starts the wheel.
func (t *tracker) start() error {
	sched, err := timingwheel.NewScheduler(time.Duration(t.res), int(min(int64(len(t.ring)), 4096)), t.fire)
	if err != nil {
		return err
	}
	t.sched = sched
	return nil
}

// since returns the time since origin in ns.
func (t *tracker) since() int64 { return int64(time.Since(t.origin)) }

// stop stops the wheel and waits for event goroutines. Idempotent. It must
// not be called from an event goroutine of t.
func (t *tracker) stop() {
	t.stopped.Store(true)
	if t.sched != nil {
		t.sched.Stop()
	}
	t.wg.Wait()
	<-t.reapers.Idle() // the owner, which queues reaps, has stopped
}

// startClock arms the clock timer if it is not running. Called after
// tracked was incremented.
func (t *tracker) startClock() {
	if !t.clockOn.Load() && t.clockOn.CompareAndSwap(false, true) {
		// 1ns means the wheel's next tick: a full resolution from here
		// would skip one tick and publish the clock up to two ticks stale,
		// past the documented timeout + 2 × Resolution bound.
		if t.sched.Schedule(&t.clock, 1) != nil {
			t.clockOn.Store(false) // stopped: nothing to tick for
		}
	}
}

// fire is the Scheduler callback, on the owner goroutine.
func (t *tracker) fire(tm *timingwheel.Timer[*Conn], now time.Time) time.Duration {
	nowNs := int64(now.Sub(t.origin))
	if tm == &t.clock {
		return t.tick(nowNs)
	}
	return t.check(tm.Value, nowNs)
}

// tick publishes the clock and re-arms the clock timer for the next tick of
// the wheel while connections are tracked. The clearing store before the
// re-check pairs with startClock: a connection tracked concurrently either
// sees clockOn false and arms the timer itself, or is seen here.
func (t *tracker) tick(nowNs int64) time.Duration {
	t.publish(nowNs)
	t.clockOn.Store(false)
	if t.tracked.Load() > 0 && t.clockOn.CompareAndSwap(false, true) {
		return 1 // the wheel's next tick
	}
	return 0
}

// publish makes nowNs the activity clock.
func (t *tracker) publish(nowNs int64) {
	if nowNs <= t.ring[(t.head-1)&t.mask].at {
		return
	}
	t.now.Store(nowNs)
	if t.afterStore != nil {
		t.afterStore()
	}
	t.ring[t.head&t.mask] = publication{at: nowNs, stored: t.since()}
	t.head++
}

// successorStored returns an upper bound of the time of any activity
// stamped s: the stored reading of the first publication after s. It
// reports false when no publication after s exists yet, so the activity may
// be happening now. A stamp older than the ring gets the oldest entry's
// reading, which is later than its successor's: late, never early.
func (t *tracker) successorStored(s int64) (int64, bool) {
	hi := t.head - 1
	if s >= t.ring[hi&t.mask].at {
		return 0, false
	}
	lo := max(0, t.head-int64(len(t.ring)))
	// First index in [lo, hi] whose publication is after s.
	for lo < hi {
		mid := lo + (hi-lo)/2
		if t.ring[mid&t.mask].at > s {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return t.ring[lo&t.mask].stored, true
}

// side is what the owner remembers about one stamp of a connection.
type side struct {
	seen  int64 // the stamp looked at last
	bound int64 // upper bound of the activity time of stamp seen, if final
	final bool
}

// bound returns an upper bound of the last activity recorded in stamp,
// never before it happened. While the stamp is the current publication the
// activity may be ongoing, and the result is a provisional time not before
// nowNs, which no timeout can have expired from.
func (t *tracker) bound(sd *side, stamp, nowNs int64) int64 {
	if stamp == sd.seen && sd.final {
		return sd.bound
	}
	sd.seen = stamp
	if b, ok := t.successorStored(stamp); ok {
		sd.bound, sd.final = b, true
		return b
	}
	sd.final = false
	return max(stamp+t.res, nowNs)
}

// verdict is the owner's finding that a timeout expired, with the stamps
// it was drawn from: the connection is closed only if they are unchanged
// (see Conn.reap).
type verdict struct {
	Event
	rstamp, wstamp int64
	hard           bool // close even a paused connection (rates, MaxAgeGrace)
}

// check is a connection's timer firing: it finds which timeouts expired,
// reports the earliest, and returns when to look again (0: never). A
// reap queued for a reaper goroutine leaves the timer unarmed, and the
// reaper re-arms it if the reap is called off; with OnIdle the timer
// stays armed, to call OnIdle again, and a reap cancels it.
func (t *tracker) check(c *Conn, nowNs int64) time.Duration {
	s := c.cfg
	st := c.state.Load()
	if st != stateTracked && st != statePaused {
		return 0
	}
	v, hard, next, sending := t.judge(c, st == statePaused, nowNs)
	if v.Conn != nil {
		v.hard = hard
		t.queueReap(v)
		return 0 // the reaper closes it or re-arms
	}
	if st == statePaused {
		if s.minT > 0 {
			next = min(next, nowNs+s.minT)
		}
		return wait(next, nowNs)
	}
	rs, ws := c.rstamp.Load(), c.wstamp.Load()
	bR := t.bound(&c.rd, rs, nowNs)
	bW := t.bound(&c.wr, ws, nowNs)
	if sending {
		// Bytes queued to the peer are a write transfer, which the
		// write rate judges: the connection is not idle meanwhile.
		bW = max(bW, nowNs)
	}
	base := [numReasons]int64{ReasonIdle: max(bR, bW), ReasonRead: bR, ReasonWrite: bW}
	var at [numReasons]int64
	due := Reason(0)
	for r := ReasonIdle; r <= ReasonWrite; r++ {
		if s.timeout[r] == 0 {
			continue
		}
		if base[r] != c.base[r] {
			c.base[r], c.fired[r] = base[r], 0
		}
		// Saturating: a timeout near math.MaxInt64 means never, not a
		// wrap to the past.
		at[r] = addSat(base[r], mulSat(s.timeout[r], int64(c.fired[r]+1)))
		if at[r] <= nowNs && (due == 0 || at[r] < at[due]) {
			due = r
		}
	}
	if due != 0 {
		c.fired[due]++
		at[due] = addSat(at[due], s.timeout[due])
		v := verdict{Event: Event{Conn: c, Reason: due, Idle: time.Duration(nowNs - base[due]), Count: c.fired[due]}, rstamp: rs, wstamp: ws}
		if s.onIdle == nil {
			t.queueReap(v)
			return 0 // the reaper closes it or re-arms
		}
		// OnIdle may block: each call gets its own goroutine, so one slow
		// callback never delays another connection's event.
		t.wg.Add(1)
		go t.deliver(v)
	}
	for r := ReasonIdle; r <= ReasonWrite; r++ {
		if s.timeout[r] != 0 {
			next = min(next, at[r])
		}
	}
	return wait(next, nowNs)
}

// wait turns the time of the next look into a delay: 0 (never) for
// math.MaxInt64, else at least 1ns (the next tick).
func wait(next, nowNs int64) time.Duration {
	if next == math.MaxInt64 {
		return 0
	}
	return time.Duration(max(next-nowNs, 1))
}

// queueReap hands a plain close to the reaper goroutines, starting one if
// fewer than GOMAXPROCS run. Called on the owner goroutine; never blocks.
func (t *tracker) queueReap(v verdict) { t.reapers.Push(v) }

// reapOne closes a queued connection on a reaper goroutine, or re-arms its
// timer if the reap is called off.
func (t *tracker) reapOne(v verdict, _ *struct{}) {
	t.stats.events.Add(1)
	if c := v.Conn; !c.reap(v) {
		c.rearm()
	}
}

// deliver runs on its own goroutine: it asks OnIdle, then closes (unless
// the connection changed meanwhile, see Conn.reap) or keeps. An OnIdle
// that panics or calls runtime.Goexit counts as Close: it is logged (with
// timingwheel.ErrGoexit for a Goexit) and counted in Stats.Panics, and the
// connection is closed before the goroutine ends.
func (t *tracker) deliver(v verdict) {
	defer t.wg.Done()
	t.stats.events.Add(1)
	returned := false
	defer func() {
		if returned {
			return
		}
		r := recover()
		if r == nil { // a panic always has a value, panic(nil) too since Go 1.21
			r = timingwheel.ErrGoexit
		}
		t.stats.panics.Add(1)
		slog.Error("idletimeout: OnIdle panicked; closing the connection",
			"reason", v.Reason.String(), "remote", addrString(v.Conn.inner),
			"panic", r, "stack", string(debug.Stack()))
		v.Conn.reap(v)
	}()
	act := v.Conn.cfg.onIdle(v.Event)
	returned = true
	if act == Keep {
		t.stats.kept.Add(1)
		return
	}
	v.Conn.reap(v)
}

// track wraps inner and starts tracking it. It fails with errStopped after
// stop.
func (t *tracker) track(inner net.Conn, s *settings) (*Conn, error) {
	if t.stopped.Load() {
		return nil, errStopped
	}
	c := &Conn{inner: inner, tr: t, cfg: s, counts: s.counts}
	c.timer.Value = c
	if s.counts {
		c.rbytes.Store(transferBit) // no byte yet either way
		c.wbytes.Store(transferBit)
	}
	now := t.since()
	c.born, c.ageDue = now, s.ageLimit(now)
	c.rstamp.Store(now)
	c.wstamp.Store(now)
	c.state.Store(stateTracked)
	t.stats.open.Add(1)
	if t.sched == nil {
		return c, nil
	}
	t.tracked.Add(1)
	t.startClock()
	first := s.minT
	if s.rates() {
		first = min(first, s.grace/4) // rates are looked at every RateGrace / 4
	}
	if s.maxAge > 0 && (first == 0 || c.ageDue-now < first) {
		first = max(c.ageDue-now, 1) // MaxAge first (or alone)
	}
	if err := t.sched.Schedule(&c.timer, time.Duration(first)); err != nil {
		c.state.Store(stateClosed)
		t.stats.open.Add(-1)
		t.untrack()
		return nil, err
	}
	return c, nil
}

// errStopped is track's error after stop; callers return net.ErrClosed.
var errStopped = errors.New("idletimeout: tracker stopped")

// rearm makes the owner look at c again on the next tick, after a reap
// was called off, unless c left tracking. A Close racing with it may leave
// the timer armed once more; its check then finds c closed.
func (c *Conn) rearm() {
	if s := c.state.Load(); s == stateTracked || s == statePaused {
		c.tr.sched.Schedule(&c.timer, 1) // ErrClosed after Listener.Close: nothing to look at
	}
}

// untrack is called once per connection leaving tracking.
func (t *tracker) untrack() {
	if t.sched == nil {
		return
	}
	t.tracked.Add(-1)
	if t.key != nil {
		releaseShared(t)
	}
}
