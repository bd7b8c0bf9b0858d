package natsjobs

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// Func is a job handler. It returns nil for success, an error to be
// retried under the Work call's Retry policy, or jobs.Permanent(err) to
// give up at once. ctx carries the values of Work's ctx; it is cancelled
// when the attempt's timeout passes (Job.Timeout, WorkOptions.Timeout:
// context.DeadlineExceeded) and when Work stopped and WorkOptions.Grace
// passed (cause ErrShutdown), not when Work's ctx ends. A panic is
// recovered as a *jobs.PanicError and retried like an error. A handler
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
	// (±10 %) rather than none. All workers of a queue must use the same
	// Attempts: it is also the server's delivery limit on the queue's
	// shared consumer, and the last Work call to start sets it. A panic
	// in Retry.If is logged and counts as false (the job is
	// dead-lettered), as in package jobs.
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
	// whichever Work call of the queue handles the server's advisory).
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
// Config.Timeout each).
// A job given back is not counted as failed: its next run has the same
// Attempt, it is neither retried nor dead-lettered for it, and OnFinish
// does not see it. Each goes back on condition that it is still the
// job's current copy: a job cancelled or replaced meanwhile stays so.
//
// Any number of Work calls, in any number of processes, share one durable
// consumer per queue: each delivery goes to exactly one of them. A job
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
// whose worker dies every time it runs it is dead-lettered too: the server
// stops after MaxAttempts deliveries and announces it, and a Work call
// stores the dead letter.
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

	w := &worker{c: c, queue: queue, fn: fn, ctx: context.WithoutCancel(ctx), opts: opts, stopping: make(chan struct{}), runs: make(chan *delivery), live: map[*delivery]bool{}}
	w.settled.L = &w.mu
	// Twice the pull's size, in case the library holds a refill's
	// messages beside the rest of the previous pull's.
	w.arrivals.starts = make([]time.Time, 2*opts.Concurrency)
	if err := w.setupRetrying(ctx); err != nil {
		return err
	}
	if w.wheel == nil {
		return nil // stopped before it started: nothing was taken
	}
	return w.serve(ctx)
}

// heartbeatEvery is how often the server tells a Work call's waiting pull
// request that it is still there; two missed heartbeats make the client
// library ask again (see serve).
const heartbeatEvery = 500 * time.Millisecond

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
	c      *Client
	queue  string
	fn     Func
	ctx    context.Context // Work's ctx without its cancellation, for handlers
	opts   WorkOptions
	stream jetstream.Stream
	cons   jetstream.Consumer
	adv    jetstream.Consumer
	wheel  *timingwheel.Scheduler[*delivery]

	stopping chan struct{} // closed when Work stops taking jobs
	runs     chan *delivery
	wg       sync.WaitGroup // runners and hand-over goroutines

	mu sync.Mutex
	// live holds every delivery received and not finished, true while it
	// waits in the wheel; the keeper tells the server they are in progress.
	live map[*delivery]bool
	// cancelling is set when Grace passed: a handler starting after it
	// gets a cancelled ctx.
	cancelling bool
	// settling counts runners storing an outcome (they won the CAS on
	// their delivery's state under mu); shutdown waits for it to drop to
	// zero (settled) even when it abandons handlers.
	settling int
	settled  sync.Cond // on mu

	// arrivals bounds how long a delivery waited in the client library's
	// buffer before receive saw it; only receive uses it.
	arrivals arrivalBound
}

// arrivalBound gives, for each call of the consumer's callback, a time no
// later than the arrival of the message it carries. The library calls the
// callback one message at a time and buffers at most the pull's size
// (Concurrency) meanwhile, so a message that receive sees had at most that
// many messages ahead of it on arrival: it arrived no earlier than the
// start of the callback that many calls back. Messages wait there unseen
// by the keeper while every runner is busy (receive blocks in handOver),
// and their claims may lapse; without this bound such a stale delivery
// would look freshly received and be acknowledged without succeedOnce's
// check, beside a redelivery run by another worker.
type arrivalBound struct {
	starts []time.Time // ring of the last len(starts) callbacks' start times
	next   int
	first  time.Time // the first callback's start
}

// observe records a callback starting at now and returns the earliest time
// its message may have arrived: the start of the callback len(starts)
// calls back, or of the first call while there were fewer calls (nothing
// was buffered before the first message arrived).
func (a *arrivalBound) observe(now time.Time) time.Time {
	if a.first.IsZero() {
		a.first = now
	}
	oldest := a.starts[a.next]
	a.starts[a.next] = now
	a.next = (a.next + 1) % len(a.starts)
	if oldest.IsZero() {
		return a.first
	}
	return oldest
}

// delivery is a message received and not yet run.
type delivery struct {
	msg      jetstream.Msg
	received time.Time // no later than its arrival in this process (monotonic)
	due      time.Time
	timer    timingwheel.Timer[*delivery]
	// cancel cancels the running handler's ctx; set under worker.mu.
	cancel context.CancelCauseFunc
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

// setup creates or updates the queue's shared consumers and the wheel.
func (w *worker) setup(ctx context.Context) error {
	c, q := w.c, w.queue
	var err error
	if w.stream, err = c.js.Stream(ctx, workStream(q)); err != nil {
		return c.apiErr("stream "+workStream(q), err)
	}
	w.cons, err = c.js.CreateOrUpdateConsumer(ctx, workStream(q), workerConfig(q, c.cfg, w.opts.Retry))
	if err != nil {
		return c.apiErr("consumer "+workerConsumer, err)
	}
	w.adv, err = c.js.CreateOrUpdateConsumer(ctx, advStream(q), jetstream.ConsumerConfig{
		Durable:   advConsumer,
		AckPolicy: jetstream.AckExplicitPolicy,
		AckWait:   c.cfg.AckWait,
		Replicas:  c.cfg.Replicas,
	})
	if err != nil {
		return c.apiErr("consumer "+advConsumer, err)
	}
	// 1 ms slots over about a second: a delivery waits here at most
	// scheduleLead plus the server's lateness.
	w.wheel, err = timingwheel.NewScheduler(time.Millisecond, 2048, w.fire)
	return err
}

// serve consumes until ctx is done or the client closes, then drains.
func (w *worker) serve(ctx context.Context) error {
	for range w.opts.Concurrency {
		w.wg.Add(1)
		go w.runner()
	}
	quiet := jetstream.ConsumeErrHandler(func(jetstream.ConsumeContext, error) {})
	// Pull requests expire every 5 s, so that a request the server lost
	// (it was restarting, or busy) is renewed within seconds rather than
	// the default 30 s. The client library (nats.go v1.55.0) asks for
	// more only when a message reaches the callback, and skips that while
	// its goroutine that sends requests has not yet marked the previous
	// one sent: when the callback takes the last message of that very
	// request first (an in-process server answers in microseconds), no
	// request is left, and nothing arrives until the library misses two
	// idle heartbeats and asks again. With the default heartbeat (half
	// the expiry) such a stall lasted 5 s, one to three times per 20k
	// runs on two handlers; heartbeatEvery (the least the library takes)
	// bounds it to 2 × 500 ms, for a heartbeat every 500 ms to each
	// waiting request while nothing is due.
	expiry := jetstream.PullExpiry(5 * time.Second)
	hb := jetstream.PullHeartbeat(heartbeatEvery)
	cc, err := w.cons.Consume(w.receive, jetstream.PullMaxMessages(w.opts.Concurrency), expiry, hb, quiet)
	if err != nil {
		close(w.stopping)
		w.wg.Wait()
		w.wheel.Stop()
		return w.c.apiErr("consume", err)
	}
	ac, err := w.adv.Consume(w.advisory, jetstream.PullMaxMessages(1), expiry, hb, quiet)
	if err != nil {
		cc.Stop()
		close(w.stopping)
		w.wg.Wait()
		w.wheel.Stop()
		return w.c.apiErr("consume advisories", err)
	}
	kept, keeperDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(keeperDone)
		w.keep(kept)
	}()
	select {
	case <-ctx.Done():
	case <-w.c.stop:
	}
	// Stop pulling, then release what was received but not started.
	cc.Stop()
	ac.Stop()
	close(w.stopping) // a callback blocked in handOver gives its delivery back
	<-cc.Closed()
	<-ac.Closed()
	w.wheel.Stop()
	var back []*delivery
	w.mu.Lock()
	for d, inWheel := range w.live {
		if inWheel {
			back = append(back, d)
		}
	}
	w.mu.Unlock()
	w.wg.Add(1)
	go func() { // during the grace, so that drain's bound holds
		defer w.wg.Done()
		w.giveBack(back...)
	}()
	w.drain()
	close(kept)
	<-keeperDone
	return nil
}

// drain waits for the runners: Grace for their handlers to finish, then
// Config.Timeout more after cancelling them; a handler still running then
// is abandoned and its delivery given back. It returns once no runner is
// storing an outcome.
func (w *worker) drain() {
	runners := make(chan struct{})
	go func() { // ends when the last runner does, abandoned ones included
		w.wg.Wait()
		close(runners)
	}()
	grace := time.NewTimer(w.opts.Grace)
	defer grace.Stop()
	select {
	case <-runners:
		return // Work returns with none of its goroutines left
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
// free runner before it runs) to its outcome, until kept is closed.
func (w *worker) keep(kept chan struct{}) {
	t := time.NewTicker(w.c.cfg.AckWait / 3)
	defer t.Stop()
	var batch []*delivery
	for {
		select {
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

// receive is the consumer's callback (one message at a time): a due
// delivery goes to a runner, an early one waits in the wheel.
func (w *worker) receive(m jetstream.Msg) {
	d := &delivery{msg: m, received: w.arrivals.observe(time.Now())}
	d.timer.Value = d
	w.mu.Lock()
	w.live[d] = false
	w.mu.Unlock()
	if ns, err := strconv.ParseInt(m.Headers().Get(hdrDue), 10, 64); err == nil {
		d.due = time.Unix(0, ns)
		now := time.Now()
		if wait := d.due.Sub(now); wait > 0 {
			w.mu.Lock()
			w.live[d] = true
			w.mu.Unlock()
			// Convert the wall-clock due time to this process's
			// monotonic clock, as the wheel wants.
			w.wheel.ScheduleAt(&d.timer, now.Add(wait))
			if h := testHookHeld; h != nil {
				h(idOf(m.Subject(), readySubject(w.queue, "")), d.due)
			}
			return
		}
	}
	w.handOver(d)
}

// testHookHeld, if set, is called with the job's ID and time when receive
// put a delivery in the wheel.
var testHookHeld func(id string, due time.Time)

// fire runs on the wheel's goroutine when a held delivery falls due. It
// must not block, so a goroutine hands the delivery to a runner.
func (w *worker) fire(t *timingwheel.Timer[*delivery], now time.Time) time.Duration {
	d := t.Value
	if wait := time.Until(d.due); wait > 0 {
		return wait // the wall clock is behind the monotonic one: never early
	}
	w.mu.Lock()
	ok := w.live[d]
	if ok {
		w.live[d] = false
	}
	w.mu.Unlock()
	if ok {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.handOver(d)
		}()
	}
	return 0
}

// handOver waits for a free runner, or gives d back when Work stops.
func (w *worker) handOver(d *delivery) {
	select {
	case w.runs <- d:
	case <-w.stopping:
		w.giveBack(d)
	}
}

func (w *worker) runner() {
	defer w.wg.Done()
	for {
		select {
		case d := <-w.runs:
			w.runOne(d)
		case <-w.stopping:
			return
		}
	}
}

// runOne runs d on the runner's goroutine. A handler that calls
// runtime.Goexit ends that goroutine midway (call's recover sees no
// panic): the delivery would stay live, its claim extended by the keeper
// forever, and Work would have one runner fewer. So the delivery is given
// back (the server redelivers it, an attempt without an outcome, buried
// after the last one) and a new runner takes the exiting one's place.
func (w *worker) runOne(d *delivery) {
	finished := false
	defer func() {
		if finished {
			return
		}
		if d.state.CompareAndSwap(running, settled) { // not abandoned
			d.msg.Nak()
		}
		w.done(d)
		w.wg.Add(1)
		go w.runner()
	}()
	w.run(d)
	w.done(d)
	finished = true
}
