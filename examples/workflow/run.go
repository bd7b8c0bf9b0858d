package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
)

// config is what differs between the test's exact story and go run.
type config struct {
	// VerifyTimeout bounds each attempt of the identity check.
	VerifyTimeout time.Duration
	// Nightly is the cron spec of the nightly clean-up.
	Nightly string
}

// run narrates two sign-up workflows and the nightly clean-up:
//   - ada: her card is declined twice (retried with backoff, then
//     charged), and the welcome mail bounces for good (a permanent error:
//     escalated at once);
//   - bob: the identity service hangs; each attempt times out, and after
//     two the step is escalated;
//   - the clean-up runs on its cron spec once both workflows have ended.
func run(out io.Writer, cfg config) error {
	n := &narrator{out: out, start: time.Now()}
	s, err := jobs.New(jobs.Options{})
	if err != nil {
		return err
	}
	e := &Engine{Note: n.say, Ended: make(chan string, 2), s: s}

	declines := 2
	var mu sync.Mutex
	ada := []Step{
		{Name: "create-account", Do: func(context.Context, string) error { return nil }},
		{Name: "charge-card", Do: func(context.Context, string) error {
			mu.Lock()
			defer mu.Unlock()
			if declines > 0 {
				declines--
				return errors.New("card declined, try later")
			}
			return nil
		}, Opts: jobs.JobOptions{Retry: jobs.Retry{Attempts: 5, Base: time.Second, Factor: 2}}},
		{Name: "send-welcome", Do: func(context.Context, string) error {
			return jobs.Permanent(errors.New("550 mailbox does not exist"))
		}, Opts: jobs.JobOptions{Retry: jobs.Retry{Attempts: 5}}},
	}
	bob := []Step{
		{Name: "create-account", Do: func(context.Context, string) error { return nil }},
		{Name: "verify-id", Do: func(ctx context.Context, _ string) error {
			<-ctx.Done() // the identity service never answers
			return ctx.Err()
		}, Opts: jobs.JobOptions{Timeout: cfg.VerifyTimeout, Retry: jobs.Retry{Attempts: 2, Base: time.Second}}},
	}

	n.say("%-26s started", "signup:ada")
	if err := e.Start("signup:ada", "ada", ada); err != nil {
		return err
	}
	time.Sleep(10 * time.Second)
	n.say("%-26s started", "signup:bob")
	if err := e.Start("signup:bob", "bob", bob); err != nil {
		return err
	}
	for range 2 {
		<-e.Ended
	}

	nightly, err := jobs.Cron(cfg.Nightly)
	if err != nil {
		return err
	}
	cleaned := make(chan struct{})
	if err := s.Add("cleanup", nightly, func(context.Context, jobs.Run) error {
		n.say("%-26s removed abandoned sign-ups (cron %q)", "cleanup", cfg.Nightly)
		close(cleaned)
		return nil
	}, jobs.JobOptions{Limit: 1}); err != nil {
		return err
	}
	<-cleaned
	if err := s.Shutdown(context.Background()); err != nil {
		return err
	}
	st := s.Stats()
	n.say("%-26s %d succeeded, %d retried, %d dead letters", "stats", st.Succeeded, st.Retried, st.DeadLetters)
	return nil
}

// narrator writes lines stamped with the time since the demo began, to the
// second. Safe for concurrent use.
type narrator struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
}

func (n *narrator) say(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.out, "%8v  %s\n", time.Since(n.start).Truncate(time.Second), fmt.Sprintf(format, args...))
}
