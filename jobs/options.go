package jobs

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"
)

var (
	// ErrClosed is returned by Add, Replace and Trigger once Shutdown has
	// begun, and by a second Shutdown.
	ErrClosed = errors.New("jobs: closed")
	// ErrDuplicate is returned by Add for an ID that is already scheduled.
	ErrDuplicate = errors.New("jobs: duplicate job")
	// ErrNotFound is returned by Trigger for an ID that is not scheduled.
	ErrNotFound = errors.New("jobs: no such job")
	// ErrBusy is returned by Trigger when the job's overlap policy turns
	// the extra run away: an occurrence is active under OverlapSkip (or
	// under any policy but OverlapQueue with FromCompletion), or one is
	// active and one already waits under OverlapQueue.
	ErrBusy = errors.New("jobs: job busy")
	// ErrFull is returned by Trigger when the run queue is full.
	ErrFull = errors.New("jobs: run queue full")
	// ErrInvalid is wrapped by the errors returned for invalid arguments
	// and options. Test with errors.Is.
	ErrInvalid = errors.New("jobs: invalid argument")
	// ErrCanceled is the cause (see context.Cause) of a running run's
	// context when its job is cancelled or replaced.
	ErrCanceled = errors.New("jobs: job cancelled")
	// ErrShutdown is the cause of a running run's context when the
	// context given to Shutdown ends before the run does.
	ErrShutdown = errors.New("jobs: shut down")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// maxDelay bounds every computed delay (backoff, schedules) to about 100
// years, so that arithmetic on it never overflows.
const maxDelay = time.Duration(math.MaxInt64 / 3)

// Overlap says what happens when an occurrence of a job comes due while an
// earlier one is still active (queued, running, or waiting for a retry).
type Overlap uint8

const (
	// overlapDefault, the zero value, takes the Scheduler's default.
	overlapDefault Overlap = iota
	// OverlapSkip drops the new occurrence and reports it to OnSkip; the
	// schedule goes on. The default.
	OverlapSkip
	// OverlapQueue keeps one occurrence waiting and starts it as soon as
	// the active one finishes; further occurrences meanwhile are skipped.
	OverlapQueue
	// OverlapAllow starts every occurrence, so runs of one job may
	// overlap.
	OverlapAllow
)

// String returns the policy's name.
func (o Overlap) String() string {
	switch o {
	case OverlapSkip:
		return "skip"
	case OverlapQueue:
		return "queue"
	case OverlapAllow:
		return "allow"
	}
	return fmt.Sprintf("Overlap(%d)", uint8(o))
}

// Retry is a retry policy: how often a failed run is tried again, and how
// long to wait before each new attempt. In JobOptions, each zero field
// means the Scheduler's default for that field (Options.Defaults.Retry),
// so the zero Retry is the default policy, which, left zero, never
// retries: Retry{Base: time.Minute} keeps the default Attempts and sets
// the wait. A field cannot be set back to zero for one job (no jitter,
// say, when the default has some).
//
// The wait before attempt n+1 (n >= 1) is Base × Factor^(n-1), capped at
// Max, then multiplied by a factor drawn uniformly from
// [1-Jitter, 1+Jitter]. It is measured from the end of the failed attempt.
type Retry struct {
	// Attempts is the total number of attempts of one occurrence,
	// counting the first: 1 means no retry. 0 means the default (1 in
	// Options.Defaults); a negative value is an error; more than 2^31-1
	// counts as 2^31-1.
	Attempts int
	// Base is the wait before the second attempt. 0 means the default
	// (1s in Options.Defaults).
	Base time.Duration
	// Max caps the wait before the jitter. 0 means the default (no cap in
	// Options.Defaults).
	Max time.Duration
	// Factor multiplies the wait after each failed attempt. 0 means the
	// default (2 in Options.Defaults); otherwise it must be at least 1.
	Factor float64
	// Jitter spreads each wait by up to ±Jitter of it, in [0, 1). 0 means
	// the default (none in Options.Defaults).
	Jitter float64
	// If, when not nil, decides whether an error may be retried; it runs
	// on the worker goroutine of the failed run. nil means the default
	// (every error in Options.Defaults). Errors wrapped with Permanent are
	// never retried, whatever If says. A panic in If is logged and counts
	// as false; a runtime.Goexit in it counts as false too, and ends its
	// worker goroutine, which is replaced.
	If func(error) bool
}

// Validate returns nil if r is a valid policy, and otherwise an error
// wrapping ErrInvalid that names the first bad field. Zero fields are
// valid: they mean defaults. New, Add and Replace call it; code that
// applies a Retry itself (package natsjobs does) calls it too.
func (r Retry) Validate() error { return r.validate("") }

// Delay returns the wait after the failed attempt n (from 1; less counts
// as 1) before attempt n+1: Base × Factor^(n-1), capped at Max and at
// about 100 years, then multiplied by a factor drawn uniformly from
// [1-Jitter, 1+Jitter] (with math/rand/v2's global source); at least 1ns.
// A zero Base, Factor or Max counts as in Options.Defaults: 1s, 2, no cap.
// r must be valid (see Validate). Safe for concurrent use; O(1).
func (r Retry) Delay(n int) time.Duration {
	r = r.over(builtinRetry)
	d := float64(r.Base) * math.Pow(r.Factor, float64(max(n, 1)-1))
	d = min(d, float64(r.Max), float64(maxDelay))
	if r.Jitter > 0 {
		d *= 1 + r.Jitter*(2*rand.Float64()-1)
	}
	return max(time.Duration(d), 1)
}

func (r *Retry) validate(where string) error {
	switch {
	case r.Attempts < 0:
		return invalid("%sRetry.Attempts %d, want >= 0", where, r.Attempts)
	case r.Base < 0:
		return invalid("%sRetry.Base %v, want >= 0", where, r.Base)
	case r.Max < 0:
		return invalid("%sRetry.Max %v, want >= 0", where, r.Max)
	case r.Factor != 0 && !(r.Factor >= 1 && r.Factor <= math.MaxFloat64):
		return invalid("%sRetry.Factor %v, want 0 or >= 1", where, r.Factor)
	case !(r.Jitter >= 0 && r.Jitter < 1):
		return invalid("%sRetry.Jitter %v, want in [0, 1)", where, r.Jitter)
	}
	return nil
}

// JobOptions are the optional settings of a job. In Options.Defaults they
// apply to every job; in Add and Replace, each non-zero field overrides
// the default.
type JobOptions struct {
	// Name labels the job in Run, Event, DeadLetter and JobInfo. Optional;
	// not inherited from Defaults.
	Name string
	// Retry is the retry policy; each zero field of it means the
	// default's (see Retry).
	Retry Retry
	// Timeout bounds each attempt: its context is cancelled Timeout after
	// it starts. The run still counts as running until its function
	// returns. 0 means the default, whose zero value is no timeout;
	// negative is an error.
	Timeout time.Duration
	// Overlap is the overlap policy; 0 means the default, OverlapSkip
	// unless Options.Defaults says otherwise.
	Overlap Overlap
	// Limit is the number of scheduled occurrences after which the job
	// ends (Trigger's extra runs do not count). 0 means the default, whose
	// zero value is no limit; negative is an error.
	Limit int
	// FromCompletion measures each next occurrence from the end of the
	// previous one (after its retries) instead of from the schedule: for
	// Every(d), d between the end of a run and the start of the next; for
	// a cron or custom schedule, the first occurrence after the end. Runs
	// of such a job never overlap: under OverlapAllow, a Trigger while one
	// is active is turned away as under OverlapSkip. True in Defaults
	// applies to every job.
	FromCompletion bool
	// DeadLetter, when not nil, is called once for every occurrence that
	// failed for good: its attempts are used up, or the error was
	// Permanent or refused by Retry.If. It runs on the worker goroutine of
	// the last attempt, after OnFinish, even one that panicked or called
	// runtime.Goexit. nil means the default.
	DeadLetter func(DeadLetter)
}

func (o *JobOptions) validate(where string) error {
	switch {
	case o.Timeout < 0:
		return invalid("%sTimeout %v, want >= 0", where, o.Timeout)
	case o.Overlap > OverlapAllow:
		return invalid("%sOverlap %v, want OverlapSkip, OverlapQueue or OverlapAllow", where, o.Overlap)
	case o.Limit < 0:
		return invalid("%sLimit %d, want >= 0", where, o.Limit)
	}
	return o.Retry.validate(where)
}

// policy is a job's resolved options. Jobs that take only defaults share
// the Scheduler's.
type policy struct {
	name           string
	retry          Retry
	timeout        time.Duration
	overlap        Overlap
	limit          int
	fromCompletion bool
	deadLetter     func(DeadLetter)
}

func resolve(o *JobOptions) policy {
	p := policy{
		name:           o.Name,
		retry:          o.Retry.over(builtinRetry),
		timeout:        o.Timeout,
		overlap:        o.Overlap,
		limit:          o.Limit,
		fromCompletion: o.FromCompletion,
		deadLetter:     o.DeadLetter,
	}
	if p.overlap == overlapDefault {
		p.overlap = OverlapSkip
	}
	return p
}

// builtinRetry fills in the zero fields of Options.Defaults.Retry.
var builtinRetry = Retry{Attempts: 1, Base: time.Second, Max: maxDelay, Factor: 2}

// over returns r with each zero field taken from def. Attempts are
// counted in an int32: past 2^31-1 the count would wrap and the
// occurrence be retried for ever, so they are capped there.
func (r Retry) over(def Retry) Retry {
	if r.Attempts == 0 {
		r.Attempts = def.Attempts
	}
	r.Attempts = min(r.Attempts, math.MaxInt32)
	if r.Base == 0 {
		r.Base = def.Base
	}
	if r.Max == 0 {
		r.Max = def.Max
	}
	if r.Factor == 0 {
		r.Factor = def.Factor
	}
	if r.Jitter == 0 {
		r.Jitter = def.Jitter
	}
	if r.If == nil {
		r.If = def.If
	}
	return r
}

// override returns the policy of a job with options o over the defaults
// def (both validated).
func (def *policy) override(o *JobOptions) policy {
	p := *def
	p.name = o.Name
	p.retry = o.Retry.over(def.retry)
	if o.Timeout != 0 {
		p.timeout = o.Timeout
	}
	if o.Overlap != overlapDefault {
		p.overlap = o.Overlap
	}
	if o.Limit != 0 {
		p.limit = o.Limit
	}
	p.fromCompletion = p.fromCompletion || o.FromCompletion
	if o.DeadLetter != nil {
		p.deadLetter = o.DeadLetter
	}
	return p
}

// Hooks observe runs; each field may be nil. Hooks run on worker
// goroutines (OnCancel on the goroutine that called Cancel or Replace,
// OnSkip's reports of dropped runs on the one that called Shutdown),
// never on the wheel's goroutine and never with a lock held, so they may
// call the Scheduler, Shutdown excepted. They must be safe for concurrent
// use. A panic in a hook is recovered and logged with log/slog; a
// runtime.Goexit in one ends its worker goroutine, which is replaced.
type Hooks struct {
	// OnStart is called before each attempt runs.
	OnStart func(Event)
	// OnFinish is called after each attempt, with its outcome, lateness
	// and duration.
	OnFinish func(Event)
	// OnSkip is called for runs that do not start: occurrences dropped
	// by the overlap policy (Outcome Skipped; while one is being
	// delivered, further skips of the same job are counted in Stats but
	// not reported again), and runs that Shutdown drops (Outcome Dropped:
	// queued for a worker, armed as a retry, or waiting under
	// OverlapQueue), those on the goroutine that called Shutdown, before
	// it waits for the running attempts.
	OnSkip func(Event)
	// OnCancel is called once when a job is cancelled or replaced.
	OnCancel func(Event)
}

// Options configures New. The zero value of every field means its
// default.
type Options struct {
	// Workers is the number of runs that may execute at once, on worker
	// goroutines started on demand and kept until Shutdown. 0 means
	// 8 × GOMAXPROCS; negative is an error.
	Workers int
	// Queue bounds the runs that are due but wait for a worker. When it is
	// full, a due run is not lost but late: the wheel offers it again on
	// each of its ticks until there is room (Trigger fails with ErrFull
	// instead). 0 means 65536; negative is an error.
	Queue int
	// Resolution is the interval of the timing wheel that drives every
	// job: a run starts at most one Resolution after it is due, plus
	// scheduling latency and the wait for a worker. 0 means 1ms; otherwise
	// it must be at least 1µs.
	Resolution time.Duration
	// Location is where cron specs without a CRON_TZ= or TZ= prefix are
	// read. nil means time.Local.
	Location *time.Location
	// Defaults are the options of every job, each overridable per job.
	// Defaults.Name is ignored.
	Defaults JobOptions
	// Hooks observe every job's runs.
	Hooks Hooks
	// Middleware wraps every job's Func, the first element outermost;
	// each wrapper is applied once, when the job is added.
	Middleware []func(Func) Func
}

const (
	defaultQueue      = 1 << 16
	defaultResolution = time.Millisecond
	wheelSlots        = 4096
)

// validate checks o and fills in defaults.
func (o *Options) validate() error {
	switch {
	case o.Workers < 0:
		return invalid("Options.Workers %d, want >= 0", o.Workers)
	case o.Queue < 0:
		return invalid("Options.Queue %d, want >= 0", o.Queue)
	case o.Resolution < 0 || (o.Resolution > 0 && o.Resolution < time.Microsecond):
		return invalid("Options.Resolution %v, want 0 or >= 1µs", o.Resolution)
	}
	for i, m := range o.Middleware {
		if m == nil {
			return invalid("Options.Middleware[%d] is nil", i)
		}
	}
	if err := o.Defaults.validate("Options.Defaults."); err != nil {
		return err
	}
	if o.Workers == 0 {
		o.Workers = 8 * runtime.GOMAXPROCS(0)
	}
	if o.Queue == 0 {
		o.Queue = defaultQueue
	}
	if o.Resolution == 0 {
		o.Resolution = defaultResolution
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	return nil
}
