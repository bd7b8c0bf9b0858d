package jobs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/jobs/cron"
)

// TestAfterRunsOnceOnTime: After(d) runs once, d after Add, and the job is
// gone once its run ends.
func TestAfterRunsOnceOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		start := time.Now()
		mustAdd(t, s, "a", After(5*time.Second), noop)
		if info, ok := s.Info("a"); !ok || !info.Next.Equal(start.Add(5*time.Second)) {
			t.Fatalf("Info = %+v, %v; want Next %v", info, ok, start.Add(5*time.Second))
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		got := offsets(start, startTimes(r.finished()))
		if want := []time.Duration{5 * time.Second}; !slices.Equal(got, want) {
			t.Fatalf("runs at %v, want %v", got, want)
		}
		if _, ok := s.Info("a"); ok || s.Len() != 0 {
			t.Fatalf("job still there after its only run: Len %d", s.Len())
		}
	})
}

// TestAtPastRunsAtOnce: At a time already passed runs on the next tick; At
// a future time runs then.
func TestAtPastRunsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		start := time.Now()
		mustAdd(t, s, "past", At(start.Add(-time.Hour)), noop)
		mustAdd(t, s, "future", At(start.Add(90*time.Second)), noop)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		got := map[string]time.Duration{}
		for _, e := range r.finished() {
			got[e.ID] = e.Started.Sub(start)
		}
		want := map[string]time.Duration{"past": time.Millisecond, "future": 90 * time.Second}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("runs at %v, want %v", got, want)
		}
	})
}

// TestEveryDoesNotDrift: occurrence k of Every(d) is due exactly k×d
// after Add and starts within one Resolution of it, over 10k periods of a
// d that is not a whole number of ticks.
func TestEveryDoesNotDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer shutdown(t, s)
		const n = 10_000
		d := 1234567 * time.Microsecond
		start := time.Now()
		var runs []Run
		done := make(chan struct{})
		mustAdd(t, s, "tick", Every(d), func(_ context.Context, r Run) error {
			runs = append(runs, r)
			if len(runs) == n {
				close(done)
			}
			return nil
		}, JobOptions{Limit: n})
		<-done
		for k, r := range runs {
			due := start.Add(time.Duration(k+1) * d)
			if !r.Scheduled.Equal(due) {
				t.Fatalf("run %d scheduled at %v, want %v", k+1, r.Scheduled.Sub(start), due.Sub(start))
			}
			if late := r.Started.Sub(due); late < 0 || late >= time.Millisecond {
				t.Fatalf("run %d started %v after its due time, want [0, 1ms)", k+1, late)
			}
		}
	})
}

// TestEveryMissedCollapse: occurrences that come due while a run takes
// long are skipped (OverlapSkip) and the schedule resumes on its grid.
func TestEveryMissedCollapse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		start := time.Now()
		var calls atomic.Int32
		mustAdd(t, s, "slow", Every(time.Second), func(ctx context.Context, _ Run) error {
			if calls.Add(1) == 1 {
				time.Sleep(3500 * time.Millisecond) // over occurrences 2, 3 and 4
			}
			return nil
		})
		time.Sleep(5500 * time.Millisecond)
		synctest.Wait()
		got := offsets(start, startTimes(r.finished()))
		want := []time.Duration{time.Second, 5 * time.Second}
		if !slices.Equal(got, want) {
			t.Fatalf("runs at %v, want %v", got, want)
		}
		var skipped []time.Duration
		for _, e := range r.skipped() {
			skipped = append(skipped, e.Scheduled.Sub(start))
		}
		// One OnSkip report may stand for several skips; Stats counts each.
		if len(skipped) == 0 || skipped[0] != 2*time.Second {
			t.Fatalf("OnSkip reports %v, want the first at 2s", skipped)
		}
		if st := s.Stats(); st.Skipped != 3 {
			t.Fatalf("Stats.Skipped = %d, want 3", st.Skipped)
		}
	})
}

// TestCronInOptionsLocation: a spec without a zone is read in
// Options.Location; one with CRON_TZ= in its own zone.
func TestCronInOptionsLocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		plus2 := time.FixedZone("plus2", 2*3600)
		s, r := newScheduler(t, Options{Location: plus2})
		defer shutdown(t, s)
		start := time.Now() // 2000-01-01 00:00 UTC in a bubble
		for id, spec := range map[string]string{
			"local": "0 5 2 * * *",             // 02:05 at +2: 00:05 UTC
			"utc":   "CRON_TZ=UTC 0 7 0 * * *", // 00:07 UTC
		} {
			c, err := Cron(spec)
			if err != nil {
				t.Fatalf("Cron(%q): %v", spec, err)
			}
			mustAdd(t, s, id, c, noop, JobOptions{Limit: 1})
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		got := map[string]time.Duration{}
		for _, e := range r.finished() {
			got[e.ID] = e.Started.Sub(start)
		}
		want := map[string]time.Duration{"local": 5 * time.Minute, "utc": 7 * time.Minute}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("runs at %v, want %v", got, want)
		}
	})
}

// TestCronBadSpec: Cron's error wraps cron.ErrSyntax and names the field.
func TestCronBadSpec(t *testing.T) {
	_, err := Cron("0 0 30 2 *")
	if !errors.Is(err, cron.ErrSyntax) {
		t.Fatalf("Cron(30 February) error = %v, want cron.ErrSyntax", err)
	}
	_, err = Cron("* * * * * * 2030")
	var se *cron.SyntaxError
	if !errors.As(err, &se) || se.Field == "" {
		t.Fatalf("Cron(year field) error = %v, want a *cron.SyntaxError naming the field", err)
	}
}

// TestCustomSchedule: a custom Schedule is called with the occurrence (or
// now) and read on the wall clock; a zero Next ends the job.
func TestCustomSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		start := time.Now()
		// Three occurrences, 10s apart, then none.
		sched := scheduleFunc(func(after time.Time) time.Time {
			n := after.Sub(start)/(10*time.Second) + 1
			if n > 3 {
				return time.Time{}
			}
			return start.Add(n * 10 * time.Second)
		})
		mustAdd(t, s, "c", sched, noop)
		time.Sleep(time.Minute)
		synctest.Wait()
		got := offsets(start, startTimes(r.finished()))
		want := []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second}
		if !slices.Equal(got, want) {
			t.Fatalf("runs at %v, want %v", got, want)
		}
		if s.Len() != 0 {
			t.Fatalf("Len = %d after the schedule ended, want 0", s.Len())
		}
	})
}

// TestCustomScheduleNotAdvancing: a custom Schedule whose Next returns
// its argument, or a time before it, breaks the contract; the job runs its
// first occurrence and ends instead of running on every tick.
func TestCustomScheduleNotAdvancing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		start := time.Now()
		first := start.Add(time.Second).Round(0)
		same := scheduleFunc(func(after time.Time) time.Time {
			if after.Before(first) {
				return first
			}
			return after
		})
		back := scheduleFunc(func(after time.Time) time.Time {
			if after.Before(first) {
				return first
			}
			return after.Add(-time.Hour)
		})
		mustAdd(t, s, "same", same, noop)
		mustAdd(t, s, "back", back, noop, JobOptions{FromCompletion: true})
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := len(r.finished()); got != 2 {
			t.Fatalf("%d runs in 10s, want 2 (one per job)", got)
		}
		if s.Len() != 0 {
			t.Fatalf("Len = %d, want 0: both jobs have no further occurrence", s.Len())
		}
	})
}

type scheduleFunc func(time.Time) time.Time

func (f scheduleFunc) Next(t time.Time) time.Time { return f(t) }

// TestWallClockStepBackNeverEarly: a wall-clock job whose wall clock is
// stepped back an hour runs when the wall clock reads its time, an hour
// later on the monotonic clock, never before: whether the step is seen by
// the watcher first (5s before the job is due) or by the job's own firing
// (half a second before: the watcher's next look comes with the firing).
func TestWallClockStepBackNeverEarly(t *testing.T) {
	for _, before := range []time.Duration{5 * time.Second, 500 * time.Millisecond} {
		t.Run(fmt.Sprint(before, " before"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, r := newScheduler(t, Options{})
				var offset atomic.Int64
				s.clock.offset = func() time.Duration { return time.Duration(offset.Load()) }
				defer shutdown(t, s)
				start := time.Now()
				target := start.Add(10 * time.Second)
				mustAdd(t, s, "at", At(target), noop)
				time.Sleep(10*time.Second - before)
				offset.Store(int64(-time.Hour))
				time.Sleep(2 * time.Hour)
				synctest.Wait()
				ends := r.finished()
				if len(ends) != 1 {
					t.Fatalf("%d runs, want 1", len(ends))
				}
				wallAtStart := ends[0].Started.Add(-time.Hour)
				if wallAtStart.Before(target) {
					t.Fatalf("ran when the wall clock read %v, before its time %v", wallAtStart.Sub(start), target.Sub(start))
				}
				if got, want := ends[0].Started.Sub(start), time.Hour+10*time.Second; got != want {
					t.Fatalf("ran at %v on the monotonic clock, want %v", got, want)
				}
			})
		})
	}
}

// TestWallClockStepForwardRearms: a wall-clock step forward of 50 minutes
// is noticed within a second, and a job due at 1h (wall) runs at 10m on
// the monotonic clock, when the wall clock reads 1h, instead of 50 minutes
// late.
func TestWallClockStepForwardRearms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		var offset atomic.Int64
		s.clock.offset = func() time.Duration { return time.Duration(offset.Load()) }
		defer shutdown(t, s)
		start := time.Now()
		c, err := Cron("CRON_TZ=UTC 0 0 1 * * *") // 01:00:00 UTC daily: 1h after start
		if err != nil {
			t.Fatal(err)
		}
		mustAdd(t, s, "cron", c, noop, JobOptions{Limit: 1})
		mustAdd(t, s, "mono", After(time.Hour), noop)
		time.Sleep(10 * time.Second)
		offset.Store(int64(50 * time.Minute))
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		got := map[string]time.Duration{}
		for _, e := range r.finished() {
			got[e.ID] = e.Started.Sub(start)
		}
		// The monotonic job ignores the wall clock.
		want := map[string]time.Duration{"cron": 10 * time.Minute, "mono": time.Hour}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("runs at %v, want %v", got, want)
		}
		if st := s.Stats(); st.ClockSteps != 1 {
			t.Fatalf("Stats.ClockSteps = %d, want 1", st.ClockSteps)
		}
	})
}

// TestClockWatcherStopsWithoutWallJobs: the watcher runs only while
// wall-clock jobs exist, so an idle Scheduler does not wake every second.
func TestClockWatcherStopsWithoutWallJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newScheduler(t, Options{})
		defer shutdown(t, s)
		mustAdd(t, s, "at", At(time.Now().Add(time.Second)), noop)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		s.clock.mu.Lock()
		armed, n := s.clock.armed, s.clock.jobs
		s.clock.mu.Unlock()
		if armed || n != 0 {
			t.Fatalf("watcher armed %v with %d wall jobs, want disarmed with 0", armed, n)
		}
	})
}

// TestHugeDelaysNotCutShort pins issue 20 item 4: After and Every
// clamped their delay to about 97 years (maxDelay), so After(100 years)
// ran 2.6 years early, breaking "never early". Any positive Duration is
// honoured, past the wheel's own horizon (about 73 years) too.
func TestHugeDelaysNotCutShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, r := newScheduler(t, Options{})
		defer shutdown(t, s)
		const year = 365 * 24 * time.Hour
		start := time.Now()
		mustAdd(t, s, "after 100y", After(100*year), noop)
		mustAdd(t, s, "after 250y", After(250*year), noop)
		mustAdd(t, s, "every 100y", Every(100*year), noop)
		mustAdd(t, s, "after max", After(math.MaxInt64), noop)
		mustAdd(t, s, "every max", Every(math.MaxInt64), noop)
		time.Sleep(260 * year)
		synctest.Wait()
		got := map[string][]time.Duration{}
		for _, e := range r.finished() {
			got[e.ID] = append(got[e.ID], e.Started.Sub(start))
		}
		want := map[string][]time.Duration{
			"after 100y": {100 * year},
			"after 250y": {250 * year},
			"every 100y": {100 * year, 200 * year},
			"after max":  nil, // due after 292 years
			"every max":  nil,
		}
		for id, w := range want {
			g := got[id]
			if len(g) != len(w) {
				t.Errorf("%s: ran at %v, want %v", id, g, w)
				continue
			}
			for i := range w {
				if late := g[i] - w[i]; late < 0 || late > time.Millisecond {
					t.Errorf("%s: run %d at %v, want %v (never early, at most 1ms late)", id, i, g[i], w[i])
				}
			}
		}
	})
}
