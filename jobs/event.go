package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// Func is the work of a job. ctx is cancelled when the job is cancelled or
// replaced (cause ErrCanceled), when the attempt's Timeout passes, and when
// Shutdown's context ends (cause ErrShutdown). A non-nil error fails the
// attempt, which is retried according to the job's Retry policy; wrap it
// with Permanent to fail the occurrence at once. A panic fails the attempt
// like an error, a *timingwheel.PanicError whose Key is the job's ID, with
// the stack; so does runtime.Goexit (as called by t.FailNow in a test), a
// *timingwheel.PanicError whose Value is timingwheel.ErrGoexit
// (errors.Is(err, timingwheel.ErrGoexit) tells it).
type Func func(ctx context.Context, r Run) error

// Run describes one attempt of a job, as its Func receives it.
type Run struct {
	// ID and Name are the job's.
	ID, Name string
	// Attempt counts the attempts of this occurrence, from 1.
	Attempt int
	// Scheduled is when the attempt was due: the occurrence's time for
	// the first attempt, the end of the backoff for a retry, the call for
	// a Trigger.
	Scheduled time.Time
	// Started is when the attempt started; never before Scheduled.
	Started time.Time
	// Seq numbers the attempts a Scheduler starts, from 1: no two of its
	// attempts share one, so it matches the Run a Func (or middleware)
	// receives with the Events of the same attempt even when every other
	// field is equal (two Triggers at one instant). Zero in a Run that no
	// Scheduler made (package natsjobs leaves it zero).
	Seq uint64
}

// Outcome is how an attempt ended, or why an occurrence did not run.
type Outcome uint8

const (
	outcomeInvalid Outcome = iota
	// Succeeded: the Func returned nil.
	Succeeded
	// Retrying: the attempt failed and another one is scheduled.
	Retrying
	// Failed: the attempt failed and the occurrence failed for good; the
	// dead-letter callback follows.
	Failed
	// Canceled: the attempt failed while its job was being cancelled or
	// replaced, or the Scheduler shut down; it is neither retried nor
	// dead-lettered.
	Canceled
	// Skipped: the occurrence was dropped by the overlap policy (OnSkip).
	Skipped
	// Removed: the job was cancelled or replaced (OnCancel).
	Removed
	// Dropped: the run was due (queued for a worker), armed as a retry,
	// or waiting under OverlapQueue when Shutdown began, and never
	// started (OnSkip).
	Dropped
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case Retrying:
		return "retrying"
	case Failed:
		return "failed"
	case Canceled:
		return "canceled"
	case Skipped:
		return "skipped"
	case Removed:
		return "removed"
	case Dropped:
		return "dropped"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Event is what hooks receive. For OnStart, Outcome is zero and only Run
// and Lateness are set; for OnSkip, Run.Scheduled is the time the
// occurrence (or, when Dropped, the retry) was due, Started is zero, and
// Attempt is set when Dropped; for OnCancel, only ID and Name.
type Event struct {
	Run
	// Outcome is how the attempt ended (OnFinish); for OnSkip, Skipped or
	// Dropped; for OnCancel, Removed; zero for OnStart.
	Outcome Outcome
	// Err is the attempt's error (nil when it succeeded).
	Err error
	// Lateness is Started - Scheduled.
	Lateness time.Duration
	// Duration is how long the attempt ran.
	Duration time.Duration
}

// DeadLetter reports an occurrence that failed for good.
type DeadLetter struct {
	// ID and Name are the job's.
	ID, Name string
	// Scheduled is when the occurrence (its first attempt) was due.
	Scheduled time.Time
	// Attempts is the number of attempts made.
	Attempts int
	// Err is the last attempt's error.
	Err error
}

// Permanent wraps err so that the attempt is not retried: the occurrence
// fails at once and goes to the dead-letter callback. errors.Is and
// errors.As see through it. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }
func (p *permanentError) Unwrap() error { return p.err }

// IsPermanent reports whether err is, or wraps, an error made by
// Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// call runs fn, turning a panic into a *timingwheel.PanicError.
func call(fn Func, ctx context.Context, r Run) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &timingwheel.PanicError{Key: r.ID, Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, r)
}

// callHook runs a hook or a dead-letter callback, logging a panic.
func callHook[E any](name string, f func(E), e E) {
	if f == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			slog.Error("jobs: "+name+" panicked", "panic", v, "stack", string(debug.Stack()))
		}
	}()
	f(e)
}
