package timingwheel

import (
	"math"
	"time"
)

// maxDelay caps delays so that deadlines never overflow, shifted left by
// one in a Timer's word: about 73 years.
const maxDelay = time.Duration(1 << 61)

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
// after at, or tick 1 (long passed: the wheel clamps it to its next tick)
// for a time before the wheel's start. It reads the clock only under
// WithTicker.
func (d *driver[T]) deadlineAt(at time.Time) int64 {
	if d.cfg.ticks != nil {
		return relative(max(time.Until(at), 0))
	}
	return max(d.tickAfter(0, max(at.Sub(d.origin), 0)), 1)
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

// alarm is what wakes a sleeping owner on time: a time.Timer, or under
// WithTicker the ticker's channel. Owner only.
type alarm struct {
	timer *time.Timer      // nil under WithTicker
	armed int64            // the tick timer is set for, or never
	ticks <-chan time.Time // WithTicker's channel; nil once it is closed
}

func newAlarm(ticks <-chan time.Time) alarm {
	a := alarm{armed: never, ticks: ticks}
	if ticks == nil {
		a.timer = time.NewTimer(time.Hour)
		a.timer.Stop()
	}
	return a
}

func (a *alarm) close() {
	if a.timer != nil {
		a.timer.Stop()
	}
}

// c returns the channel that delivers the alarm, or nil under WithTicker.
func (a *alarm) c() <-chan time.Time {
	if a.timer == nil {
		return nil
	}
	return a.timer.C
}

// frozen reports whether nothing wakes the owner on time any more: under
// WithTicker, once the ticker is closed.
func (a *alarm) frozen() bool { return a.timer == nil && a.ticks == nil }
