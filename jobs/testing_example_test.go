package jobs_test

// This file shows how to test your own code that uses a Scheduler: with
// testing/synctest, not a fake clock. Inside synctest.Test's bubble,
// time.Sleep moves a fake clock that jumps ahead as soon as every goroutine
// of the bubble is blocked, and synctest.Wait returns once they all are, so
// a job due in 14 days, and its retry a minute later, run in no real time,
// at times a test can check. Create the Scheduler inside the bubble and
// shut it down before the bubble ends, or synctest.Test fails on the
// goroutines left behind.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
)

// trials is the code under test: a free trial ends 14 days after it
// starts, with an email (retried a minute later, then two, if the mail
// server fails); converting to a paid plan first cancels it.
type trials struct {
	s    *jobs.Scheduler
	mail func(ctx context.Context, user string) error
}

const trialLength = 14 * 24 * time.Hour

func newTrials(mail func(ctx context.Context, user string) error) (*trials, error) {
	s, err := jobs.New(jobs.Options{Defaults: jobs.JobOptions{
		Retry: jobs.Retry{Attempts: 3, Base: time.Minute},
	}})
	if err != nil {
		return nil, err
	}
	return &trials{s: s, mail: mail}, nil
}

func (t *trials) start(user string) error {
	return t.s.Add("trial:"+user, jobs.After(trialLength), func(ctx context.Context, _ jobs.Run) error {
		return t.mail(ctx, user)
	})
}

func (t *trials) convert(user string) bool { return t.s.Cancel("trial:" + user) }

func (t *trials) close() error { return t.s.Shutdown(context.Background()) }

// TestTrialsEnd tests trials inside a synctest bubble: each time.Sleep
// returns at once with the clock moved by exactly its argument, and
// time.Now in the mail function reads the same clock.
func TestTrialsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var sent []string
		failures := 1 // the mail server is down for the first email
		tr, err := newTrials(func(_ context.Context, user string) error {
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, fmt.Sprintf("%s at %v", user, time.Since(start)))
			if failures > 0 {
				failures--
				return errors.New("mail server down")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.close()
		mails := func() string {
			synctest.Wait() // every run due so far has returned
			mu.Lock()
			defer mu.Unlock()
			return fmt.Sprint(sent)
		}

		tr.start("ada")
		tr.start("bob")
		time.Sleep(24 * time.Hour)
		if !tr.convert("bob") {
			t.Fatal("convert(bob) found no trial")
		}

		time.Sleep(trialLength - 24*time.Hour - time.Nanosecond)
		if got := mails(); got != "[]" {
			t.Fatalf("1ns before the trial ends: mails %s, want none", got)
		}
		// Due at 336h, started at most a Resolution (1ms) later; in the
		// bubble nothing else delays it, so the times are exact.
		time.Sleep(time.Millisecond + time.Nanosecond)
		if got, want := mails(), "[ada at 336h0m0s]"; got != want {
			t.Fatalf("when the trial ends: mails %s, want %s", got, want)
		}
		time.Sleep(time.Minute) // the retry's backoff
		if got, want := mails(), "[ada at 336h0m0s ada at 336h1m0s]"; got != want {
			t.Fatalf("a minute later: mails %s, want %s", got, want)
		}
		time.Sleep(30 * 24 * time.Hour)
		if got, want := mails(), "[ada at 336h0m0s ada at 336h1m0s]"; got != want {
			t.Errorf("a month later: mails %s, want %s (bob converted)", got, want)
		}
		if n := tr.s.Len(); n != 0 {
			t.Errorf("jobs scheduled: got %d, want 0", n)
		}
	})
}
