// Package ttlotel traces and measures ttlkit's jobs with OpenTelemetry.
//
//	tel, err := ttlotel.NewJobs(ttlotel.Config{Scheduler: "orders"}) // global providers
//	...
//	s, err := jobs.New(tel.Instrument(jobs.Options{Workers: 16}))
//
// Each attempt of a job gets one span, started when the attempt starts
// and ended when it finishes. The Func's ctx carries it, so spans the Func
// starts are its children. Its name is the job's Name ("job" when the job
// has none) and its attributes are:
//
//	ttlkit.job.id        the job's ID
//	ttlkit.job.attempt   1 for the first attempt of an occurrence
//	ttlkit.job.lateness  seconds between the due time and the start
//	ttlkit.job.outcome   succeeded, retrying, failed or canceled
//	ttlkit.scheduler     Config.Scheduler, when set
//
// A failed attempt records its error (an exception event) and sets the
// span's status to Error. The instruments, with ttlkit.scheduler when set:
//
//	ttlkit.jobs.runs          counter {run}, by ttlkit.job.outcome
//	ttlkit.jobs.run.duration  histogram, seconds, by ttlkit.job.outcome
//	ttlkit.jobs.run.lateness  histogram, seconds
//
// Nothing is sampled or exported here: the providers decide.
//
// This is a module of its own (github.com/ttlkit/ttlkit/otel), so that
// the core module keeps to the standard library.
//
// How it is built, and why: doc/design/exporters.md.
package ttlotel
