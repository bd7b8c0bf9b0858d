package ttlprom_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
	ttlprom "github.com/ttlkit/ttlkit/prometheus"
)

func TestJobsCollector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := jobs.New(jobs.Options{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown(context.Background())
		ok := func(context.Context, jobs.Run) error { time.Sleep(50 * time.Millisecond); return nil }
		bad := func(context.Context, jobs.Run) error { time.Sleep(2 * time.Second); return errors.New("down") }
		must(t, s.Add("ok", jobs.After(time.Second), ok))
		// bad's first attempt waits 40ms for ok's to end on the one worker.
		must(t, s.Add("bad", jobs.After(time.Second+10*time.Millisecond), bad, jobs.JobOptions{Retry: jobs.Retry{Attempts: 2, Base: time.Second}}))
		must(t, s.Add("later", jobs.Every(time.Hour), ok))
		must(t, s.Add("gone", jobs.Every(time.Hour), ok))
		s.Cancel("gone")
		time.Sleep(time.Minute) // ok succeeds; bad fails, retries, fails for good
		synctest.Wait()
		check(t, ttlprom.NewJobsCollector("orders", s), `
# HELP ttlkit_jobs_added_total Jobs added by Add and Replace.
# TYPE ttlkit_jobs_added_total counter
ttlkit_jobs_added_total{scheduler="orders"} 4
# HELP ttlkit_jobs_canceled_total Jobs ended by Cancel or Replace.
# TYPE ttlkit_jobs_canceled_total counter
ttlkit_jobs_canceled_total{scheduler="orders"} 1
# HELP ttlkit_jobs_clock_steps_total Wall-clock steps detected.
# TYPE ttlkit_jobs_clock_steps_total counter
ttlkit_jobs_clock_steps_total{scheduler="orders"} 0
# HELP ttlkit_jobs_dead_letters_total Occurrences that failed for good.
# TYPE ttlkit_jobs_dead_letters_total counter
ttlkit_jobs_dead_letters_total{scheduler="orders"} 1
# HELP ttlkit_jobs_deferred_total Times a due run found the queue full and waited a tick.
# TYPE ttlkit_jobs_deferred_total counter
ttlkit_jobs_deferred_total{scheduler="orders"} 0
# HELP ttlkit_jobs_dropped_total Runs never started because Shutdown began (queued, armed retries, waiting).
# TYPE ttlkit_jobs_dropped_total counter
ttlkit_jobs_dropped_total{scheduler="orders"} 0
# HELP ttlkit_jobs_lateness_seconds How late attempts started (after their due time), counted at start.
# TYPE ttlkit_jobs_lateness_seconds histogram
ttlkit_jobs_lateness_seconds_bucket{scheduler="orders",le="0.0001"} 2
ttlkit_jobs_lateness_seconds_bucket{scheduler="orders",le="0.001"} 2
ttlkit_jobs_lateness_seconds_bucket{scheduler="orders",le="0.01"} 2
ttlkit_jobs_lateness_seconds_bucket{scheduler="orders",le="0.1"} 3
ttlkit_jobs_lateness_seconds_bucket{scheduler="orders",le="1"} 3
ttlkit_jobs_lateness_seconds_bucket{scheduler="orders",le="10"} 3
ttlkit_jobs_lateness_seconds_bucket{scheduler="orders",le="+Inf"} 3
ttlkit_jobs_lateness_seconds_sum{scheduler="orders"} 0.04
ttlkit_jobs_lateness_seconds_count{scheduler="orders"} 3
# HELP ttlkit_jobs_queued_runs Due runs waiting for a worker.
# TYPE ttlkit_jobs_queued_runs gauge
ttlkit_jobs_queued_runs{scheduler="orders"} 0
# HELP ttlkit_jobs_run_seconds How long finished attempts ran, whatever their outcome.
# TYPE ttlkit_jobs_run_seconds histogram
ttlkit_jobs_run_seconds_bucket{scheduler="orders",le="0.0001"} 0
ttlkit_jobs_run_seconds_bucket{scheduler="orders",le="0.001"} 0
ttlkit_jobs_run_seconds_bucket{scheduler="orders",le="0.01"} 0
ttlkit_jobs_run_seconds_bucket{scheduler="orders",le="0.1"} 1
ttlkit_jobs_run_seconds_bucket{scheduler="orders",le="1"} 1
ttlkit_jobs_run_seconds_bucket{scheduler="orders",le="10"} 3
ttlkit_jobs_run_seconds_bucket{scheduler="orders",le="+Inf"} 3
ttlkit_jobs_run_seconds_sum{scheduler="orders"} 4.05
ttlkit_jobs_run_seconds_count{scheduler="orders"} 3
# HELP ttlkit_jobs_running_runs Attempts running.
# TYPE ttlkit_jobs_running_runs gauge
ttlkit_jobs_running_runs{scheduler="orders"} 0
# HELP ttlkit_jobs_runs_total Finished attempts, by outcome.
# TYPE ttlkit_jobs_runs_total counter
ttlkit_jobs_runs_total{outcome="canceled",scheduler="orders"} 0
ttlkit_jobs_runs_total{outcome="failed",scheduler="orders"} 1
ttlkit_jobs_runs_total{outcome="retrying",scheduler="orders"} 1
ttlkit_jobs_runs_total{outcome="succeeded",scheduler="orders"} 1
# HELP ttlkit_jobs_scheduled Jobs scheduled.
# TYPE ttlkit_jobs_scheduled gauge
ttlkit_jobs_scheduled{scheduler="orders"} 1
# HELP ttlkit_jobs_skipped_total Occurrences dropped by the overlap policy.
# TYPE ttlkit_jobs_skipped_total counter
ttlkit_jobs_skipped_total{scheduler="orders"} 0
`)
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
