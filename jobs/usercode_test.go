package jobs

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// logLines sends log/slog's default logger to a buffer until the test
// ends, and returns a function that reads what was logged.
func logLines(t *testing.T) func() string {
	var mu sync.Mutex
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

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

// TestPanicInScheduleNext pins issue 20 item 2: a custom Schedule's Next
// that panicked when a FromCompletion job called it on a worker, at the
// end of an occurrence, killed the process; on the wheel's goroutine the
// same panic was recovered but left the job in the table with a past
// Next, never to run or end. Now, wherever it is called, the panic is
// logged and counts as no further occurrence: the job ends, and the
// Scheduler goes on.
func TestPanicInScheduleNext(t *testing.T) {
	for _, tc := range []struct {
		name           string
		fromCompletion bool
	}{
		// Next panics once the run has ended, so on the worker that ends
		// it (and not on the wheel, which also called it at the firing
		// before item 5 was fixed).
		{"worker", true},
		// Next panics at the first firing, on the wheel.
		{"wheel", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logged := logLines(t)
			synctest.Test(t, func(t *testing.T) {
				s, r := newScheduler(t, Options{Workers: 1})
				defer shutdown(t, s)
				var calls atomic.Int32
				var ran atomic.Bool
				sched := scheduleFunc(func(after time.Time) time.Time {
					if n := calls.Add(1); tc.fromCompletion && ran.Load() || !tc.fromCompletion && n > 1 {
						panic("bad schedule")
					}
					return after.Add(time.Second)
				})
				mustAdd(t, s, "bad", sched, func(context.Context, Run) error {
					time.Sleep(500 * time.Millisecond)
					ran.Store(true)
					return nil
				}, JobOptions{FromCompletion: tc.fromCompletion})
				mustAdd(t, s, "other", Every(time.Second), noop, JobOptions{Limit: 3})
				time.Sleep(time.Minute)
				synctest.Wait()
				if _, ok := s.Info("bad"); ok || s.Len() != 0 {
					t.Errorf("Info(bad) found, Len %d: want the job ended after its Next panicked", s.Len())
				}
				runs := map[string]int{}
				for _, e := range r.finished() {
					runs[e.ID]++
				}
				if runs["bad"] != 1 || runs["other"] != 3 {
					t.Errorf("runs %v, want bad 1 and other 3", runs)
				}
			})
			if got := logged(); !strings.Contains(got, "jobs: Schedule.Next panicked") || !strings.Contains(got, "bad schedule") {
				t.Errorf("log %q, want the panic reported", got)
			}
		})
	}
}

// TestGoexitInScheduleNext pins issue 20 item 3: a custom Schedule's Next
// that called runtime.Goexit on a worker (a FromCompletion job, at the end
// of an occurrence) ended the worker with the job locked: Info and Cancel
// of its ID blocked for ever, and the worker was not replaced, so with
// Workers 1 nothing ran again. On the wheel's goroutine, the job kept a
// past Next that never fired. Now the attempt is settled, the job has no
// further occurrence (it ends), the Goexit is reported, and the worker is
// replaced.
func TestGoexitInScheduleNext(t *testing.T) {
	for _, tc := range []struct {
		name           string
		fromCompletion bool
		report         string
	}{
		{"worker", true, "jobs: Schedule.Next called runtime.Goexit"},
		{"wheel", false, "jobs: wheel callback panicked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logged := logLines(t)
			synctest.Test(t, func(t *testing.T) {
				s, r := newScheduler(t, Options{Workers: 1})
				defer shutdown(t, s)
				var calls atomic.Int32
				var ran atomic.Bool
				sched := scheduleFunc(func(after time.Time) time.Time {
					if n := calls.Add(1); tc.fromCompletion && ran.Load() || !tc.fromCompletion && n > 1 {
						runtime.Goexit()
					}
					return after.Add(time.Second)
				})
				mustAdd(t, s, "bad", sched, func(context.Context, Run) error {
					time.Sleep(500 * time.Millisecond)
					ran.Store(true)
					return nil
				}, JobOptions{FromCompletion: tc.fromCompletion})
				mustAdd(t, s, "other", Every(time.Second), noop, JobOptions{Limit: 3})
				time.Sleep(time.Minute)
				synctest.Wait()
				// Checked first: without the fix, Info below would block.
				runs := map[string]int{}
				for _, e := range r.finished() {
					runs[e.ID]++
				}
				if runs["bad"] != 1 || runs["other"] != 3 {
					t.Fatalf("runs %v, want bad 1 and other 3 (the worker replaced)", runs)
				}
				if _, ok := s.Info("bad"); ok || s.Cancel("bad") || s.Len() != 0 {
					t.Errorf("job bad still there (Len %d): want it ended after its Next called Goexit", s.Len())
				}
				if st := s.Stats(); st.Running != 0 || st.Succeeded != 4 {
					t.Errorf("Stats Running %d Succeeded %d, want 0, 4", st.Running, st.Succeeded)
				}
			})
			if got := logged(); !strings.Contains(got, tc.report) {
				t.Errorf("log %q, want %q", got, tc.report)
			}
		})
	}
}

// TestScheduleNextOncePerOccurrence pins issue 20 item 5: the wheel asked
// a FromCompletion job's Next at every firing and threw the answer away
// (the worker asks it again when the occurrence ends), and asked any job's
// Next at the firing that reached its Limit, for nothing. Next is asked
// once at Add and then once per occurrence that needs it: with
// FromCompletion, with the end of each occurrence.
func TestScheduleNextOncePerOccurrence(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts JobOptions
		run  time.Duration // how long each run takes
		want []time.Duration
	}{
		// Runs at 10s, 23s, 36s, 49s, each 3s long: Next is asked at Add
		// and at the end of each run.
		{"from completion", JobOptions{FromCompletion: true}, 3 * time.Second,
			[]time.Duration{0, 13 * time.Second, 26 * time.Second, 39 * time.Second, 52 * time.Second}},
		// Runs at 10s and 20s: Next is asked at Add and at the first
		// firing; the second reaches Limit.
		{"limit", JobOptions{Limit: 2}, 0, []time.Duration{0, 10 * time.Second}},
		// FromCompletion and Limit: not asked after the last run.
		{"from completion limit", JobOptions{FromCompletion: true, Limit: 2}, 3 * time.Second,
			[]time.Duration{0, 13 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, _ := newScheduler(t, Options{})
				defer shutdown(t, s)
				start := time.Now()
				var mu sync.Mutex
				var asked []time.Duration
				sched := scheduleFunc(func(after time.Time) time.Time {
					mu.Lock()
					asked = append(asked, after.Sub(start))
					mu.Unlock()
					return after.Add(10 * time.Second)
				})
				mustAdd(t, s, "j", sched, func(context.Context, Run) error {
					time.Sleep(tc.run)
					return nil
				}, tc.opts)
				time.Sleep(55 * time.Second)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if !slices.Equal(asked, tc.want) {
					t.Fatalf("Next asked at %v, want %v", asked, tc.want)
				}
			})
		})
	}
}

// TestRunSeqTellsAttemptsApart: Run.Seq numbers the attempts from 1; the
// Func and the hooks of one attempt see the same Seq, and two attempts
// whose other fields are all equal (two Triggers at one instant, as in a
// synctest bubble) do not (issue 20 item 7).
func TestRunSeqTellsAttemptsApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{Workers: 2})
		defer shutdown(t, s)
		var mu sync.Mutex
		var seen []Run
		mustAdd(t, s, "j", After(time.Hour), func(_ context.Context, run Run) error {
			mu.Lock()
			seen = append(seen, run)
			mu.Unlock()
			return nil
		}, JobOptions{Overlap: OverlapAllow})
		for range 2 {
			if err := s.Trigger("j"); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		starts, ends := r.started(), r.finished()
		if len(seen) != 2 || len(starts) != 2 || len(ends) != 2 {
			t.Fatalf("%d runs, %d starts, %d ends; want 2 each", len(seen), len(starts), len(ends))
		}
		a, b := seen[0], seen[1]
		if a.Seq == b.Seq || min(a.Seq, b.Seq) != 1 || max(a.Seq, b.Seq) != 2 {
			t.Errorf("Seqs %d and %d, want 1 and 2", a.Seq, b.Seq)
		}
		a.Seq, b.Seq = 0, 0
		if a != b {
			t.Errorf("runs %+v and %+v differ besides Seq; the test wants them equal", a, b)
		}
		for _, es := range [][]Event{starts, ends} {
			got := []uint64{es[0].Seq, es[1].Seq}
			slices.Sort(got)
			if !slices.Equal(got, []uint64{1, 2}) {
				t.Errorf("events' Seqs %v, want [1 2]", got)
			}
		}
	})
}

// TestFromCompletionFiringWhileEnding: a FromCompletion job's occurrence
// armed while a Triggered run is active may fire, and be skipped, between
// the moment the run's worker asks for the next occurrence (out of the
// lock, since Next is user code) and the moment it settles the run. The
// worker must not take the armed occurrence for one still pending: with
// no next occurrence asked, the job would end. The interleaving is forced
// here by calling the steps in order.
func TestFromCompletionFiringWhileEnding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newScheduler(t, Options{})
		defer shutdown(t, s)
		mustAdd(t, s, "j", Every(10*time.Second), noop, JobOptions{FromCompletion: true})
		j := s.jobs.get("j")
		j.mu.Lock()
		j.active++ // a Triggered run, now ending
		due := j.next
		j.mu.Unlock()
		tk := task{j: j, gen: j.gen, attempt: 1, due: time.Now(), first: time.Now()}
		end := time.Now()
		following := s.completed(j, tk.gen, end) // the worker, before settling
		s.fireJob(j, due)                        // the wheel: the armed occurrence is skipped
		s.settle(tk, new(execution), Run{ID: "j", Attempt: 1, Started: end}, 0, nil, end, false, following)
		info, ok := s.Info("j")
		if want := end.Add(10 * time.Second); !ok || !info.Next.Equal(want) {
			t.Fatalf("Info = %+v, %v; want the job armed for %v", info, ok, want)
		}
	})
}
