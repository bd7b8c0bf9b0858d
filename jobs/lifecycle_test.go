package jobs

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestBadInput: invalid arguments and options return errors wrapping
// ErrInvalid that say what is wrong.
func TestBadInput(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, s)
	custom := scheduleFunc(func(time.Time) time.Time { return time.Time{} })
	for _, tc := range []struct {
		name string
		id   string
		when Schedule
		fn   Func
		opts []JobOptions
		want string
	}{
		{"empty id", "", Every(time.Second), noop, nil, "empty job ID"},
		{"nil func", "x", Every(time.Second), nil, nil, "nil Func"},
		{"nil schedule", "x", nil, noop, nil, "nil Schedule"},
		{"zero After", "x", After(0), noop, nil, "After(0s): want a delay > 0"},
		{"negative After", "x", After(-time.Second), noop, nil, "After(-1s)"},
		{"zero Every", "x", Every(0), noop, nil, "Every(0s): want a period > 0"},
		{"negative Every", "x", Every(-1), noop, nil, "Every(-1ns)"},
		{"zero At", "x", At(time.Time{}), noop, nil, "At(zero Time)"},
		{"schedule without occurrence", "x", custom, noop, nil, "has no occurrence"},
		{"two options", "x", Every(time.Second), noop, []JobOptions{{}, {}}, "2 JobOptions"},
		{"negative timeout", "x", Every(time.Second), noop, []JobOptions{{Timeout: -1}}, "Timeout -1ns"},
		{"negative limit", "x", Every(time.Second), noop, []JobOptions{{Limit: -1}}, "Limit -1"},
		{"bad overlap", "x", Every(time.Second), noop, []JobOptions{{Overlap: 9}}, "Overlap Overlap(9)"},
		{"negative attempts", "x", Every(time.Second), noop, []JobOptions{{Retry: Retry{Attempts: -1}}}, "Retry.Attempts -1"},
		{"negative base", "x", Every(time.Second), noop, []JobOptions{{Retry: Retry{Base: -1}}}, "Retry.Base"},
		{"negative max", "x", Every(time.Second), noop, []JobOptions{{Retry: Retry{Max: -1}}}, "Retry.Max"},
		{"factor below 1", "x", Every(time.Second), noop, []JobOptions{{Retry: Retry{Factor: 0.5}}}, "Retry.Factor 0.5"},
		{"jitter 1", "x", Every(time.Second), noop, []JobOptions{{Retry: Retry{Jitter: 1}}}, "Retry.Jitter 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Add(tc.id, tc.when, tc.fn, tc.opts...)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "jobs: ") {
				t.Fatalf("Add error = %v, want ErrInvalid saying %q", err, tc.want)
			}
			if err := s.Replace(tc.id, tc.when, tc.fn, tc.opts...); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Replace error = %v, want ErrInvalid", err)
			}
		})
	}
	if s.Len() != 0 {
		t.Fatalf("Len = %d after rejected calls, want 0", s.Len())
	}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"negative workers", Options{Workers: -1}, "Options.Workers -1"},
		{"negative queue", Options{Queue: -1}, "Options.Queue -1"},
		{"negative resolution", Options{Resolution: -1}, "Options.Resolution"},
		{"tiny resolution", Options{Resolution: time.Nanosecond}, "Options.Resolution 1ns"},
		{"nil middleware", Options{Middleware: []func(Func) Func{nil}}, "Middleware[0] is nil"},
		{"bad default", Options{Defaults: JobOptions{Timeout: -1}}, "Options.Defaults.Timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error = %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

// TestMiddlewareReturnsNil: a Middleware that returns a nil Func makes
// Add fail with ErrInvalid, instead of a job whose every run panics.
func TestMiddlewareReturnsNil(t *testing.T) {
	s, err := New(Options{Middleware: []func(Func) Func{
		func(f Func) Func { return f },
		func(Func) Func { return nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, s)
	err = s.Add("x", Every(time.Second), noop)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Middleware[1] returned a nil Func") {
		t.Fatalf("Add error = %v, want ErrInvalid naming Middleware[1]", err)
	}
	if s.Len() != 0 {
		t.Fatalf("Len = %d, want 0", s.Len())
	}
}

// TestAddDuplicate: Add refuses an ID in use and leaves the job alone.
func TestAddDuplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		mustAdd(t, s, "j", After(time.Second), noop)
		if err := s.Add("j", After(time.Minute), noop); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("Add = %v, want ErrDuplicate", err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(r.finished()); n != 1 {
			t.Fatalf("%d runs, want 1", n)
		}
		// The ID is free again once the job ended.
		mustAdd(t, s, "j", After(time.Second), noop)
	})
}

// TestShutdownWaitsForRunning: Shutdown waits for running attempts, drops
// queued runs and armed timers, and refuses work afterwards.
func TestShutdownWaitsForRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{Workers: 1})
		start := time.Now()
		mustAdd(t, s, "long", After(time.Second), func(ctx context.Context, _ Run) error {
			time.Sleep(10 * time.Second)
			return ctx.Err()
		})
		mustAdd(t, s, "queued", After(time.Second+time.Millisecond), noop) // behind long
		mustAdd(t, s, "later", After(time.Hour), noop)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown = %v, want nil", err)
		}
		if waited := time.Since(start); waited != 11*time.Second {
			t.Fatalf("Shutdown returned at %v, want 11s (when the run ended)", waited)
		}
		es := r.finished()
		if len(es) != 1 || es[0].ID != "long" || es[0].Err != nil {
			t.Fatalf("finish events %+v, want long's, uncancelled", es)
		}
		if st := s.Stats(); st.Dropped != 1 || st.Jobs != 0 {
			t.Fatalf("Stats %+v, want 1 dropped, 0 jobs", st)
		}
		if err := s.Add("x", After(time.Second), noop); !errors.Is(err, ErrClosed) {
			t.Fatalf("Add after Shutdown = %v, want ErrClosed", err)
		}
		if err := s.Trigger("later"); !errors.Is(err, ErrClosed) {
			t.Fatalf("Trigger after Shutdown = %v, want ErrClosed", err)
		}
		if err := s.Shutdown(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("second Shutdown = %v, want ErrClosed", err)
		}
	})
}

// TestShutdownDeadlineCancelsRuns: when Shutdown's context ends first, the
// running attempts' contexts are cancelled with ErrShutdown; they are
// neither retried nor dead-lettered.
func TestShutdownDeadlineCancelsRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{Defaults: JobOptions{Retry: Retry{Attempts: 3}}})
		b := newBlocker()
		mustAdd(t, s, "j", After(time.Second), b.fn)
		time.Sleep(2 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
		}
		synctest.Wait()
		if len(b.causes) != 1 || b.causes[0] != ErrShutdown {
			t.Fatalf("causes %v, want [ErrShutdown]", b.causes)
		}
		if es := r.finished(); len(es) != 1 || es[0].Outcome != Canceled || len(r.letters()) != 0 {
			t.Fatalf("events %+v, %d dead letters; want one Canceled, none", es, len(r.letters()))
		}
	})
}

// TestGoroutinesBackToBaseline: once Shutdown returns, every goroutine the
// Scheduler started (wheel owner, workers) has exited. On the real clock,
// outside a bubble, with a busy run of workers.
func TestGoroutinesBackToBaseline(t *testing.T) {
	before := runtime.NumGoroutine()
	s, err := New(Options{Workers: 16})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 100)
	for i := range 100 {
		mustAdd(t, s, string(rune('a'+i%26))+string(rune('a'+i/26)), Every(time.Millisecond), func(context.Context, Run) error {
			select {
			case started <- struct{}{}:
			default:
			}
			return nil
		})
	}
	for range 100 {
		<-started
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A goroutine that has returned is counted until it runs its exit,
	// which on a loaded machine (CI runs packages in parallel) can take
	// far more than a thousand yields: allow ten seconds of them.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Shutdown, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}

// TestShutdownInsideBubble: a Scheduler with jobs pending shuts down
// without leaving a goroutine in the bubble (synctest.Test fails if it
// does).
func TestShutdownInsideBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newScheduler(t, Options{})
		c, _ := Cron("* * * * * *")
		mustAdd(t, s, "cron", c, noop)
		mustAdd(t, s, "every", Every(time.Second), noop)
		mustAdd(t, s, "retry", Every(time.Second), fail, JobOptions{Retry: Retry{Attempts: 3, Base: time.Hour}})
		time.Sleep(10 * time.Second)
		shutdown(t, s)
	})
}

// TestReplaceOnCancelMayCallScheduler: Replace reports the old job to
// OnCancel with no job locked, so the hook may call the Scheduler about the
// new one (Info would deadlock when the old job was cancelled with the new
// one still locked; the hook checks the lock with TryLock so that the test
// fails instead of hanging).
func TestReplaceOnCancelMayCallScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s *Scheduler
		var held []bool
		s, err := New(Options{Hooks: Hooks{OnCancel: func(e Event) {
			j := s.jobs.get(e.ID)
			free := j.mu.TryLock()
			if free {
				j.mu.Unlock()
			}
			held = append(held, !free)
		}}})
		if err != nil {
			t.Fatal(err)
		}
		defer shutdown(t, s)
		mustAdd(t, s, "j", Every(time.Second), noop)
		if err := s.Replace("j", Every(time.Minute), noop); err != nil {
			t.Fatal(err)
		}
		if len(held) != 1 || held[0] {
			t.Fatalf("OnCancel ran with the new job locked: %v, want [false]", held)
		}
		if info, ok := s.Info("j"); !ok || info.Next.Sub(time.Now()) != time.Minute {
			t.Fatalf("Info = %+v, %v; want the new job", info, ok)
		}
	})
}

// TestShutdownReportsDroppedRuns pins issue 20 item 6: a retry armed when
// Shutdown began vanished uncounted (Stats Dropped 0, Interrupted 0, no
// Event), and so did an occurrence waiting under OverlapQueue, while a
// queued OnSkip report was counted as a dropped run and never delivered.
// Every run that never starts because of Shutdown is now counted in
// Dropped and reported to OnSkip with Outcome Dropped (a queued run of a
// job cancelled since is not); a queued skip report is delivered.
func TestShutdownReportsDroppedRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{Workers: 2})
		start := time.Now()
		long := func(context.Context, Run) error {
			time.Sleep(10 * time.Second)
			return nil
		}
		// Worker 1 from 1s to 11s; its 2s occurrence waits (OverlapQueue),
		// the 3s and 4s ones are skipped (one OnSkip report queued).
		mustAdd(t, s, "waiting", Every(time.Second), long, JobOptions{Overlap: OverlapQueue})
		// Worker 2: fails at 1s, its retry is armed for 61s.
		mustAdd(t, s, "retry", After(time.Second), fail, JobOptions{Retry: Retry{Attempts: 2, Base: time.Minute}})
		// Worker 2 from 1.5s to 11.5s.
		mustAdd(t, s, "busy", After(1500*time.Millisecond), long)
		// Due at 3s with both workers busy: queued for a worker.
		mustAdd(t, s, "queued", After(3*time.Second), noop)
		// Queued too, then cancelled: Cancel ended it, Shutdown drops
		// nothing of it.
		mustAdd(t, s, "gone", After(3*time.Second), noop)
		time.Sleep(4500 * time.Millisecond)
		synctest.Wait()
		s.Cancel("gone")
		shutdown(t, s)

		var got []string
		skipped := 0
		for _, e := range r.skipped() {
			switch e.Outcome {
			case Dropped:
				got = append(got, fmt.Sprintf("%s attempt %d due %v", e.ID, e.Attempt, e.Scheduled.Sub(start)))
			case Skipped:
				skipped++
			default:
				t.Errorf("OnSkip event %+v, want Outcome Skipped or Dropped", e)
			}
		}
		slices.Sort(got)
		want := []string{"queued attempt 1 due 3s", "retry attempt 2 due 1m1s", "waiting attempt 1 due 2s"}
		if !slices.Equal(got, want) {
			t.Errorf("Dropped reports %q, want %q", got, want)
		}
		if skipped != 1 {
			t.Errorf("%d Skipped reports, want 1 (the one queued at Shutdown)", skipped)
		}
		if st := s.Stats(); st.Dropped != 3 || st.Skipped != 2 || st.Retried != 1 {
			t.Errorf("Stats Dropped %d Skipped %d Retried %d, want 3, 2, 1", st.Dropped, st.Skipped, st.Retried)
		}
	})
}
