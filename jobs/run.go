package jobs

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// task is one unit of work for the pool: an attempt to run, or a skip to
// report.
type task struct {
	j       *job
	gen     uint32 // the job's generation when the task was made
	skip    bool   // report j's pending skip instead of running
	attempt int32
	due     time.Time // Run.Scheduled
	first   time.Time // the occurrence's first attempt's due time
}

// run is the pool's Run: it runs t on a worker whose execution record is
// x, then, on the same worker, each occurrence that exec hands over.
func (s *Scheduler) run(t task, x *execution) {
	for ok := true; ok; {
		t, ok = s.exec(t, x)
	}
}

// exec runs one task on a worker goroutine, whose execution record is x.
// When the attempt ends its occurrence and an occurrence waits behind it
// (OverlapQueue), exec returns that one to run next on the same worker.
func (s *Scheduler) exec(t task, x *execution) (task, bool) {
	j := t.j
	if t.skip {
		j.mu.Lock()
		j.skipPending = false
		j.mu.Unlock()
		s.skipHook(s.dropEvent(t))
		return task{}, false
	}
	j.mu.Lock()
	if j.gen != t.gen {
		j.mu.Unlock()
		return task{}, false // cancelled or replaced while queued
	}
	if s.closing.Load() {
		// Shutdown began while t was queued: t never starts, and is
		// reported as the runs still queued at pool.close are.
		j.mu.Unlock()
		s.st.dropped.Add(1)
		s.skipHook(s.dropEvent(t))
		return task{}, false
	}
	// A context of its own, not a child of one the Scheduler holds: a
	// shared parent would register every run under one lock. Cancel and
	// Shutdown reach it through the job's busy record.
	ctx, cancel := context.WithCancelCause(context.Background())
	x.cancel, x.next = cancel, j.execs
	j.execs = x
	j.mu.Unlock()
	s.st.running.Add(1)

	r := Run{ID: j.id, Name: j.pol.name, Attempt: int(t.attempt), Scheduled: t.due, Started: time.Now(), Seq: s.st.seq.Add(1)}
	lateness := r.Started.Sub(r.Scheduled)
	s.st.lateness.Observe(lateness)
	goexit := true
	defer func() {
		if goexit {
			// The Func (or OnStart) called runtime.Goexit, which ends this
			// worker: the attempt still fails, and the pool replaces the
			// worker.
			err := &timingwheel.PanicError{Key: r.ID, Value: timingwheel.ErrGoexit, Stack: debug.Stack()}
			s.resume(s.finish(t, x, r, lateness, err, time.Now()))
		}
	}()
	callHook("OnStart", s.hooks.OnStart, Event{Run: r, Lateness: lateness})
	runCtx := ctx
	if j.pol.timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeout(ctx, j.pol.timeout)
		defer stop()
	}
	err := call(j.fn, runCtx, r)
	goexit = false
	return s.finish(t, x, r, lateness, err, time.Now())
}

// skipHook calls OnSkip with e on a worker. A runtime.Goexit in the hook
// ends the worker, which the pool replaces.
func (s *Scheduler) skipHook(e Event) {
	callHook("OnSkip", s.hooks.OnSkip, e)
}

// resume hands next, the occurrence a worker was to run after the one it
// was running when user code called runtime.Goexit, to the worker that
// takes its place (see pool.Resume); more false means there is none.
func (s *Scheduler) resume(next task, more bool) {
	if more {
		s.pool.Resume(next)
	}
}

// dropEvent is OnSkip's report of t: an occurrence the overlap policy
// skipped (a skip task), or a run that never started because Shutdown
// began.
func (s *Scheduler) dropEvent(t task) Event {
	if t.skip {
		return Event{Run: Run{ID: t.j.id, Name: t.j.pol.name, Scheduled: t.due}, Outcome: Skipped}
	}
	return Event{Run: Run{ID: t.j.id, Name: t.j.pol.name, Attempt: int(t.attempt), Scheduled: t.due}, Outcome: Dropped}
}

// finish ends the attempt x of t, started as r, which returned err at end:
// it retries, dead-letters or ends its occurrence, and reports it.
func (s *Scheduler) finish(t task, x *execution, r Run, lateness time.Duration, err error, end time.Time) (task, bool) {
	j := t.j
	x.cancel(nil)
	s.st.running.Add(-1)

	// User code runs here, before the job is locked: Retry.If, then, once
	// the occurrence is over, a FromCompletion job's Schedule.Next. A
	// runtime.Goexit in either ends this worker: the deferred calls
	// settle the attempt with what is known by then (not retryable, as
	// after a panic in If; no further occurrence, as after a panic in
	// Next) and have the pool replace the worker.
	again := err != nil && int(t.attempt) < j.pol.retry.Attempts && !IsPermanent(err)
	var following time.Time // a FromCompletion job's next occurrence
	asked, settled := false, false
	defer func() {
		if !settled {
			if asked {
				slog.Error("jobs: Schedule.Next called runtime.Goexit", "job", j.id)
			}
			s.resume(s.settle(t, x, r, lateness, err, end, false, following))
		}
	}()
	defer func() {
		if !settled && !asked { // a Goexit in Retry.If: Next is still owed
			asked = true
			following = s.completed(j, t.gen, end)
		}
	}()
	if again && j.pol.retry.If != nil {
		again = false
		callHook("Retry.If", func(err error) { again = j.pol.retry.If(err) }, err)
	}
	if !again {
		asked = true
		following = s.completed(j, t.gen, end)
	}
	settled = true
	return s.settle(t, x, r, lateness, err, end, again, following)
}

// completed returns the next occurrence of j, a FromCompletion job whose
// occurrence of generation gen ended at end: zero for another job, or
// when none will be armed (the job is cancelled, past its Limit, has an
// occurrence waiting, or the Scheduler is shutting down). Each of these
// lasts until endLocked runs for this occurrence; an armed j.next does
// not (it may fire and be skipped meanwhile), so it is not one of them,
// and endLocked decides again under the lock. completed calls a custom
// Schedule's Next, so it runs without the job locked.
func (s *Scheduler) completed(j *job, gen uint32, end time.Time) time.Time {
	if !j.pol.fromCompletion || s.closing.Load() {
		return time.Time{}
	}
	j.mu.Lock()
	none := j.done || j.gen != gen || j.queued || (j.pol.limit > 0 && int(j.runs) >= j.pol.limit)
	j.mu.Unlock()
	if none {
		return time.Time{}
	}
	return s.afterEnd(j, end)
}

// settle is the rest of finish, once Retry.If has said whether err may be
// retried (again) and, if it may not, a FromCompletion job's next
// occurrence is known (following).
func (s *Scheduler) settle(t task, x *execution, r Run, lateness time.Duration, err error, end time.Time, again bool, following time.Time) (task, bool) {
	j := t.j
	var next task
	var more bool
	out := Succeeded
	j.mu.Lock()
	for p := &j.execs; *p != nil; p = &(*p).next {
		if *p == x {
			*p = x.next
			break
		}
	}
	x.cancel, x.next = nil, nil // the worker's next attempt reuses x
	current := j.gen == t.gen
	switch {
	case err == nil:
	case !current || s.closing.Load():
		out = Canceled
	case again:
		if s.retryLocked(j, t, end) {
			out = Retrying
		} else {
			out = Canceled // the wheel stopped: shutting down
		}
	default:
		out = Failed
	}
	if out != Retrying && current {
		next, more = s.endLocked(j, following)
	}
	j.tidy()
	j.mu.Unlock()

	s.count(out)
	s.st.runTime.Observe(end.Sub(r.Started))
	goexit := true
	defer func() {
		if goexit { // a hook called runtime.Goexit
			s.resume(next, more)
		}
	}()
	s.report(t, Event{Run: r, Outcome: out, Err: err, Lateness: lateness, Duration: end.Sub(r.Started)})
	goexit = false
	return next, more
}

// report calls OnFinish with e, the end of an attempt of t, and then, if
// its occurrence failed for good, the dead-letter callback. That one is
// deferred: it is owed even when OnFinish calls runtime.Goexit, which
// runs deferred calls on its way out of the worker.
func (s *Scheduler) report(t task, e Event) {
	if e.Outcome == Failed {
		defer func() {
			s.st.deadLetters.Add(1)
			callHook("DeadLetter", t.j.pol.deadLetter, DeadLetter{ID: t.j.id, Name: t.j.pol.name, Scheduled: t.first, Attempts: int(t.attempt), Err: e.Err})
		}()
	}
	callHook("OnFinish", s.hooks.OnFinish, e)
}

// retryLocked arms the next attempt of t's occurrence, which failed at
// end, and reports whether the wheel took it. Locked.
func (s *Scheduler) retryLocked(j *job, t task, end time.Time) bool {
	due := end.Add(j.pol.retry.Delay(int(t.attempt)))
	b := j.activity()
	r := &retry{gen: j.gen, attempt: t.attempt + 1, due: due, first: t.first, next: b.retries}
	r.tw.Value = j
	if s.sched.ScheduleAt(&r.tw, due) != nil {
		return false
	}
	b.retries = r
	return true
}

// endLocked ends one active occurrence of j: it starts the one waiting
// behind it, if any (returned to run next on this worker), arms a
// FromCompletion job's next occurrence, following, and retires the job
// when nothing is left. Locked.
func (s *Scheduler) endLocked(j *job, following time.Time) (task, bool) {
	j.active--
	if j.queued && !s.closing.Load() {
		j.queued = false
		j.active++
		due := j.busy.waiting
		return task{j: j, gen: j.gen, attempt: 1, due: due, first: due}, true
	}
	if j.pol.fromCompletion && j.next.IsZero() && !j.done && (j.pol.limit == 0 || int(j.runs) < j.pol.limit) {
		if j.next = following; !j.next.IsZero() {
			if s.arm(j, time.Now()) != nil {
				j.next = time.Time{}
			}
		}
	}
	if j.active == 0 && j.next.IsZero() {
		s.retireLocked(j)
	}
	return task{}, false
}

func (s *Scheduler) count(o Outcome) {
	switch o {
	case Succeeded:
		s.st.succeeded.Add(1)
	case Retrying:
		s.st.retried.Add(1)
	case Failed:
		s.st.failed.Add(1)
	case Canceled:
		s.st.interrupted.Add(1)
	}
}
