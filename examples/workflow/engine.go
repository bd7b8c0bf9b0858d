package main

import (
	"context"
	"errors"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
)

// Step is one step of a workflow: Do runs it for the workflow's subject,
// with Opts' retry policy and per-attempt timeout.
type Step struct {
	Name string
	Do   func(ctx context.Context, subject string) error
	Opts jobs.JobOptions
}

// Engine runs workflows, sequences of steps, one job per step on a
// jobs.Scheduler: a step's success adds the next step's job, and a step
// that fails for good (attempts used up, a permanent error, its timeout
// every time) is escalated through the dead-letter callback and ends the
// workflow.
type Engine struct {
	Note func(format string, args ...any)
	// Ended receives each workflow's ID when it ends, either way.
	Ended chan string

	s *jobs.Scheduler
}

// Start adds the first step of workflow flow for subject.
func (e *Engine) Start(flow, subject string, steps []Step) error {
	return e.add(flow, subject, steps, 0)
}

func (e *Engine) add(flow, subject string, steps []Step, i int) error {
	st := steps[i]
	opts := st.Opts
	opts.Name = flow + "/" + st.Name
	opts.DeadLetter = func(d jobs.DeadLetter) {
		why := d.Err.Error()
		if errors.Is(d.Err, context.DeadlineExceeded) {
			why = "timed out"
		}
		e.Note("%-26s escalated to support after %d attempt(s): %s", d.Name, d.Attempts, why)
		e.Ended <- flow
	}
	// At(now) runs on the wheel's next tick.
	return e.s.Add(opts.Name, jobs.At(time.Now()), func(ctx context.Context, r jobs.Run) error {
		if err := st.Do(ctx, subject); err != nil {
			e.Note("%-26s attempt %d failed: %v", r.Name, r.Attempt, err)
			return err
		}
		e.Note("%-26s done (attempt %d)", r.Name, r.Attempt)
		if i+1 == len(steps) {
			e.Ended <- flow
			return nil
		}
		return e.add(flow, subject, steps, i+1)
	}, opts)
}
