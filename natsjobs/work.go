package natsjobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/ttlkit/ttlkit/internal/pool"
	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// Func is a job handler. It returns nil for success, an error to be
// retried under the Work call's Retry policy, or jobs.Permanent(err) to
// give up at once. ctx carries the values of Work's ctx; it is cancelled
// when the attempt's timeout passes (Job.Timeout, WorkOptions.Timeout:
// context.DeadlineExceeded) and when Work stopped and WorkOptions.Grace
// passed (cause ErrShutdown), not when Work's ctx ends. A panic is
// recovered as a *timingwheel.PanicError and retried like an error. A handler
// that calls runtime.Goexit has no outcome: its delivery is given back to
// the server at once, which redelivers it as the next attempt.
type Func func(ctx context.Context, r Run) error

// Run describes one attempt of a job, as handed to a Func: package jobs'
// Run (ID, Attempt, Scheduled, Started; Name is empty) plus the job's
// queue, payload and headers.
//
// Attempt counts deliveries that did not succeed, across retries and
// worker crashes: a run whose worker died counts as an attempt.
// Scheduled is the time given to EnqueueAt, the activation of a cron job,
// or when Enqueue stored the job (for a retry: when the retry was due).
type Run struct {
	jobs.Run
	Queue   string
	Payload []byte
	Header  map[string]string

	timeout time.Duration // Job.Timeout
	gen     string        // the job's generation (replace.go)
}

// WorkOptions tune a Work call. The zero value is usable.
type WorkOptions struct {
	// Concurrency is the number of jobs this call runs at once. Zero
	// means 1.
	Concurrency int
	// Retry is the retry policy, package jobs' type with its meaning,
	// except that the zero Retry means 5 attempts 1 s, 2 s, 4 s, 8 s apart
	// (±10 %) rather than none. The worker that receives a delivery
	// counts its attempts against its own Retry.Attempts. A panic in
	// Retry.If is logged and counts as false (the job is dead-lettered),
	// as in package jobs.
	Retry jobs.Retry
	// Hooks observe the runs: OnStart before each attempt, OnFinish after
	// the server confirmed its outcome: Succeeded, Retrying, Failed, or
	// Canceled for a failed run whose job was cancelled or replaced
	// meanwhile (neither retried nor dead-lettered). A run whose outcome
	// was lost with the connection is not reported: it is delivered
	// again, unless the server had stored the outcome before the
	// answer was lost (a cluster changing leader). A job that ran twice
	// because its first worker's claim lapsed (a cluster changing
	// leader, a stalled process) is reported Succeeded once, for the run
	// whose success was stored first; the other success is not reported.
	// Event.Name is empty; OnSkip and OnCancel
	// are not used. Hooks run on the worker goroutine that ran the job.
	// A run that Work's shutdown gave back (see Work) is not reported.
	Hooks jobs.Hooks
	// Timeout bounds each attempt: the handler's ctx is cancelled Timeout
	// after the attempt starts (context.DeadlineExceeded), and an error
	// it then returns fails the attempt like any other. Job.Timeout
	// overrides it per job. Zero means none; negative is an error.
	Timeout time.Duration
	// Grace is how long running handlers may go on once Work stopped
	// taking jobs (its ctx ended or the Client closed) before their ctx
	// is cancelled with the cause ErrShutdown. Zero means 10 s; negative
	// is an error.
	Grace time.Duration
	// Middleware wraps the handler, the first element outermost, as
	// jobs.Options.Middleware does; each wrapper is applied once, when
	// Work starts. A nil element is an error.
	Middleware []func(Func) Func
	// DeadLetter, if set, is called once per job stored in the dead
	// letters, by the worker that stored it (for a crash-looping job,
	// whichever Work call of the queue receives it after its last attempt).
	DeadLetter func(DeadLetter)
}

// Work runs fn for the jobs of queue as they fall due, until ctx is done
// or the Client is closed; then it shuts down and returns nil:
//
//  1. It stops taking jobs. Those it had received but not started go back
//     to the server at once.
//  2. Running handlers have WorkOptions.Grace to finish; their outcomes
//     are recorded as usual.
//  3. Then their ctx is cancelled with the cause ErrShutdown, and they
//     have Config.Timeout more to return. A handler that returns an error
//     now has no outcome: its job goes back to the queue.
//  4. A handler still running after that is abandoned: its job goes back
//     to the queue, its goroutine is left to end on its own, and what it
//     returns is ignored.
//
// So Work returns within Grace + 2 × Config.Timeout once it stopped
// consuming (storing outcomes and giving jobs back take up to
// Config.Timeout each); stopping waits for the server's answer, at once
// unless the server stalls, and Config.Timeout at most. The bound holds
// if the OnFinish and DeadLetter hooks return: a run's outcome counts as
// stored once its hooks did.
// A job given back is not counted as failed: its next run has the same
// Attempt, it is neither retried nor dead-lettered for it, and OnFinish
// does not see it. Each goes back on condition that it is still the
// job's current copy: a job cancelled or replaced meanwhile stays so.
//
// Any number of Work calls, in any number of processes, share one durable
// consumer per queue: each delivery goes to exactly one of them, and a
// Work call asks the server for one only when a runner is free. A job
// runs at or after its time, never before: deliveries come from the server
// up to a second early and wait here in a timing wheel. A handler that
// runs longer than AckWait keeps its claim: Work tells the server it is in
// progress every AckWait/3.
//
// A failed run is retried after the policy's delay: a delay of a second
// or less by the server's redelivery, a longer one as a new server-side
// schedule, so that no worker holds a job it is not running. After
// MaxAttempts, or at once for Permanent errors, the job goes to the
// queue's dead letters (see DeadLetters and Redrive) exactly once. A job
// whose worker dies every time it runs it is dead-lettered too: the Work
// call that receives it after its last attempt stores the dead letter
// instead of running it.
//
// While the server is unreachable, or a cluster has no quorum, Work keeps
// trying and resumes by itself, also when it starts during the outage: it
// sets its consumers up once the server answers again. It returns an
// error only for bad arguments or when its consumers cannot be set up for
// another reason than an outage (ErrUnavailable is retried, not returned).
func (c *Client) Work(ctx context.Context, queue string, fn Func, opts WorkOptions) error {
	if err := c.checkQueue(queue); err != nil {
		return err
	}
	if fn == nil {
		return invalidf("Work: nil handler")
	}
	if opts.Concurrency < 0 {
		return invalidf("Work: negative Concurrency")
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = 1
	}
	if opts.Timeout < 0 {
		return invalidf("Work: negative Timeout %v", opts.Timeout)
	}
	if opts.Grace < 0 {
		return invalidf("Work: negative Grace %v", opts.Grace)
	}
	if opts.Grace == 0 {
		opts.Grace = defaultGrace
	}
	for i := len(opts.Middleware) - 1; i >= 0; i-- {
		if opts.Middleware[i] == nil {
			return invalidf("Work: Middleware[%d] is nil", i)
		}
		fn = opts.Middleware[i](fn)
	}
	var err error
	if opts.Retry, err = policy(opts.Retry); err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.works.Add(1)
	c.mu.Unlock()
	defer c.works.Done()

	w := &worker{c: c, queue: queue, fn: fn, ctx: context.WithoutCancel(ctx), opts: opts, live: map[*delivery]bool{}}
	w.settled.L = &w.mu
	if err := w.setupRetrying(ctx); err != nil {
		return err
	}
	if w.wheel == nil {
		return nil // stopped before it started: nothing was taken
	}
	return w.serve(ctx)
}

// heartbeatEvery is how often the server tells a Work call's waiting pull
// request that it is still there; when two are missed the keeper asks
// again (the server may have lost the request: a restart, a new leader).
const heartbeatEvery = 500 * time.Millisecond

// pullExpiry is how long a pull request waits on the server.
const pullExpiry = 5 * time.Second

// defaultGrace is the Grace of a zero WorkOptions.Grace.
const defaultGrace = 10 * time.Second

// testHookSetupFailed, if set, is called with each failed setup attempt
// that Work retries.
var testHookSetupFailed func(error)

// setupRetrying runs setup until it succeeds, retrying while the server
// or cluster is unavailable (ErrUnavailable: a leader election, a lost
// quorum, a disconnection), with a backoff of 100 ms doubling to 2 s. It
// returns nil with w.wheel unset when ctx ends or the client closes first,
// and setup's error when it is not an outage.
func (w *worker) setupRetrying(ctx context.Context) error {
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err := w.setup(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, ErrUnavailable) {
			return err
		}
		if h := testHookSetupFailed; h != nil {
			h(err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-w.c.stop:
			t.Stop()
			return nil
		}
	}
}

// worker is one Work call.
type worker struct {
	c       *Client
	queue   string
	fn      Func
	ctx     context.Context // Work's ctx without its cancellation, for handlers
	opts    WorkOptions
	wheel   *timingwheel.Scheduler[*delivery]
	runners *pool.Pool[*delivery, struct{}]
	inbox   string // where the server sends this call's deliveries

	mu sync.Mutex
	// live holds every delivery received and not finished, true while it
	// waits in the wheel; the keeper tells the server they are in progress.
	live map[*delivery]bool
	// asked counts deliveries asked of the server and not yet received,
	// busy those handed to the runners whose handler has not returned:
	// Work asks for more only while asked + busy < Concurrency (see pull).
	asked, busy int
	heard       time.Time // the last pull request or word from the server
	stopped     bool      // Work stopped taking jobs
	// cancelling is set when Grace passed: a handler starting after it
	// gets a cancelled ctx.
	cancelling bool
	// settling counts runners storing an outcome (they won the CAS on
	// their delivery's state under mu); shutdown waits for it to drop to
	// zero (settled) even when it abandons handlers.
	settling int
	settled  sync.Cond // on mu
}

// delivery is a message received and not yet run.
type delivery struct {
	msg      *nats.Msg
	received time.Time // its arrival in this process (monotonic)
	due      time.Time
	timer    timingwheel.Timer[*delivery]
	// cancel cancels the running handler's ctx; set under worker.mu.
	cancel context.CancelCauseFunc
	freed  bool // its runner counts as free (see free); runner only
	// state settles who answers the server for a delivery whose handler
	// ran: the runner (settled) or shutdown (abandoned), by one CAS.
	state atomic.Int32
}

// delivery states.
const (
	running int32 = iota
	settled
	abandoned
)

// setup creates or updates the queue's shared consumer and the wheel.
func (w *worker) setup(ctx context.Context) error {
	c, q := w.c, w.queue
	if _, err := c.js.CreateOrUpdateConsumer(ctx, workStream(q), workerConfig(q, c.cfg)); err != nil {
		return c.apiErr("consumer "+workerConsumer, err)
	}
	if err := w.buryLeftovers(ctx); err != nil {
		return err
	}
	// 1 ms slots over about a second: a delivery waits here at most
	// scheduleLead plus the server's lateness.
	var err error
	w.wheel, err = timingwheel.NewScheduler(time.Millisecond, 2048, w.fire)
	return err
}

// serve pulls until ctx is done or the client closes, then drains.
func (w *worker) serve(ctx context.Context) error {
	w.runners = pool.New(pool.Config[*delivery, struct{}]{
		Workers: w.opts.Concurrency,
		Run: func(d *delivery, _ *struct{}) {
			w.run(d)
			w.finish(d)
		},
		Panic: w.exited,
	})
	w.inbox = w.c.nc.NewInbox()
	sub, err := w.c.nc.Subscribe(w.inbox, w.receive)
	if err != nil {
		w.wheel.Stop()
		return w.c.apiErr("subscribe", err)
	}
	drained := sub.StatusChanged(nats.SubscriptionClosed)
	kept, keeperDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(keeperDone)
		w.keep(kept)
	}()
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		w.sweepEvery(kept)
	}()
	w.pull()
	select {
	case <-ctx.Done():
	case <-w.c.stop:
	}
	// Stop pulling and starting runs; what the server sent meanwhile still
	// reaches receive, which gives it back. Then release what was received
	// but not started.
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	back := w.runners.Close()
	if sub.Drain() == nil {
		t := time.NewTimer(w.c.cfg.Timeout)
		select {
		case <-drained:
		case <-t.C: // an outage: what is still on its way comes back after AckWait
		}
		t.Stop()
	}
	sub.Unsubscribe()
	w.wheel.Stop()
	w.mu.Lock()
	for d, inWheel := range w.live {
		if inWheel {
			back = append(back, d)
		}
	}
	w.mu.Unlock()
	gave := make(chan struct{})
	go func() { // during the grace, so that drain's bound holds
		defer close(gave)
		w.giveBack(back...)
	}()
	w.drain()
	<-gave
	close(kept)
	<-keeperDone
	<-swept
	return nil
}

// pull asks the server for as many deliveries as runners are free: those
// whose handler is not running nor about to, less the deliveries asked for
// and not received. So receive never waits for a runner: a delivery's
// receipt is its arrival. The request waits on the server pullExpiry at
// most, with a heartbeat every heartbeatEvery; the server tells its end
// (status 408 or 409) and status asks again.
func (w *worker) pull() {
	w.mu.Lock()
	n := w.opts.Concurrency - w.asked - w.busy
	if w.stopped || n <= 0 {
		w.mu.Unlock()
		return
	}
	w.asked += n
	w.heard = time.Now()
	w.mu.Unlock()
	req := fmt.Appendf(nil, `{"batch":%d,"expires":%d,"idle_heartbeat":%d}`, n, pullExpiry, heartbeatEvery)
	subject := "$JS.API.CONSUMER.MSG.NEXT." + workStream(w.queue) + "." + workerConsumer
	if testHookLosePull != nil && testHookLosePull() {
		return // as if the server never got it, and says nothing
	}
	if w.c.nc.PublishRequest(subject, w.inbox, req) != nil {
		w.mu.Lock()
		w.asked -= n // the keeper asks again
		w.mu.Unlock()
	}
}

// testHookLosePull, if set, is asked before each pull request is sent;
// true drops it silently.
var testHookLosePull func() bool

// receive handles what the server sends to the inbox, one message at a
// time: a delivery due now goes to a runner, an early one waits in the
// wheel; a status message is a heartbeat or the end of a pull request.
func (w *worker) receive(m *nats.Msg) {
	now := time.Now()
	if m.Reply == "" { // a status: deliveries carry their ack subject
		w.status(m, now)
		return
	}
	d := &delivery{msg: m, received: now}
	d.timer.Value = d
	if ns, err := strconv.ParseInt(m.Header.Get(hdrDue), 10, 64); err == nil {
		d.due = time.Unix(0, ns)
	}
	wait := d.due.Sub(now)
	w.mu.Lock()
	w.heard = now
	w.asked = max(w.asked-1, 0)
	stopped := w.stopped
	w.live[d] = !stopped && wait > 0
	if !stopped && wait <= 0 {
		w.busy++
	}
	w.mu.Unlock()
	switch {
	case stopped:
		w.giveBack(d)
	case wait > 0:
		// Convert the wall-clock due time to this process's monotonic
		// clock, as the wheel wants.
		w.wheel.ScheduleAt(&d.timer, now.Add(wait))
		if h := testHookHeld; h != nil {
			id, _ := idGen(m.Subject, statePrefix(w.queue, "r"))
			h(id, d.due)
		}
		w.pull() // a held delivery takes no runner
	default:
		w.push(d)
	}
}

// push hands d to the runners; once Work stopped, the pool refuses it and
// d waits with the held deliveries to be given back.
func (w *worker) push(d *delivery) {
	if !w.runners.Push(d) {
		w.mu.Lock()
		w.live[d] = true
		w.mu.Unlock()
	}
}

// status handles the server's word on a pull request: a heartbeat (100)
// while it waits, or its end with Nats-Pending-Messages deliveries left
// unsent (408 expired, 409 ended otherwise); those are asked again at
// once after an expiry, by the keeper otherwise.
func (w *worker) status(m *nats.Msg, now time.Time) {
	code := m.Header.Get("Status")
	w.mu.Lock()
	w.heard = now
	if code != "100" {
		if n, err := strconv.Atoi(m.Header.Get("Nats-Pending-Messages")); err == nil {
			w.asked = max(w.asked-n, 0)
		} else {
			w.asked = 0
		}
	}
	w.mu.Unlock()
	if code == "408" {
		w.pull()
	}
}

// testHookHeld, if set, is called with the job's ID and time when receive
// put a delivery in the wheel.
var testHookHeld func(id string, due time.Time)

// fire runs on the wheel's goroutine when a held delivery falls due and
// hands it to the runners (it never blocks).
func (w *worker) fire(t *timingwheel.Timer[*delivery], now time.Time) time.Duration {
	d := t.Value
	if wait := time.Until(d.due); wait > 0 {
		return wait // the wall clock is behind the monotonic one: never early
	}
	w.mu.Lock()
	ok := w.live[d] && !w.stopped
	if ok {
		w.live[d] = false
		w.busy++
	}
	w.mu.Unlock()
	if ok {
		w.push(d)
	}
	return 0
}

// free counts d's runner as free once its handler returned, and asks the
// server for the next delivery, which comes while the runner stores d's
// outcome (one round trip) and waits in the pool's queue meanwhile.
func (w *worker) free(d *delivery) {
	if d.freed {
		return
	}
	d.freed = true
	w.mu.Lock()
	w.busy--
	w.mu.Unlock()
	w.pull()
}

// finish forgets a delivery that ran, or left its runner.
func (w *worker) finish(d *delivery) {
	w.done(d)
	w.free(d)
}

// exited handles a run that did not return: its handler called
// runtime.Goexit (call recovers panics; a panic elsewhere is a bug, and
// logged). The pool has put a new runner in the exiting one's place. The
// delivery goes back to the server by a nak, so its next delivery is the
// next attempt (buried after the last one); without it, it would stay
// live, its claim extended by the keeper forever.
func (w *worker) exited(d *delivery, recovered any, stack []byte) {
	if recovered != pool.ErrGoexit {
		slog.Error("natsjobs: run panicked", "queue", w.queue, "panic", recovered, "stack", string(stack))
	}
	if d.state.CompareAndSwap(running, settled) { // not abandoned
		d.msg.Nak()
	}
	w.finish(d)
}

// drain waits for the runners: Grace for their handlers to finish, then
// Config.Timeout more after cancelling them; a handler still running then
// is abandoned and its delivery given back. It returns once no runner is
// storing an outcome.
func (w *worker) drain() {
	runners := w.runners.Idle() // closed when the last runner left, abandoned ones included
	grace := time.NewTimer(w.opts.Grace)
	defer grace.Stop()
	select {
	case <-runners:
		return // Work returns with none of its runners left
	case <-grace.C:
	}
	w.mu.Lock()
	w.cancelling = true
	for d := range w.live {
		if d.cancel != nil {
			d.cancel(ErrShutdown)
		}
	}
	w.mu.Unlock()
	bound := time.NewTimer(w.c.cfg.Timeout)
	defer bound.Stop()
	select {
	case <-runners:
		return
	case <-bound.C:
	}
	var back []*delivery
	w.mu.Lock()
	for d, inWheel := range w.live {
		if !inWheel && d.cancel != nil && d.state.CompareAndSwap(running, abandoned) {
			back = append(back, d)
		}
	}
	w.mu.Unlock()
	w.giveBack(back...)
	w.mu.Lock()
	for w.settling > 0 {
		w.settled.Wait()
	}
	w.mu.Unlock()
}

// settle decides that the runner of d answers the server for it, unless
// Work's shutdown abandoned d; the runner calls the returned function
// once it stored the outcome.
func (w *worker) settle(d *delivery) (done func(), ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !d.state.CompareAndSwap(running, settled) {
		return nil, false
	}
	w.settling++
	return func() {
		w.mu.Lock()
		if w.settling--; w.settling == 0 {
			w.settled.Broadcast()
		}
		w.mu.Unlock()
	}, true
}

// keep tells the server every AckWait/3 that each live delivery is in
// progress, from its receipt (a delivery may wait in the wheel or for a
// free runner before it runs) to its outcome, until kept is closed. Every
// heartbeatEvery it checks the pull requests: when the server said nothing
// for two heartbeats, the requests are taken for lost and asked again.
func (w *worker) keep(kept chan struct{}) {
	t := time.NewTicker(w.c.cfg.AckWait / 3)
	defer t.Stop()
	hb := time.NewTicker(heartbeatEvery)
	defer hb.Stop()
	var batch []*delivery
	for {
		select {
		case <-hb.C:
			w.mu.Lock()
			if time.Since(w.heard) > 2*heartbeatEvery {
				w.asked = 0
			}
			w.mu.Unlock()
			w.pull()
			continue
		case <-t.C:
		case <-kept:
			return
		}
		if testHookNoKeep {
			continue
		}
		w.mu.Lock()
		for d := range w.live {
			batch = append(batch, d)
		}
		w.mu.Unlock()
		for _, d := range batch {
			d.msg.InProgress()
		}
		clear(batch)
		batch = batch[:0]
	}
}

// testHookNoKeep, if set before Work starts, stops the keeper from telling
// the server anything, so that the claims of long runs lapse.
var testHookNoKeep bool

// done forgets a delivery whose outcome was sent (or that was given back).
func (w *worker) done(d *delivery) {
	w.mu.Lock()
	delete(w.live, d)
	w.mu.Unlock()
}
