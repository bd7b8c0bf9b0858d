package jobs

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// statsScenario runs, on one worker, three jobs whose runs overlap their
// successors' due times, and checks Stats while the first runs and at the
// end. Due at 1s, 1.5s and 3.001s, they run for 2s, 5ms and 20s (the last
// fails), so they start 0, 1.5s and 4ms late.
func statsScenario(t *testing.T, check func(mid, end Stats)) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newScheduler(t, Options{Workers: 1})
		defer shutdown(t, s)
		start := time.Now()
		sleeper := func(d time.Duration, err error) Func {
			return func(context.Context, Run) error {
				time.Sleep(d)
				return err
			}
		}
		mustAdd(t, s, "a", At(start.Add(time.Second)), sleeper(2*time.Second, nil))
		mustAdd(t, s, "b", At(start.Add(1500*time.Millisecond)), sleeper(5*time.Millisecond, nil))
		mustAdd(t, s, "c", At(start.Add(3001*time.Millisecond)), sleeper(20*time.Second, errors.New("boom")))
		time.Sleep(2 * time.Second) // a runs; b waits for the worker
		synctest.Wait()
		mid := s.Stats()
		time.Sleep(time.Minute)
		synctest.Wait()
		check(mid, s.Stats())
	})
}

// TestStatsLateness: Lateness counts each attempt when it starts, by how
// late it started.
func TestStatsLateness(t *testing.T) {
	statsScenario(t, func(mid, end Stats) {
		if want := (timingwheel.Durations{Count: 1, Buckets: [7]uint64{1}}); mid.Lateness != want {
			t.Errorf("while a runs: Lateness = %+v, want %+v", mid.Lateness, want)
		}
		want := timingwheel.Durations{
			Count:   3,
			Sum:     1500*time.Millisecond + 4*time.Millisecond,
			Max:     1500 * time.Millisecond,
			Buckets: [7]uint64{1, 0, 1, 0, 0, 1, 0}, // 0, 4ms (<= 10ms), 1.5s (<= 10s)
		}
		if end.Lateness != want {
			t.Errorf("at the end: Lateness = %+v, want %+v", end.Lateness, want)
		}
	})
}

// TestStatsRunTime: RunTime counts each attempt when it finishes, whatever
// its outcome, by how long it ran.
func TestStatsRunTime(t *testing.T) {
	statsScenario(t, func(mid, end Stats) {
		if mid.RunTime != (timingwheel.Durations{}) || mid.Running != 1 {
			t.Errorf("while a runs: RunTime = %+v, Running %d; want none finished, 1 running", mid.RunTime, mid.Running)
		}
		want := timingwheel.Durations{
			Count:   3,
			Sum:     22*time.Second + 5*time.Millisecond,
			Max:     20 * time.Second,
			Buckets: [7]uint64{0, 0, 1, 0, 0, 1, 1}, // 5ms (<= 10ms), 2s (<= 10s), 20s (beyond)
		}
		if end.RunTime != want {
			t.Errorf("at the end: RunTime = %+v, want %+v", end.RunTime, want)
		}
		if n := end.Succeeded + end.Retried + end.Failed + end.Interrupted; n != end.RunTime.Count || end.Failed != 1 {
			t.Errorf("outcomes add up to %d (%d failed), RunTime.Count %d; want equal, 1 failed", n, end.Failed, end.RunTime.Count)
		}
	})
}
