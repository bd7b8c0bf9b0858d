package timingwheel

import (
	"sync"
	"time"
)

// Stats describes what a TimingWheel or a Scheduler has done since it was
// made. The owner goroutine keeps the counters and publishes a copy after
// each of its wake-ups, so callers pay nothing for them; Stats returns the
// last copy, at most one wake-up old.
type Stats struct {
	// Pending is the number of pending timers: for a TimingWheel, Len
	// at the call; for a Scheduler, the Timers in the wheel as of the
	// owner's last wake-up (Schedule and Cancel calls it has not taken
	// yet are not counted; Scheduler.Len counts them, but waits for the
	// owner).
	Pending int
	// Fired counts timers that came due and were handed to their
	// callback (execute, or the Scheduler's fire). A TimingWheel timer
	// moved later before its slot came up is not fired until its new
	// deadline.
	Fired uint64
	// Removed counts scheduled timers unscheduled before they fired:
	// RemoveTimer, Scheduler.Cancel, and the timers handed to Drain.
	// Timers dropped by Stop are not counted.
	Removed uint64
	// WakeUps counts the owner goroutine's wake-ups: ticks with work,
	// commands, and signals from callers. An idle wheel does not wake.
	WakeUps uint64
	// LargestBatch is the largest number of timers fired in one slice of
	// the owner's work (at most the n of WithBatch).
	LargestBatch int
	// Lateness is how late timers fired: for each, the owner's clock
	// reading when it fired the timer minus the start of the timer's
	// deadline tick. It does not include the wait for an executor
	// goroutine, nor the rounding of deadlines up to whole ticks.
	Lateness Durations
}

// DurationBounds are the upper bounds of Durations.Buckets, in order; the
// last bucket counts what is longer than the last bound.
var DurationBounds = [...]time.Duration{
	100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond,
	100 * time.Millisecond, time.Second, 10 * time.Second,
}

// Durations is a histogram of durations: how late timers fired
// (Stats.Lateness), and, in the packages built on the wheel, how long
// cache loads and jobs' runs took, and how late the runs started. It is
// the module's one histogram type, so an exporter reads all of them alike.
type Durations struct {
	Count uint64        // durations counted
	Sum   time.Duration // their sum
	Max   time.Duration // the longest
	// Buckets[i] counts the durations at most DurationBounds[i] and more
	// than DurationBounds[i-1] (any, for i=0); the last bucket counts
	// those longer than every bound.
	Buckets [len(DurationBounds) + 1]uint64
}

// observe adds one timer's lateness.
func (l *Durations) observe(d time.Duration) {
	l.Count++
	l.Sum += d
	l.Max = max(l.Max, d)
	i := 0
	for i < len(DurationBounds) && d > DurationBounds[i] {
		i++
	}
	l.Buckets[i]++
}

// counters are the owner's statistics: written by the owner goroutine
// only, published under mu after each wake-up.
type counters struct {
	st    Stats // owner only, except WakeUps (from driver.loops) and Pending
	slice uint64

	mu  sync.Mutex
	pub Stats
}

// fired counts a timer handed to its callback, whose deadline tick was
// when. Owner only.
func (d *driver[T]) fired(when int64) {
	d.st.st.Fired++
	d.st.st.Lateness.observe(time.Duration(max(d.nowNs-mulSat(when, d.interval), 0)))
}

// startSlice and endSlice bracket one slice of advance work, to find the
// largest batch. Owner only.
func (d *driver[T]) startSlice() { d.st.slice = d.st.st.Fired }
func (d *driver[T]) endSlice() {
	d.st.st.LargestBatch = max(d.st.st.LargestBatch, int(d.st.st.Fired-d.st.slice))
}

// publish makes the owner's counters visible to stats. Owner only, once
// per wake-up: one uncontended lock.
func (d *driver[T]) publish() {
	d.st.st.Pending = d.w.count
	d.st.mu.Lock()
	d.st.pub = d.st.st
	d.st.mu.Unlock()
}

// stats returns the last published counters.
func (d *driver[T]) stats() Stats {
	d.st.mu.Lock()
	s := d.st.pub
	d.st.mu.Unlock()
	s.WakeUps = d.loops.Load()
	return s
}
