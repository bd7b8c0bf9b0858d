// Package natsjobs keeps jobs on NATS JetStream, so that they survive
// restarts and crashes and spread over many worker processes: enqueue a
// job to run now, at a time, after a delay or on a cron spec; any number
// of workers in any number of processes share each queue, and one of them
// runs each job.
//
//	c, err := natsjobs.Open(ctx, natsjobs.Config{
//		// nats-server in this process (package natsjobs/embedded), data kept here
//		Server: embedded.Server{StoreDir: "/var/lib/shop/jobs"},
//		Queues: []string{"orders"},
//	})
//	...
//	defer c.Close()
//
//	// Cancel the order if it is still unpaid in 15 minutes.
//	c.EnqueueAfter(ctx, natsjobs.Job{Queue: "orders", ID: "unpaid-1042", Payload: order}, 15*time.Minute)
//	c.Cancel(ctx, "orders", "unpaid-1042") // paid in time
//
//	// Every night at 02:30 Berlin time, once across all instances.
//	c.EnqueueCron(ctx, natsjobs.Job{Queue: "orders", ID: "nightly-report"}, "30 2 * * *", berlin)
//
//	// Run them, four at a time, until ctx ends; failures are retried.
//	err = c.Work(ctx, "orders", func(ctx context.Context, r natsjobs.Run) error {
//		return cancelOrder(ctx, r.ID, r.Payload)
//	}, natsjobs.WorkOptions{Concurrency: 4, Retry: jobs.Retry{Attempts: 5, Base: time.Second}})
//
// # Two ways to deploy
//
// Embedded (the default, Config.Server: embedded.Server{StoreDir: dir}):
// nats-server runs inside the process and stores the jobs in StoreDir; no
// port is opened unless embedded.Server.Listen asks for one, so that other
// processes (more workers) can connect with Config.URL. One binary,
// nothing to install. A port beyond loopback requires credentials
// (embedded.Server's Token, User and Password, or NKeySeed), which every
// client, this process's included, then presents; embedded.Server.TLS
// adds TLS to it. The server lives in package natsjobs/embedded, and
// this package does not import it, so that a worker process that
// connects by URL links no nats-server (under half the binary's size);
// it is a Config field rather than a side effect of a blank import, so
// that a program that needs it and forgot it does not compile.
//
// External (Config.URL): connect to a NATS server or cluster, 2.14 or
// newer, with JetStream enabled. Config.Replicas = 3 keeps every queue
// (its jobs, dead letters and consumers) on three servers, so it survives
// the loss of one: work goes on through the other two, and nothing stored
// is lost.
//
// # Guarantees
//
//   - Durable: Enqueue returns once the server stored the job. Jobs wait on
//     the server, not in the client: a crash of any client or worker loses
//     nothing, and a restarted embedded server finds every pending job.
//   - Idempotent by ID: enqueueing an ID that the queue holds replaces
//     the job (its payload, headers and time) by default; Job.Unique = Keep
//     keeps the existing job instead (ErrExists) and Refuse fails
//     (ErrConflict), checked and stored in one step on the server. Cancel
//     removes a job, with its retries.
//   - Cancel is final: once Cancel returned true, or an enqueue that
//     replaced the job returned, the withdrawn copy never starts, on any
//     worker of any process, wherever it was: waiting on the server, held
//     in a worker until due, taken by a runner, waiting for a retry, a
//     cron activation, fired by the server as Cancel removed its schedule.
//     A run starts only after the server confirmed that its message is
//     still stored and, for a copy fired from a schedule, that the
//     schedule's generation was not cancelled (one round trip);
//     cancelling or replacing removes the message and marks the
//     generation of the schedule it withdraws. Each enqueue's messages
//     have subjects of their own, so a copy fired as its schedule was
//     replaced cannot displace the replacement. A run the server
//     confirmed before the Cancel keeps running, and no cron activation
//     re-arms the job after Cancel.
//   - One of N: each delivery goes to exactly one worker of the queue,
//     which asks for one only when a handler is free, so a busy worker
//     holds no job another could run. A job runs twice only if a worker died (or lost the server) while
//     running it, before its success was stored: handlers should be
//     idempotent. A success the server confirmed is never run again, and
//     a job is confirmed (OnFinish: Succeeded) once even when it ran twice.
//   - Never early: a job runs at or after its time. The server hands it to
//     a worker up to a second ahead, and the worker holds it in a timing
//     wheel until it is due, for millisecond precision.
//   - Retries and dead letters: a failed run is retried with the
//     package jobs retry policy; after the last attempt, or at once for
//     jobs.Permanent errors, the job goes to the queue's dead letters
//     exactly once, with its attempts and last error. A job whose worker
//     dies every time is dead-lettered too. DeadLetters lists them,
//     Redrive runs one again.
//   - Cron jobs run once per activation, however many instances run,
//     with no leader election: the server fires each activation, and the
//     worker that gets it stores the next one before running it.
//     Activations follow package jobs' rules, daylight-saving changes
//     included (they are computed with jobs/cron, not by the server,
//     whose cron runs a repeated fixed time twice): a fixed time that a
//     change skips does not run that day, one that it repeats runs once,
//     wildcard and stepped fields fire at every real instant that
//     matches.
//   - Outages: while the server is unreachable every call fails at once
//     with ErrUnavailable; workers reconnect and resume by themselves.
//   - Shutdowns end: when Work's ctx ends it stops taking jobs, gives
//     running handlers WorkOptions.Grace, then cancels their ctx (cause
//     ErrShutdown), and returns within Grace + 2 × Config.Timeout (3 ×
//     with a stalled server), even if a handler ignores its ctx. Every
//     job it did not finish goes back to the queue, without counting as
//     a failed attempt.
//
// # Operations
//
// List pages through a queue's jobs by State (scheduled, pending,
// running, dead) with an ID prefix; Get shows one (payload, headers,
// attempts, last error, next run); Pause and Resume stop and restart a
// queue's workers everywhere, across restarts; Purge empties a queue;
// RedriveDead and DeleteDead act on dead letters in bulk; QueueStats
// counts and Rates turns two counts into rates. A Client opened with URL
// and no Queues administers every queue on the server. The natsjobs
// command (cmd/natsjobs) and the web console (package console) are built
// on these calls.
//
// Jobs are identified by Queue and ID; IDs are subject tokens (no '.',
// '*', '>' or spaces). How it works is in doc/design/natsjobs.md.
//
// # Upgrading
//
// Versions before this one stored a job on one subject per state
// (natsjobs.<q>.s.<id>, natsjobs.<q>.r.<id>); this one adds the enqueue's
// generation (natsjobs.<q>.s.<id>.<gen>). Open moves every job of its
// Config.Queues stored the old way to the new subjects, with its payload,
// headers, time, cron spec and stored count of failed attempts, then
// deletes the old message: nothing is lost, and the jobs can be cancelled
// and replaced as any other. Stop the processes of the earlier version
// before starting this one: they would go on storing the old way (moved
// only at the next Open) and would run new jobs under wrong IDs. A job
// moved while another process of this version starts it, or fired by its
// schedule while it is moved, may run twice.
package natsjobs
