package jobs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

var errBoom = errors.New("boom")

func fail(context.Context, Run) error { return errBoom }

// TestRetryDelaysWithinJitter: the wait before attempt n+1 is
// Base×Factor^(n-1), capped at Max, times a factor in [1-J, 1+J], measured
// from the end of attempt n; started within one Resolution of that.
func TestRetryDelaysWithinJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		retry := Retry{Attempts: 7, Base: 100 * time.Millisecond, Factor: 3, Max: 2 * time.Second, Jitter: 0.25}
		const jobs = 40
		for i := range jobs {
			mustAdd(t, s, fmt.Sprint(i), After(time.Second), fail, JobOptions{Retry: retry})
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		byJob := map[string][]Event{}
		for _, e := range r.finished() {
			byJob[e.ID] = append(byJob[e.ID], e)
		}
		var lo, hi int // waits in the lower and upper quarter of the band
		for id, es := range byJob {
			if len(es) != retry.Attempts {
				t.Fatalf("job %s: %d attempts, want %d", id, len(es), retry.Attempts)
			}
			for n := 1; n < len(es); n++ {
				base := min(time.Duration(float64(retry.Base)*pow(retry.Factor, n-1)), retry.Max)
				wait := es[n].Started.Sub(es[n-1].Started.Add(es[n-1].Duration))
				min := time.Duration(float64(base) * (1 - retry.Jitter))
				max := time.Duration(float64(base)*(1+retry.Jitter)) + time.Millisecond
				if wait < min || wait > max {
					t.Fatalf("job %s: wait before attempt %d = %v, want in [%v, %v]", id, n+1, wait, min, max)
				}
				if es[n].Attempt != n+1 || es[n-1].Outcome != Retrying {
					t.Fatalf("job %s: attempt %d reported as %d after outcome %v", id, n+1, es[n].Attempt, es[n-1].Outcome)
				}
				switch {
				case wait < base*7/8:
					lo++
				case wait > base*9/8:
					hi++
				}
			}
			if last := es[len(es)-1]; last.Outcome != Failed || !errors.Is(last.Err, errBoom) {
				t.Fatalf("job %s: last attempt %v (%v), want Failed with errBoom", id, last.Outcome, last.Err)
			}
		}
		if lo == 0 || hi == 0 {
			t.Fatalf("jitter does not spread: %d waits low, %d high", lo, hi)
		}
	})
}

// TestRetryDelay: Retry.Delay is Base×Factor^(n-1) capped at Max, with
// zero fields counting as the built-in defaults, n < 1 as 1, and a huge
// wait capped at about 100 years; with Jitter, within its band.
func TestRetryDelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Retry
		n    int
		want time.Duration
	}{
		{"ZeroFirst", Retry{}, 1, time.Second},
		{"ZeroThird", Retry{}, 3, 4 * time.Second},
		{"AttemptZeroCountsAsOne", Retry{Base: time.Minute}, 0, time.Minute},
		{"Factor", Retry{Base: 10 * time.Millisecond, Factor: 3}, 4, 270 * time.Millisecond},
		{"CappedAtMax", Retry{Base: time.Second, Max: 5 * time.Second}, 10, 5 * time.Second},
		{"FactorOneConstant", Retry{Base: time.Second, Factor: 1}, 50, time.Second},
		{"HugeCapped", Retry{Base: time.Hour}, 1000, time.Duration(float64(maxDelay))}, // about 100 years
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Delay(tc.n); got != tc.want {
				t.Fatalf("%+v.Delay(%d) = %v, want %v", tc.r, tc.n, got, tc.want)
			}
		})
	}
	t.Run("Jitter", func(t *testing.T) {
		r := Retry{Base: time.Second, Jitter: 0.5}
		for range 1000 {
			if got := r.Delay(2); got < time.Second || got > 3*time.Second {
				t.Fatalf("%+v.Delay(2) = %v, want in [1s, 3s]", r, got)
			}
		}
	})
}

// TestRetryValidate: Retry.Validate accepts zero fields and rejects each
// bad field with an ErrInvalid naming it.
func TestRetryValidate(t *testing.T) {
	if err := (Retry{}).Validate(); err != nil {
		t.Fatalf("zero Retry: %v, want nil", err)
	}
	for _, tc := range []struct {
		r     Retry
		field string
	}{
		{Retry{Attempts: -1}, "Retry.Attempts"},
		{Retry{Base: -1}, "Retry.Base"},
		{Retry{Max: -1}, "Retry.Max"},
		{Retry{Factor: 0.5}, "Retry.Factor"},
		{Retry{Factor: math.Inf(1)}, "Retry.Factor"},
		{Retry{Factor: math.NaN()}, "Retry.Factor"},
		{Retry{Jitter: 1}, "Retry.Jitter"},
		{Retry{Jitter: -0.1}, "Retry.Jitter"},
		{Retry{Jitter: math.NaN()}, "Retry.Jitter"},
	} {
		err := tc.r.Validate()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(fmt.Sprint(err), tc.field) {
			t.Errorf("%+v.Validate() = %v, want ErrInvalid naming %s", tc.r, err, tc.field)
		}
	}
}

func pow(x float64, n int) float64 {
	p := 1.0
	for range n {
		p *= x
	}
	return p
}

// TestDeadLetterExactlyOnce: an occurrence that fails every attempt is
// dead-lettered once, with the number of attempts and the last error; a
// periodic job's later occurrences go on.
func TestDeadLetterExactlyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{Defaults: JobOptions{Retry: Retry{Attempts: 3, Base: time.Second}}})
		defer shutdown(t, s)
		start := time.Now()
		var n atomic.Int32
		mustAdd(t, s, "flaky", Every(time.Minute), func(ctx context.Context, r Run) error {
			return fmt.Errorf("call %d: %w", n.Add(1), errBoom)
		}, JobOptions{Name: "nightly", Limit: 2})
		time.Sleep(time.Hour)
		synctest.Wait()
		got := r.letters()
		if len(got) != 2 {
			t.Fatalf("%d dead letters, want 2 (one per occurrence): %+v", len(got), got)
		}
		for i, d := range got {
			wantErr := fmt.Sprintf("call %d: boom", 3*(i+1))
			due := start.Add(time.Duration(i+1) * time.Minute)
			if d.ID != "flaky" || d.Name != "nightly" || d.Attempts != 3 || d.Err.Error() != wantErr || !d.Scheduled.Equal(due) {
				t.Fatalf("dead letter %d = %+v, want flaky/nightly, 3 attempts, %q, scheduled %v", i, d, wantErr, due.Sub(start))
			}
		}
		if st := s.Stats(); st.DeadLetters != 2 || st.Failed != 2 || st.Retried != 4 {
			t.Fatalf("Stats = %+v, want 2 dead letters, 2 failed, 4 retried", st)
		}
	})
}

// TestJobRetryZeroFieldsTakeDefaults: each zero field of a job's Retry
// takes the Scheduler's default for it, Attempts included (a job that sets
// only Base keeps the default's Attempts, not a single attempt).
func TestJobRetryZeroFieldsTakeDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{Defaults: JobOptions{Retry: Retry{Attempts: 4, Base: time.Second, Factor: 3}}})
		defer shutdown(t, s)
		fail := func(context.Context, Run) error { return errBoom }
		mustAdd(t, s, "base", After(time.Second), fail, JobOptions{Retry: Retry{Base: 2 * time.Second}})
		mustAdd(t, s, "attempts", After(time.Second), fail, JobOptions{Retry: Retry{Attempts: 2}})
		time.Sleep(time.Minute)
		synctest.Wait()
		waits := map[string][]time.Duration{}
		last := map[string]time.Time{}
		for _, e := range r.finished() {
			if e.Attempt > 1 {
				waits[e.ID] = append(waits[e.ID], e.Scheduled.Sub(last[e.ID]))
			}
			last[e.ID] = e.Scheduled
		}
		want := map[string][]time.Duration{
			"base":     {2 * time.Second, 6 * time.Second, 18 * time.Second}, // 4 attempts, Factor 3
			"attempts": {time.Second},                                        // 2 attempts, Base 1s
		}
		for id, w := range want {
			if !slices.Equal(waits[id], w) {
				t.Errorf("%s: waits between attempts %v, want %v", id, waits[id], w)
			}
		}
	})
}

// TestPermanentNotRetried: Permanent errors and errors Retry.If refuses
// fail the occurrence at once.
func TestPermanentNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{Defaults: JobOptions{Retry: Retry{
			Attempts: 5,
			If:       func(err error) bool { return !errors.Is(err, context.DeadlineExceeded) },
		}}})
		defer shutdown(t, s)
		mustAdd(t, s, "perm", After(time.Second), func(context.Context, Run) error { return Permanent(errBoom) })
		mustAdd(t, s, "refused", After(time.Second), func(context.Context, Run) error { return context.DeadlineExceeded })
		time.Sleep(time.Minute)
		synctest.Wait()
		for _, e := range r.finished() {
			if e.Attempt != 1 || e.Outcome != Failed {
				t.Fatalf("%s: attempt %d %v, want one Failed attempt", e.ID, e.Attempt, e.Outcome)
			}
		}
		if d := r.letters(); len(d) != 2 || !errors.Is(d[0].Err, errBoom) && !errors.Is(d[1].Err, errBoom) {
			t.Fatalf("dead letters %+v, want 2, one wrapping errBoom", d)
		}
		if !IsPermanent(Permanent(errBoom)) || IsPermanent(errBoom) || Permanent(nil) != nil {
			t.Fatal("IsPermanent / Permanent(nil) wrong")
		}
	})
}

// TestPanicBecomesRetriedError: a panic fails the attempt with a
// *timingwheel.PanicError carrying the stack, and is retried like an error.
func TestPanicBecomesRetriedError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		var n atomic.Int32
		mustAdd(t, s, "p", After(time.Second), func(context.Context, Run) error {
			if n.Add(1) == 1 {
				panic("kaboom")
			}
			return nil
		}, JobOptions{Retry: Retry{Attempts: 2, Base: time.Second}})
		time.Sleep(time.Minute)
		synctest.Wait()
		es := r.finished()
		if len(es) != 2 || es[0].Outcome != Retrying || es[1].Outcome != Succeeded {
			t.Fatalf("events %+v, want Retrying then Succeeded", es)
		}
		var pe *timingwheel.PanicError
		if !errors.As(es[0].Err, &pe) || pe.Value != "kaboom" || !strings.Contains(string(pe.Stack), "TestPanicBecomesRetriedError") {
			t.Fatalf("error %v, want a *timingwheel.PanicError with the value and the stack", es[0].Err)
		}
		// The module's one panic report, keyed by the job's ID.
		var one *timingwheel.PanicError
		if !errors.As(es[0].Err, &one) || one != pe || one.Key != "p" {
			t.Errorf("error %v, want a *timingwheel.PanicError keyed by the job's ID p", es[0].Err)
		}
	})
}

// TestTimeoutCancelsAttempt: an attempt's context ends Timeout after it
// starts; the attempt is retried.
func TestTimeoutCancelsAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{Defaults: JobOptions{Timeout: 3 * time.Second}})
		defer shutdown(t, s)
		mustAdd(t, s, "slow", After(time.Second), func(ctx context.Context, _ Run) error {
			<-ctx.Done()
			return ctx.Err()
		}, JobOptions{Retry: Retry{Attempts: 2, Base: time.Second}})
		time.Sleep(time.Minute)
		synctest.Wait()
		es := r.finished()
		if len(es) != 2 {
			t.Fatalf("%d attempts, want 2", len(es))
		}
		for _, e := range es {
			if e.Duration != 3*time.Second || !errors.Is(e.Err, context.DeadlineExceeded) {
				t.Fatalf("attempt %d ran %v with %v, want 3s and DeadlineExceeded", e.Attempt, e.Duration, e.Err)
			}
		}
		if es[1].Outcome != Failed {
			t.Fatalf("last outcome %v, want Failed", es[1].Outcome)
		}
	})
}

// blocker is a Func that blocks until released or cancelled, recording
// its starts.
type blocker struct {
	mu      sync.Mutex
	release chan struct{}
	starts  []time.Time
	causes  []error
}

func newBlocker() *blocker { return &blocker{release: make(chan struct{})} }

func (b *blocker) fn(ctx context.Context, r Run) error {
	b.mu.Lock()
	b.starts = append(b.starts, r.Started)
	b.mu.Unlock()
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		b.causes = append(b.causes, context.Cause(ctx))
		b.mu.Unlock()
		return ctx.Err()
	}
}

func (b *blocker) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.starts)
}

// TestOverlapModes: with a run holding on over several periods, Skip runs
// nothing more, Queue runs one more right after, Allow runs every
// occurrence.
func TestOverlapModes(t *testing.T) {
	for _, tc := range []struct {
		mode        Overlap
		during      int             // runs started while the first holds on (it holds 3.5 periods)
		after       []time.Duration // starts after release at 4s, to 6.5s
		skipped     uint64
		queuedStart time.Duration
	}{
		{mode: OverlapSkip, during: 1, after: []time.Duration{5 * time.Second, 6 * time.Second}, skipped: 3},
		{mode: OverlapQueue, during: 1, after: []time.Duration{4500 * time.Millisecond, 5 * time.Second, 6 * time.Second}, skipped: 2},
		{mode: OverlapAllow, during: 4, after: []time.Duration{5 * time.Second, 6 * time.Second}, skipped: 0},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, _ := newScheduler(t, Options{})
				defer shutdown(t, s)
				start := time.Now()
				b := newBlocker()
				var first atomic.Bool
				var later []time.Duration
				var mu sync.Mutex
				mustAdd(t, s, "j", Every(time.Second), func(ctx context.Context, r Run) error {
					if first.CompareAndSwap(false, true) || tc.mode == OverlapAllow && r.Started.Sub(start) < 4500*time.Millisecond {
						return b.fn(ctx, r)
					}
					mu.Lock()
					later = append(later, r.Started.Sub(start))
					mu.Unlock()
					return nil
				}, JobOptions{Overlap: tc.mode})
				time.Sleep(4500 * time.Millisecond)
				synctest.Wait()
				if got := b.count(); got != tc.during {
					t.Fatalf("%d runs holding on at once, want %d", got, tc.during)
				}
				close(b.release)
				time.Sleep(2 * time.Second)
				synctest.Wait()
				// The release happens at 4.5s.
				if !slices.Equal(later, tc.after) {
					t.Fatalf("later runs at %v, want %v", later, tc.after)
				}
				if st := s.Stats(); st.Skipped != tc.skipped {
					t.Fatalf("Stats.Skipped = %d, want %d", st.Skipped, tc.skipped)
				}
			})
		})
	}
}

// TestFromCompletion: the next occurrence is measured from the end of the
// previous one.
func TestFromCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		start := time.Now()
		mustAdd(t, s, "j", Every(10*time.Second), func(context.Context, Run) error {
			time.Sleep(3 * time.Second)
			return nil
		}, JobOptions{FromCompletion: true, Limit: 3})
		time.Sleep(time.Minute)
		synctest.Wait()
		got := offsets(start, startTimes(r.finished()))
		want := []time.Duration{10 * time.Second, 23 * time.Second, 36 * time.Second}
		if !slices.Equal(got, want) {
			t.Fatalf("runs at %v, want %v", got, want)
		}
	})
}

// TestFromCompletionNeverOverlaps: a FromCompletion job's runs never
// overlap, even under OverlapAllow: a Trigger while a run is active gets
// ErrBusy.
func TestFromCompletionNeverOverlaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newScheduler(t, Options{})
		defer shutdown(t, s)
		var running, most atomic.Int32
		mustAdd(t, s, "j", Every(time.Second), func(context.Context, Run) error {
			n := running.Add(1)
			if n > most.Load() {
				most.Store(n)
			}
			time.Sleep(5 * time.Second)
			running.Add(-1)
			return nil
		}, JobOptions{FromCompletion: true, Overlap: OverlapAllow})
		time.Sleep(1500 * time.Millisecond) // the first run is active
		if err := s.Trigger("j"); !errors.Is(err, ErrBusy) {
			t.Fatalf("Trigger during a run: %v, want ErrBusy", err)
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if got := most.Load(); got != 1 {
			t.Fatalf("%d runs at once, want 1", got)
		}
	})
}

// TestGoexitInFunc: a Func that calls runtime.Goexit (t.FailNow in a
// test) fails its attempt like a panic; the worker it ends is replaced, so
// the occurrence waiting behind it (OverlapQueue) and the later ones still
// run, even with a single worker.
func TestGoexitInFunc(t *testing.T) {
	for _, overlap := range []Overlap{OverlapQueue, OverlapSkip} {
		t.Run(overlap.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, r := newScheduler(t, Options{Workers: 1})
				defer shutdown(t, s)
				var calls atomic.Int32
				mustAdd(t, s, "j", Every(time.Second), func(context.Context, Run) error {
					if calls.Add(1) == 1 {
						if overlap == OverlapQueue {
							time.Sleep(1500 * time.Millisecond) // the next occurrence waits
						}
						runtime.Goexit()
					}
					return nil
				}, JobOptions{Overlap: overlap})
				time.Sleep(5500 * time.Millisecond)
				synctest.Wait()
				ends := r.finished()
				var outcomes []Outcome
				for _, e := range ends {
					outcomes = append(outcomes, e.Outcome)
				}
				want := []Outcome{Failed, Succeeded, Succeeded, Succeeded, Succeeded}
				if !slices.Equal(outcomes, want) {
					t.Fatalf("outcomes %v, want %v", outcomes, want)
				}
				var pe *timingwheel.PanicError
				if !errors.As(ends[0].Err, &pe) || !errors.Is(ends[0].Err, timingwheel.ErrGoexit) || pe.Key != "j" {
					t.Fatalf("first attempt's error %v, want a *timingwheel.PanicError of runtime.Goexit", ends[0].Err)
				}
				if got := len(r.letters()); got != 1 {
					t.Fatalf("%d dead letters, want 1", got)
				}
			})
		})
	}
}

// TestGoexitInHooks: runtime.Goexit in OnStart, OnFinish or OnSkip is
// handled as in the Func: the single worker is replaced and later runs
// (and the occurrence queued behind the one whose OnFinish exited) go on.
func TestGoexitInHooks(t *testing.T) {
	for _, hook := range []string{"OnStart", "OnFinish", "OnSkip"} {
		t.Run(hook, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var first atomic.Bool
				exitOnce := func() {
					if first.CompareAndSwap(false, true) {
						runtime.Goexit()
					}
				}
				var mu sync.Mutex
				var starts []time.Duration
				begin := time.Now()
				h := Hooks{OnStart: func(Event) {
					mu.Lock()
					starts = append(starts, time.Since(begin))
					mu.Unlock()
				}}
				switch hook {
				case "OnStart":
					h.OnStart = func(Event) {
						exitOnce()
						mu.Lock()
						starts = append(starts, time.Since(begin))
						mu.Unlock()
					}
				case "OnFinish":
					h.OnFinish = func(Event) { exitOnce() }
				case "OnSkip":
					h.OnSkip = func(Event) { exitOnce() }
				}
				s, err := New(Options{Workers: 1, Hooks: h})
				if err != nil {
					t.Fatal(err)
				}
				defer shutdown(t, s)
				var calls atomic.Int32
				mustAdd(t, s, "j", Every(time.Second), func(context.Context, Run) error {
					if calls.Add(1) == 1 {
						time.Sleep(2500 * time.Millisecond) // 2s queued, 3s skipped
					}
					return nil
				}, JobOptions{Overlap: OverlapQueue})
				time.Sleep(5500 * time.Millisecond)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if len(starts) < 3 || starts[len(starts)-1] != 5*time.Second {
					t.Fatalf("runs started at %v, want runs going on to 5s", starts)
				}
			})
		})
	}
}

// TestGoexitInRetryIf: runtime.Goexit in Retry.If is handled as a panic
// there (the error is not retried: the occurrence fails for good and is
// dead-lettered once) and as a Goexit in the Func (the single worker is
// replaced, so later occurrences run).
func TestGoexitInRetryIf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{Workers: 1})
		defer shutdown(t, s)
		var calls, asked atomic.Int32
		fail := errors.New("boom")
		mustAdd(t, s, "j", Every(time.Second), func(context.Context, Run) error {
			if calls.Add(1) == 1 {
				return fail
			}
			return nil
		}, JobOptions{Retry: Retry{Attempts: 3, If: func(error) bool {
			if asked.Add(1) == 1 {
				runtime.Goexit()
			}
			return true
		}}})
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		var outcomes []Outcome
		for _, e := range r.finished() {
			outcomes = append(outcomes, e.Outcome)
		}
		if want := []Outcome{Failed, Succeeded, Succeeded}; !slices.Equal(outcomes, want) {
			t.Fatalf("outcomes %v, want %v", outcomes, want)
		}
		dead := r.letters()
		if len(dead) != 1 || dead[0].Attempts != 1 || !errors.Is(dead[0].Err, fail) {
			t.Fatalf("dead letters %+v, want one of attempt 1 with %v", dead, fail)
		}
		if st := s.Stats(); st.Running != 0 || st.Failed != 1 || st.Succeeded != 2 {
			t.Fatalf("Stats Running %d Failed %d Succeeded %d, want 0, 1, 2", st.Running, st.Failed, st.Succeeded)
		}
	})
}

// TestLimit: a job ends after Limit scheduled occurrences; Trigger's runs
// do not count.
func TestLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		mustAdd(t, s, "j", Every(time.Second), noop, JobOptions{Limit: 3})
		if err := s.Trigger("j"); err != nil {
			t.Fatalf("Trigger: %v", err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := len(r.finished()); got != 4 {
			t.Fatalf("%d runs, want 3 scheduled + 1 triggered", got)
		}
		if s.Len() != 0 {
			t.Fatalf("Len = %d, want 0 after the limit", s.Len())
		}
	})
}

// TestCancelRunning: Cancel cancels a running attempt's context with cause
// ErrCanceled; the attempt is neither retried nor dead-lettered, and the
// job never runs again.
func TestCancelRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{Defaults: JobOptions{Retry: Retry{Attempts: 5}}})
		defer shutdown(t, s)
		b := newBlocker()
		mustAdd(t, s, "j", Every(time.Second), b.fn)
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if !s.Cancel("j") {
			t.Fatal("Cancel = false, want true")
		}
		if s.Cancel("j") {
			t.Fatal("second Cancel = true, want false")
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if b.count() != 1 || len(b.causes) != 1 || b.causes[0] != ErrCanceled {
			t.Fatalf("%d runs, causes %v; want 1 run cancelled with ErrCanceled", b.count(), b.causes)
		}
		es := r.finished()
		if len(es) != 1 || es[0].Outcome != Canceled || len(r.letters()) != 0 {
			t.Fatalf("finish events %+v, dead letters %d; want one Canceled, none", es, len(r.letters()))
		}
		if len(r.cancel) != 1 || r.cancel[0].ID != "j" || r.cancel[0].Outcome != Removed {
			t.Fatalf("OnCancel events %+v, want one for j", r.cancel)
		}
	})
}

// TestCancelStopsRetries: Cancel between attempts drops the armed retry.
func TestCancelStopsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		mustAdd(t, s, "j", After(time.Second), fail, JobOptions{Retry: Retry{Attempts: 5, Base: 10 * time.Second}})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		s.Cancel("j")
		time.Sleep(time.Hour)
		synctest.Wait()
		if es := r.finished(); len(es) != 1 || es[0].Outcome != Retrying {
			t.Fatalf("events %+v, want one Retrying attempt and no more", es)
		}
		if s.sched.Len() != 0 {
			t.Fatalf("wheel holds %d timers after Cancel, want 0", s.sched.Len())
		}
	})
}

// TestRetriesArmedAtOnce: the retries of three occurrences (OverlapAllow)
// are armed at the same time, and each firing runs its own: a job's
// retries share the job as their timer's value, and the firing finds its
// retry among the job's armed ones by its timer.
func TestRetriesArmedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		start := time.Now()
		mustAdd(t, s, "j", Every(time.Second), func(_ context.Context, r Run) error {
			if r.Attempt == 1 {
				return errors.New("first attempt fails")
			}
			return nil
		}, JobOptions{Overlap: OverlapAllow, Limit: 3, Retry: Retry{Attempts: 2, Base: 10 * time.Second}})
		time.Sleep(time.Minute)
		synctest.Wait()
		var got []string
		for _, e := range r.started() {
			if e.Run.Attempt == 2 {
				got = append(got, fmt.Sprintf("due %v started %v", e.Run.Scheduled.Sub(start), e.Run.Started.Sub(start)))
			}
		}
		want := []string{"due 11s started 11s", "due 12s started 12s", "due 13s started 13s"}
		if !slices.Equal(got, want) {
			t.Fatalf("second attempts %q, want %q", got, want)
		}
	})
}

// TestReplace: Replace swaps the job in one step; the old one's running
// attempt is cancelled, its schedule dropped.
func TestReplace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		start := time.Now()
		b := newBlocker()
		mustAdd(t, s, "j", Every(time.Second), b.fn)
		time.Sleep(1500 * time.Millisecond)
		var newRuns []time.Duration
		if err := s.Replace("j", Every(10*time.Second), func(_ context.Context, r Run) error {
			newRuns = append(newRuns, r.Started.Sub(start))
			return nil
		}); err != nil {
			t.Fatalf("Replace: %v", err)
		}
		if err := s.Add("j", After(time.Second), noop); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("Add of a replaced ID: %v, want ErrDuplicate", err)
		}
		time.Sleep(25 * time.Second)
		synctest.Wait()
		want := []time.Duration{11500 * time.Millisecond, 21500 * time.Millisecond}
		if !slices.Equal(newRuns, want) || b.count() != 1 || b.causes[0] != ErrCanceled {
			t.Fatalf("new runs %v (want %v), old runs %d cancelled by %v", newRuns, want, b.count(), b.causes)
		}
		if len(r.cancel) != 1 {
			t.Fatalf("%d OnCancel events, want 1", len(r.cancel))
		}
		// Replace of an unknown ID adds it.
		if err := s.Replace("new", After(time.Second), noop); err != nil || s.Len() != 2 {
			t.Fatalf("Replace(new) = %v, Len %d; want nil, 2", err, s.Len())
		}
	})
}

// TestTrigger: Trigger runs a job now without moving its schedule, and
// follows its overlap policy.
func TestTrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		start := time.Now()
		b := newBlocker()
		mustAdd(t, s, "skip", Every(time.Minute), b.fn)
		mustAdd(t, s, "queue", Every(time.Minute), b.fn, JobOptions{Overlap: OverlapQueue})
		if err := s.Trigger("nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Trigger(unknown) = %v, want ErrNotFound", err)
		}
		for _, id := range []string{"skip", "queue"} {
			if err := s.Trigger(id); err != nil {
				t.Fatalf("Trigger(%s) = %v, want nil", id, err)
			}
		}
		synctest.Wait()
		if err := s.Trigger("skip"); !errors.Is(err, ErrBusy) {
			t.Fatalf("Trigger(skip) while running = %v, want ErrBusy", err)
		}
		if err := s.Trigger("queue"); err != nil {
			t.Fatalf("Trigger(queue) while running = %v, want nil (queued)", err)
		}
		if err := s.Trigger("queue"); !errors.Is(err, ErrBusy) {
			t.Fatalf("Trigger(queue) with one queued = %v, want ErrBusy", err)
		}
		time.Sleep(time.Second)
		close(b.release)
		time.Sleep(90 * time.Second)
		synctest.Wait()
		count := map[string][]time.Duration{}
		for _, e := range r.finished() {
			count[e.ID] = append(count[e.ID], e.Started.Sub(start))
		}
		want := map[string][]time.Duration{
			"skip":  {0, time.Minute},
			"queue": {0, time.Second, time.Minute},
		}
		if fmt.Sprint(count) != fmt.Sprint(want) {
			t.Fatalf("runs %v, want %v", count, want)
		}
	})
}

// TestQueueFullRunIsLateNotLost: with one worker and a queue of one, runs
// due together wait their turn and all run, late, none lost.
func TestQueueFullRunIsLateNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{Workers: 1, Queue: 1})
		defer shutdown(t, s)
		start := time.Now()
		const n = 10
		for i := range n {
			mustAdd(t, s, fmt.Sprint(i), After(time.Second), func(context.Context, Run) error {
				time.Sleep(100 * time.Millisecond)
				return nil
			})
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		es := r.finished()
		if len(es) != n {
			t.Fatalf("%d runs, want %d", len(es), n)
		}
		for i, e := range es {
			if want := time.Second + time.Duration(i)*100*time.Millisecond; e.Started.Sub(start) != want || !e.Scheduled.Equal(start.Add(time.Second)) {
				t.Fatalf("run %d started at %v (scheduled %v), want %v (scheduled 1s)", i, e.Started.Sub(start), e.Scheduled.Sub(start), want)
			}
		}
		if err := s.Add("x", Every(time.Hour), noop); err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if st.Deferred == 0 {
			t.Fatal("Stats.Deferred = 0, want > 0")
		}
	})
}

// TestTriggerQueueFull: Trigger fails fast with ErrFull when no run can be
// queued.
func TestTriggerQueueFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newScheduler(t, Options{Workers: 1, Queue: 1})
		defer shutdown(t, s)
		b := newBlocker()
		for _, id := range []string{"a", "b", "c"} {
			mustAdd(t, s, id, Every(time.Hour), b.fn)
		}
		if err := s.Trigger("a"); err != nil { // runs
			t.Fatal(err)
		}
		synctest.Wait()
		if err := s.Trigger("b"); err != nil { // queued
			t.Fatal(err)
		}
		if err := s.Trigger("c"); !errors.Is(err, ErrFull) {
			t.Fatalf("Trigger with a full queue = %v, want ErrFull", err)
		}
		close(b.release)
	})
}

// TestHooksAndMiddleware: middleware wraps every Func, first outermost;
// hooks see start and finish with lateness and duration.
func TestHooksAndMiddleware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var trace []string
		var mu sync.Mutex
		mw := func(name string) func(Func) Func {
			return func(next Func) Func {
				return func(ctx context.Context, r Run) error {
					mu.Lock()
					trace = append(trace, name+">")
					mu.Unlock()
					err := next(ctx, r)
					mu.Lock()
					trace = append(trace, "<"+name)
					mu.Unlock()
					return err
				}
			}
		}
		s, r := newScheduler(t, Options{Middleware: []func(Func) Func{mw("outer"), mw("inner")}})
		defer shutdown(t, s)
		mustAdd(t, s, "j", After(time.Second), func(context.Context, Run) error {
			time.Sleep(2 * time.Second)
			return nil
		}, JobOptions{Name: "job"})
		time.Sleep(time.Minute)
		synctest.Wait()
		if want := "[outer> inner> <inner <outer]"; fmt.Sprint(trace) != want {
			t.Fatalf("middleware order %v, want %s", trace, want)
		}
		st, en := r.started(), r.finished()
		if len(st) != 1 || len(en) != 1 || st[0].Name != "job" || st[0].Lateness != 0 || en[0].Duration != 2*time.Second || en[0].Outcome != Succeeded {
			t.Fatalf("start %+v, finish %+v", st, en)
		}
	})
}

// TestHookPanicRecovered: a panicking hook does not kill the worker.
func TestHookPanicRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		s, err := New(Options{Workers: 1, Hooks: Hooks{OnStart: func(Event) { panic("hook") }}})
		if err != nil {
			t.Fatal(err)
		}
		defer shutdown(t, s)
		mustAdd(t, s, "j", Every(time.Second), func(context.Context, Run) error { runs.Add(1); return nil }, JobOptions{Limit: 3})
		time.Sleep(time.Minute)
		synctest.Wait()
		if runs.Load() != 3 {
			t.Fatalf("%d runs, want 3", runs.Load())
		}
	})
}

// TestRetryIfPanic: a panicking Retry.If refuses the retry; the worker and
// the Scheduler go on.
func TestRetryIfPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{Workers: 1})
		defer shutdown(t, s)
		retry := Retry{Attempts: 3, If: func(error) bool { panic("bad predicate") }}
		mustAdd(t, s, "a", After(time.Second), fail, JobOptions{Retry: retry})
		mustAdd(t, s, "b", After(2*time.Second), noop)
		time.Sleep(time.Minute)
		synctest.Wait()
		es := r.finished()
		if len(es) != 2 || es[0].Outcome != Failed || es[1].Outcome != Succeeded || len(r.letters()) != 1 {
			t.Fatalf("events %+v, %d dead letters; want a Failed once (dead-lettered), then b", es, len(r.letters()))
		}
	})
}

// TestTimeoutIgnoredStillRunning: an attempt that ignores its context runs
// on past its Timeout, and counts as running (OverlapSkip) until it
// returns.
func TestTimeoutIgnoredStillRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		start := time.Now()
		var calls atomic.Int32
		mustAdd(t, s, "stubborn", Every(time.Second), func(ctx context.Context, _ Run) error {
			if calls.Add(1) == 1 {
				time.Sleep(2500 * time.Millisecond) // ignores ctx
			}
			return ctx.Err()
		}, JobOptions{Timeout: time.Second, Limit: 2})
		time.Sleep(time.Minute)
		synctest.Wait()
		es := r.finished()
		if len(es) != 2 || es[0].Duration != 2500*time.Millisecond || !errors.Is(es[0].Err, context.DeadlineExceeded) {
			t.Fatalf("events %+v, want the first attempt to run 2.5s and report DeadlineExceeded", es)
		}
		if got := es[1].Started.Sub(start); got != 4*time.Second {
			t.Fatalf("second run at %v, want 4s (2s and 3s skipped while the first ran)", got)
		}
	})
}

// TestHooksMayCallScheduler: hooks run with no lock held and may call the
// Scheduler.
func TestHooksMayCallScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s *Scheduler
		var infos atomic.Int32
		s, err := New(Options{Hooks: Hooks{
			OnStart: func(e Event) {
				if _, ok := s.Info(e.ID); ok {
					infos.Add(1)
				}
			},
			OnFinish: func(e Event) {
				if e.ID == "a" {
					_ = s.Add("b", After(time.Second), noop)
				}
			},
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer shutdown(t, s)
		mustAdd(t, s, "a", After(time.Second), noop)
		time.Sleep(time.Minute)
		synctest.Wait()
		if infos.Load() != 2 || s.Stats().Succeeded != 2 {
			t.Fatalf("Info seen %d times, %d succeeded; want 2 and 2", infos.Load(), s.Stats().Succeeded)
		}
	})
}

// TestRunCountSaturates: the occurrence count of a job without Limit stops
// at 2^31-1 instead of wrapping negative, and the job goes on.
func TestRunCountSaturates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		mustAdd(t, s, "j", Every(time.Second), noop)
		j := s.jobs.get("j")
		j.mu.Lock()
		j.runs = math.MaxInt32 - 1
		j.mu.Unlock()
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		info, ok := s.Info("j")
		if !ok || info.Runs != math.MaxInt32 || len(r.finished()) != 3 {
			t.Fatalf("Info %+v, %v after %d runs; want Runs %d and 3 runs", info, ok, len(r.finished()), math.MaxInt32)
		}
	})
}

// TestRetryAttemptsAboveInt32: Retry.Attempts above 2^31-1 counts as
// 2^31-1, so the attempt counter never wraps negative: the occurrence's
// attempt 2^31-1 is its last, and it is dead-lettered.
func TestRetryAttemptsAboveInt32(t *testing.T) {
	if math.MaxInt == math.MaxInt32 {
		t.Skip("int is 32 bits: Attempts cannot exceed 2^31-1")
	}
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		mustAdd(t, s, "j", After(time.Hour), fail, JobOptions{Retry: Retry{Attempts: math.MaxInt}})
		j := s.jobs.get("j")
		// Start the occurrence's attempt 2^31-1 at once, as if the earlier
		// ones had failed.
		now := time.Now()
		j.mu.Lock()
		j.active++
		j.mu.Unlock()
		s.exec(task{j: j, gen: j.gen, attempt: math.MaxInt32, due: now, first: now}, new(execution))
		time.Sleep(time.Minute)
		synctest.Wait()
		var attempts []int
		for _, e := range r.finished() {
			attempts = append(attempts, e.Attempt)
		}
		if want := []int{math.MaxInt32}; !slices.Equal(attempts, want) || len(r.letters()) != 1 {
			t.Fatalf("attempts %v and %d dead letters, want %v and 1", attempts, len(r.letters()), want)
		}
	})
}
