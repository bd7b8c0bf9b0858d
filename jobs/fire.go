package jobs

import (
	"log/slog"
	"math"
	"runtime/debug"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// nextTick re-arms a timer for the wheel's next tick.
const nextTick = time.Nanosecond

// fire is the wheel's callback, run on its owner goroutine for every timer
// that falls due. It runs no user code (a custom Schedule's Next aside) and
// never blocks: it checks the job's own state, so a stale firing (a timer
// of a cancelled job, or one whose occurrence moved) does nothing, and
// hands due runs to the pool. Its result re-arms the timer (see
// timingwheel.NewScheduler).
func (s *Scheduler) fire(t *timingwheel.Timer[*job], now time.Time) time.Duration {
	switch j := t.Value; {
	case j == nil:
		return s.clock.tick(s)
	case t != &j.tw:
		return s.fireRetry(j, t)
	default:
		return s.fireJob(j, now)
	}
}

func (s *Scheduler) fireJob(j *job, now time.Time) time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.done || j.next.IsZero() {
		return 0 // cancelled, or nothing armed: a stale firing
	}
	// One clock reading serves the whole firing: the wheel's time for
	// After and Every, which run on the monotonic clock, and the wall
	// clock for the others, read once per tick (see passWall). A delay
	// returned re-arms the timer from the wheel's time, which the wall
	// reading was taken lag after: the delay from the reading plus lag.
	var lag time.Duration
	if j.plan == planWall {
		now, lag = s.passWall(now)
	}
	occ := j.next
	if rem := occ.Sub(now); rem > 0 {
		// Not due yet: the wall clock was stepped back, or this is an
		// older arming of the timer.
		return rem + lag
	}
	if s.offer(j, occ, true) == offerFull {
		s.st.deferred.Add(1)
		return nextTick // late, never lost: offered again next tick
	}
	// None is armed until following returns: if a custom Schedule's Next
	// calls runtime.Goexit there, the job ends with the occurrence just
	// offered rather than staying with a past j.next that never fires.
	j.next = time.Time{}
	if j.pol.fromCompletion || (j.pol.limit > 0 && int(j.runs) >= j.pol.limit) {
		return 0 // armed when the occurrence ends, or never: Next is not asked
	}
	next := s.following(j, occ, now)
	j.next = next
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now)+lag, nextTick)
}

// passWall returns a wall-clock reading for a firing at the wheel's time
// now, and how long after now (on the monotonic clock) it was taken. It
// is read at the tick's first wall-clock firing and reused for the others
// of the tick, since a tick may fire thousands of cron jobs at once (a
// clock reading costs 25-100 ns). Never early still holds: the reading
// was taken during this tick, before this firing, so the wall clock reads
// at least as much now (a job it finds not yet due is re-armed for the
// rest, and so comes a tick late at most). The wheel's time is a clock
// reading in nanoseconds, so two passes of the owner share it only when no
// time passed between them (in a synctest bubble), and then neither did
// the wall clock. Owner only.
func (s *Scheduler) passWall(now time.Time) (wall time.Time, lag time.Duration) {
	p := &s.pass
	if !p.valid || !now.Equal(p.tick) {
		read := time.Now()
		p.tick, p.wall, p.lag, p.valid = now, s.wallAt(read), max(read.Sub(now), 0), true
	}
	return p.wall, p.lag
}

// following returns the occurrence after occ, which is due at now (the
// wheel's time for After and Every, the wall clock otherwise): the first
// one after both occ and now, so that missed occurrences collapse into
// the one firing. Zero when the schedule has no more. Locked.
func (s *Scheduler) following(j *job, occ, now time.Time) time.Time {
	switch j.plan {
	case planAfter:
		return time.Time{}
	case planEvery:
		// occ + k×d with k the smallest that lands after now: whole
		// periods from the anchor, so the schedule never drifts. Added
		// in two steps so that k×d cannot overflow for a huge d.
		d := period(j.when)
		return occ.Add(d * (now.Sub(occ) / d)).Add(d)
	}
	from := now
	if from.Before(occ) {
		from = occ
	}
	return strictNext(j, from)
}

// strictNext is j.when.Next(t), or zero if that is not after t: a
// Schedule that does not move forward would otherwise be due on every
// tick. A panic in Next is recovered and logged, and counts as zero (no
// further occurrence), on the wheel's goroutine and on a worker alike.
func strictNext(j *job, t time.Time) (next time.Time) {
	defer func() {
		if v := recover(); v != nil {
			slog.Error("jobs: Schedule.Next panicked", "job", j.id, "panic", v, "stack", string(debug.Stack()))
			next = time.Time{}
		}
	}()
	if next = j.when.Next(t); next.After(t) {
		return next
	}
	return time.Time{}
}

// afterEnd returns the next occurrence of a FromCompletion job whose
// occurrence ended at end (a time.Now reading). Locked.
func (s *Scheduler) afterEnd(j *job, end time.Time) time.Time {
	switch j.plan {
	case planAfter:
		return time.Time{}
	case planEvery:
		return end.Add(period(j.when))
	}
	return strictNext(j, s.wallAt(end))
}

type offerResult uint8

const (
	offerQueued  offerResult = iota // handed to the pool
	offerWaiting                    // waits behind the active one (OverlapQueue)
	offerSkipped                    // dropped by the overlap policy
	offerFull                       // the pool's queue is full (or closed)
)

// offer starts an occurrence of j due at due, subject to its overlap
// policy. scheduled is false for Trigger, whose occurrences are not
// counted toward Limit nor reported to OnSkip. Locked.
func (s *Scheduler) offer(j *job, due time.Time, scheduled bool) offerResult {
	if j.active > 0 {
		overlap := j.pol.overlap
		if overlap == OverlapAllow && j.pol.fromCompletion {
			overlap = OverlapSkip // runs of a FromCompletion job never overlap
		}
		switch overlap {
		case OverlapQueue:
			if !j.queued {
				j.queued = true
				j.activity().waiting = due
				if scheduled {
					j.countRun()
				}
				return offerWaiting
			}
			fallthrough
		case OverlapSkip:
			if scheduled {
				s.skip(j, due)
			}
			return offerSkipped
		}
	}
	if !s.pool.Push(task{j: j, gen: j.gen, attempt: 1, due: due, first: due}) {
		return offerFull
	}
	j.active++
	if scheduled {
		j.countRun()
	}
	return offerQueued
}

// skip counts a skipped occurrence and, unless one is in flight, sends an
// OnSkip report of it to the pool. Locked.
func (s *Scheduler) skip(j *job, due time.Time) {
	s.st.skipped.Add(1)
	if s.hooks.OnSkip == nil || j.skipPending {
		return
	}
	if s.pool.Push(task{j: j, gen: j.gen, skip: true, due: due}) {
		j.skipPending = true
	}
}

// fireRetry is the firing of the retry of j whose timer is t. Its retry
// is found in j's list of armed ones, which is short (one per occurrence
// failing at once); one no longer there was cancelled.
func (s *Scheduler) fireRetry(j *job, t *timingwheel.Timer[*job]) time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.done || j.busy == nil {
		return 0
	}
	p := &j.busy.retries
	for *p != nil && &(*p).tw != t {
		p = &(*p).next
	}
	r := *p
	if r == nil || r.gen != j.gen {
		return 0
	}
	if !s.pool.Push(task{j: j, gen: j.gen, attempt: r.attempt, due: r.due, first: r.first}) {
		s.st.deferred.Add(1)
		return nextTick
	}
	*p = r.next
	j.tidy()
	return 0
}

// countRun counts a scheduled occurrence started or queued, saturating
// (an Every(time.Millisecond) job would wrap an int32 in 25 days). Locked.
func (j *job) countRun() {
	if j.runs < math.MaxInt32 {
		j.runs++
	}
}
