package ttlprom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// NewJobsCollector returns a collector of s's counters, labelled
// scheduler=name:
//
//	ttlkit_jobs_scheduled{scheduler}                  gauge: jobs scheduled
//	ttlkit_jobs_queued_runs{scheduler}                gauge: due runs waiting for a worker
//	ttlkit_jobs_running_runs{scheduler}               gauge: attempts running
//	ttlkit_jobs_added_total{scheduler}                counter
//	ttlkit_jobs_canceled_total{scheduler}             counter
//	ttlkit_jobs_runs_total{scheduler,outcome="succeeded"|"retrying"|"failed"|"canceled"}  counter
//	ttlkit_jobs_dead_letters_total{scheduler}         counter
//	ttlkit_jobs_skipped_total{scheduler}              counter
//	ttlkit_jobs_deferred_total{scheduler}             counter
//	ttlkit_jobs_dropped_total{scheduler}              counter
//	ttlkit_jobs_clock_steps_total{scheduler}          counter
//	ttlkit_jobs_lateness_seconds{scheduler}           histogram: how late attempts started
//	ttlkit_jobs_run_seconds{scheduler}                histogram: how long attempts ran
//
// Both histograms have the buckets timingwheel.DurationBounds.
//
// It reads s.Stats when scraped (O(1)).
func NewJobsCollector(name string, s *jobs.Scheduler) prometheus.Collector {
	l := prometheus.Labels{"scheduler": name}
	c := newCollector(s.Stats)
	gauge := func(name, help string, v func(jobs.Stats) int) {
		c.one(name, help, prometheus.GaugeValue, l, func(s jobs.Stats) float64 { return float64(v(s)) })
	}
	counter := func(name, help string, v func(jobs.Stats) uint64) {
		c.one(name, help, prometheus.CounterValue, l, func(s jobs.Stats) float64 { return float64(v(s)) })
	}
	gauge("ttlkit_jobs_scheduled", "Jobs scheduled.", func(s jobs.Stats) int { return s.Jobs })
	gauge("ttlkit_jobs_queued_runs", "Due runs waiting for a worker.", func(s jobs.Stats) int { return s.Queued })
	gauge("ttlkit_jobs_running_runs", "Attempts running.", func(s jobs.Stats) int { return s.Running })
	counter("ttlkit_jobs_added_total", "Jobs added by Add and Replace.", func(s jobs.Stats) uint64 { return s.Added })
	counter("ttlkit_jobs_canceled_total", "Jobs ended by Cancel or Replace.", func(s jobs.Stats) uint64 { return s.Canceled })
	c.family("ttlkit_jobs_runs_total", "Finished attempts, by outcome.",
		prometheus.CounterValue, l, "outcome",
		series[jobs.Stats]{jobs.Succeeded.String(), func(s jobs.Stats) float64 { return float64(s.Succeeded) }},
		series[jobs.Stats]{jobs.Retrying.String(), func(s jobs.Stats) float64 { return float64(s.Retried) }},
		series[jobs.Stats]{jobs.Failed.String(), func(s jobs.Stats) float64 { return float64(s.Failed) }},
		series[jobs.Stats]{jobs.Canceled.String(), func(s jobs.Stats) float64 { return float64(s.Interrupted) }})
	counter("ttlkit_jobs_dead_letters_total", "Occurrences that failed for good.", func(s jobs.Stats) uint64 { return s.DeadLetters })
	counter("ttlkit_jobs_skipped_total", "Occurrences dropped by the overlap policy.", func(s jobs.Stats) uint64 { return s.Skipped })
	counter("ttlkit_jobs_deferred_total", "Times a due run found the queue full and waited a tick.", func(s jobs.Stats) uint64 { return s.Deferred })
	counter("ttlkit_jobs_dropped_total", "Runs never started because Shutdown began (queued, armed retries, waiting).", func(s jobs.Stats) uint64 { return s.Dropped })
	counter("ttlkit_jobs_clock_steps_total", "Wall-clock steps detected.", func(s jobs.Stats) uint64 { return s.ClockSteps })
	histogram := func(name, help string, v func(*jobs.Stats) *timingwheel.Durations) {
		c.histogram(name, help, l, func(s jobs.Stats) (uint64, float64, map[float64]uint64) {
			d := v(&s)
			return durations(d.Count, d.Sum, d.Buckets[:], timingwheel.DurationBounds[:])
		})
	}
	histogram("ttlkit_jobs_lateness_seconds", "How late attempts started (after their due time), counted at start.",
		func(s *jobs.Stats) *timingwheel.Durations { return &s.Lateness })
	histogram("ttlkit_jobs_run_seconds", "How long finished attempts ran, whatever their outcome.",
		func(s *jobs.Stats) *timingwheel.Durations { return &s.RunTime })
	return c
}
