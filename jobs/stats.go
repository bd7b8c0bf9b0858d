package jobs

import (
	"runtime"
	"sync/atomic"

	"github.com/ttlkit/ttlkit/internal/hist"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// Stats are the Scheduler's counters since New. Counters are read one by
// one, not as a single snapshot, while jobs run.
type Stats struct {
	// Jobs is the number of jobs scheduled (Len).
	Jobs int
	// Queued is the number of runs due and waiting for a worker.
	Queued int
	// Running is the number of attempts running now.
	Running int

	// Added counts jobs added by Add and Replace.
	Added uint64
	// Canceled counts jobs ended by Cancel or Replace.
	Canceled uint64
	// Succeeded, Retried, Failed and Interrupted count finished attempts
	// by outcome (Succeeded, Retrying, Failed, Canceled).
	Succeeded, Retried, Failed, Interrupted uint64
	// DeadLetters counts occurrences that failed for good (each is one
	// Failed attempt).
	DeadLetters uint64
	// Skipped counts occurrences dropped by the overlap policy.
	Skipped uint64
	// Deferred counts the times a due run found the queue full and was
	// offered again on the next tick.
	Deferred uint64
	// Dropped counts runs that never started because Shutdown began:
	// queued for a worker, armed as a retry, or waiting under
	// OverlapQueue (each reported to OnSkip with Outcome Dropped).
	Dropped uint64
	// ClockSteps counts the wall-clock steps detected (more than a second
	// against the monotonic clock), each of which re-armed the wall-clock
	// jobs.
	ClockSteps uint64

	// Lateness is how late attempts started: Event.Lateness (Run.Started
	// minus Run.Scheduled: the wheel's lateness plus the wait for a
	// worker), counted when each attempt starts.
	Lateness timingwheel.Durations
	// RunTime is how long attempts ran: Event.Duration, counted when each
	// attempt finishes (so RunTime.Count is Succeeded + Retried + Failed +
	// Interrupted).
	RunTime timingwheel.Durations
}

type counters struct {
	added, canceled                                     atomic.Uint64
	succeeded, retried, failed, interrupted             atomic.Uint64
	deadLetters, skipped, deferred, dropped, clockSteps atomic.Uint64
	running                                             atomic.Int64
	seq                                                 atomic.Uint64 // attempts started: the last Run.Seq
	// Recorded by each run on the worker's own stripe (see hist.Striped).
	lateness, runTime hist.Striped
}

// init makes the histograms' stripes: one per worker, up to four per
// processor and at most 64.
func (c *counters) init(workers int) {
	n := min(workers, 4*runtime.GOMAXPROCS(0), 64)
	c.lateness.Init(n)
	c.runTime.Init(n)
}

// Stats returns the Scheduler's counters. O(1).
func (s *Scheduler) Stats() Stats {
	c := &s.st
	return Stats{
		Jobs:        s.Len(),
		Queued:      s.pool.Queued(),
		Running:     int(c.running.Load()),
		Added:       c.added.Load(),
		Canceled:    c.canceled.Load(),
		Succeeded:   c.succeeded.Load(),
		Retried:     c.retried.Load(),
		Failed:      c.failed.Load(),
		Interrupted: c.interrupted.Load(),
		DeadLetters: c.deadLetters.Load(),
		Skipped:     c.skipped.Load(),
		Deferred:    c.deferred.Load(),
		Dropped:     c.dropped.Load(),
		ClockSteps:  c.clockSteps.Load(),
		Lateness:    timingwheel.Durations(c.lateness.Load()),
		RunTime:     timingwheel.Durations(c.runTime.Load()),
	}
}
