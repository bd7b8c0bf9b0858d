package jobs

import "time"

// Schedule gives a job's occurrences. Next returns the first occurrence
// strictly after after, or the zero Time when there is none. The Scheduler
// calls it once with the current wall-clock time when the job is added, and
// then once per occurrence: when it fires, with that occurrence or the
// current time, whichever is later (so missed occurrences collapse into
// one); with FromCompletion, instead, when it ends (after its retries),
// with the time it ended. It is not asked once Limit occurrences have
// started, nor once the job is cancelled. After the first occurrence, a
// result that is not after Next's argument counts as none (the job ends)
// rather than an occurrence due at once. Next is called on the wheel's
// goroutine with the job locked, or, for FromCompletion, on the worker that
// ended the occurrence, with no lock held: it must be quick, safe for
// concurrent use, and must not call the Scheduler. After the first call, a
// panic or a runtime.Goexit in Next is logged with log/slog and counts as
// no further occurrence (the job ends; a worker that Goexit ends is
// replaced); in the first call, made by Add or Replace, it goes on to their
// caller.
//
// Custom schedules are read on the wall clock, like At and Cron. The
// Schedules returned by After and Every are recognised by the Scheduler
// and measured on the monotonic clock instead.
type Schedule interface {
	// Next returns the first occurrence strictly after after, or the zero
	// Time when there is none.
	Next(after time.Time) time.Time
}

// After runs a job once, d after it is added (or replaced), on the
// monotonic clock: a wall-clock step does not move it. d must be positive;
// Add reports an error otherwise. Any positive d is honoured, up to the
// largest Duration (about 292 years), never cut short. As a plain
// Schedule, Next(t) is t+d.
func After(d time.Duration) Schedule { return after{d} }

// At runs a job once, at t on the wall clock: if the wall clock is stepped
// while the job waits, it still runs when the wall clock reads t, never
// before. A t already passed runs at once (on the next tick). t must not be
// the zero Time. Its monotonic reading, if any, is dropped. As a plain
// Schedule, Next(u) is t if u is before t, and zero otherwise.
func At(t time.Time) Schedule { return at{t.Round(0)} }

// Every runs a job every d on the monotonic clock, the first time d after
// it is added. Occurrence k is due exactly k×d after the Add, however
// late earlier runs started, so the schedule does not drift; occurrences
// missed while the job ran long (under OverlapSkip or OverlapQueue) or
// while no worker was free collapse into one. d must be positive; any
// positive d is honoured, as for After. As a plain Schedule, Next(t) is
// t+d.
func Every(d time.Duration) Schedule { return every{d} }

type after struct{ d time.Duration }

func (a after) Next(t time.Time) time.Time { return t.Add(a.d) }

type at struct{ t time.Time }

func (a at) Next(u time.Time) time.Time {
	if u.Before(a.t) {
		return a.t
	}
	return time.Time{}
}

type every struct{ d time.Duration }

func (e every) Next(t time.Time) time.Time { return t.Add(e.d) }

// plan is how the Scheduler follows a job's Schedule.
type plan uint8

const (
	planWall  plan = iota // Next on the wall clock: At, Cron, custom
	planAfter             // once, d after Add, monotonic
	planEvery             // every d from Add, monotonic
)

// planOf validates s and returns its plan; where prefixes the error.
func planOf(s Schedule, where string) (plan, error) {
	switch s := s.(type) {
	case nil:
		return 0, invalid("%snil Schedule", where)
	case after:
		if s.d <= 0 {
			return 0, invalid("%sAfter(%v): want a delay > 0", where, s.d)
		}
		return planAfter, nil
	case every:
		if s.d <= 0 {
			return 0, invalid("%sEvery(%v): want a period > 0", where, s.d)
		}
		return planEvery, nil
	case at:
		if s.t.IsZero() {
			return 0, invalid("%sAt(zero Time)", where)
		}
	}
	return planWall, nil
}

// zoned is a Schedule read in a location that the Scheduler supplies
// unless the schedule names its own (Cron).
type zoned interface {
	in(loc *time.Location) Schedule
}
