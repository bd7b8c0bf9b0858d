package jobs

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Regression tests of user code that panics or calls runtime.Goexit
// where the Scheduler calls it: hooks, callbacks and a custom Schedule's
// Next (issue 20).

// TestGoexitInOnFinishKeepsDeadLetter pins issue 20 item 1: a
// runtime.Goexit in OnFinish (t.Fatal in a test's hook) ended the worker
// before the dead-letter callback ran, so an occurrence that failed for
// good was never dead-lettered (Stats: Failed 1, DeadLetters 0), though
// DeadLetter promises one call per such occurrence.
func TestGoexitInOnFinishKeepsDeadLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var letters atomic.Int32
		s, err := New(Options{
			Workers:  1,
			Hooks:    Hooks{OnFinish: func(Event) { runtime.Goexit() }},
			Defaults: JobOptions{DeadLetter: func(DeadLetter) { letters.Add(1) }},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer shutdown(t, s)
		mustAdd(t, s, "j", Every(time.Second), func(context.Context, Run) error {
			return Permanent(errBoom)
		}, JobOptions{Limit: 3})
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := letters.Load(); got != 3 {
			t.Errorf("DeadLetter ran %d times, want 3 (one per failed occurrence)", got)
		}
		if st := s.Stats(); st.Failed != 3 || st.DeadLetters != 3 {
			t.Errorf("Stats Failed %d DeadLetters %d, want 3, 3", st.Failed, st.DeadLetters)
		}
	})
}
