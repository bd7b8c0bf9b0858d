// Package jobs runs functions on schedules, in process: once after a delay
// or at a time, every period, or on a cron spec, with retries, timeouts,
// overlap control and a dead-letter callback, for very many jobs at once.
//
//	s, err := jobs.New(jobs.Options{
//		Defaults: jobs.JobOptions{
//			Retry:      jobs.Retry{Attempts: 5, Base: time.Second, Jitter: 0.2},
//			Timeout:    time.Minute,
//			DeadLetter: func(d jobs.DeadLetter) { alert(d.ID, d.Attempts, d.Err) },
//		},
//	})
//	...
//	defer s.Shutdown(ctx)
//	s.Add("order:42", jobs.After(15*time.Minute), cancelUnpaid)  // once
//	s.Add("sync", jobs.Every(time.Minute), syncAll)               // periodic
//	nightly, err := jobs.Cron("CRON_TZ=Europe/Berlin 0 30 2 * * *")
//	s.Add("report", nightly, buildReport, jobs.JobOptions{Name: "nightly report"})
//	s.Cancel("order:42") // paid: it never runs, and a running attempt is cancelled
//
// # Model
//
// A job is an ID, a [Schedule] and a [Func]. Each time the schedule comes
// due an occurrence starts: its first attempt runs, and each failed
// attempt is retried after a backoff (see [Retry]) until one succeeds, the
// attempts are used up, or the error is [Permanent]; an occurrence that
// fails for good goes to the dead-letter callback once. The job's overlap
// policy says what happens when an occurrence comes due while an earlier
// one is still active: skip it (the default), queue one, or allow both. A
// job ends when its schedule has no more occurrences (After, At), when
// Limit occurrences have started, or by Cancel; Replace swaps it.
//
// One timing wheel drives every job: each job embeds one wheel timer, so a
// pending job costs about 144 bytes and no goroutine or runtime timer. Due
// attempts go to a bounded queue served by up to Options.Workers worker
// goroutines, started on demand. The wheel's goroutine never runs a Func,
// a hook or a callback (a custom Schedule's Next aside). How it works is in
// doc/design/jobs.md.
//
// # Guarantees
//
//   - Never early, at most a Resolution late (1ms by default), plus
//     scheduling latency and the wait for a free worker. Run.Scheduled is
//     the exact due time and Event.Lateness the start's delay after it.
//   - Two clocks. After and Every count on the monotonic clock: a
//     wall-clock step does not move them, and Every's k-th occurrence is
//     due exactly k periods after Add, never drifting. At, Cron and custom
//     schedules are read on the wall clock, in Options.Location unless the
//     spec names its zone: a wall-clock step of more than a second (NTP, a
//     suspended machine) is noticed within a second and re-arms them, and
//     no such job runs before the wall clock reads its time.
//   - Missed occurrences collapse. Occurrences that come due while an
//     earlier one is active follow the overlap policy; occurrences missed
//     altogether (a stalled process, a machine asleep) run once, not once
//     each.
//   - Late, never lost. When the queue of due attempts is full
//     (Options.Queue), a due attempt waits in the wheel and is offered
//     again on every tick until there is room; only Trigger fails fast,
//     with ErrFull.
//   - Cancel is final. After Cancel or Replace returns, the old job starts
//     no attempt and retries nothing, and the contexts of its running
//     attempts are cancelled with the cause ErrCanceled; an attempt that
//     fails after that is reported Canceled, not dead-lettered.
//   - Panics in a Func are recovered, as a [*timingwheel.PanicError] with
//     the stack, and retried like errors. Panics in hooks are recovered
//     and logged.
//   - Clean shutdown. Shutdown stops firing, drops the runs not yet
//     started (queued, armed retries, waiting ones), each counted and
//     reported to OnSkip, waits for running attempts (cancelling them
//     when its context ends) and returns once every goroutine of the
//     Scheduler has exited.
//   - Everything works inside a testing/synctest bubble.
//
// # Observing
//
// [Hooks] report each attempt's start and finish (outcome, error, lateness,
// duration), skipped occurrences and cancelled jobs; Options.Middleware
// wraps every Func, for logging, metrics or tracing; [Scheduler.Stats]
// counts outcomes, skips, deferrals and queue depth and keeps histograms
// of lateness and run time; [Scheduler.Info]
// describes one job. [LogRuns] is a ready-made OnFinish hook that writes
// one log/slog record per finished attempt.
package jobs
