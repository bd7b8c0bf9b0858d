package natsjobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// startWork runs Work in the background and returns its ctx's cancel and
// a channel that receives Work's result.
func startWork(t *testing.T, c *Client, fn Func, opts WorkOptions) (context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Work(ctx, "q", fn, opts) }()
	t.Cleanup(cancel)
	return cancel, done
}

// outcomes records OnFinish events.
func outcomes() (jobs.Hooks, <-chan jobs.Event) {
	ch := make(chan jobs.Event, 100)
	return jobs.Hooks{OnFinish: func(e jobs.Event) { ch <- e }}, ch
}

// A handler that waits on its ctx is cancelled with ErrShutdown once the
// grace period has passed; Work returns, the error the handler returns is
// no outcome, and the job goes back to the queue with its attempt not
// counted: the next worker runs it as attempt 1.
func TestShutdownCancelsAfterGrace(t *testing.T) {
	c := open(t, Config{})
	hooks, finished := outcomes()
	started, causes := make(chan Run, 1), make(chan error, 1)
	stop, done := startWork(t, c, func(ctx context.Context, r Run) error {
		started <- r
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}, WorkOptions{Grace: 50 * time.Millisecond, Hooks: hooks})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, started, "first run"); r.Attempt != 1 {
		t.Fatalf("first run: Attempt %d, want 1", r.Attempt)
	}
	stop()
	if err := recv(t, done, "Work's return"); err != nil {
		t.Fatalf("Work = %v, want nil", err)
	}
	if cause := recv(t, causes, "cancel cause"); !errors.Is(cause, ErrShutdown) {
		t.Errorf("handler's ctx cause %v, want ErrShutdown", cause)
	}
	select {
	case e := <-finished:
		t.Errorf("OnFinish(%v) for a run cancelled by shutdown, want none", e.Outcome)
	default:
	}
	runs := runsOf(t, c, WorkOptions{Hooks: hooks}, func(ctx context.Context, r Run) error {
		if r.Attempt != 1 {
			return jobs.Permanent(errors.New("attempt counted"))
		}
		return nil
	})
	recv(t, runs, "run after the shutdown")
	if e := recv(t, finished, "outcome"); e.Outcome != jobs.Succeeded || e.Attempt != 1 {
		t.Errorf("second run: %v, attempt %d, err %v; want Succeeded, attempt 1", e.Outcome, e.Attempt, e.Err)
	}
}

// A handler that ignores its ctx is abandoned: Work returns while it still
// runs, its job goes back to the queue and runs elsewhere, and what the
// abandoned handler returns later is ignored.
func TestShutdownAbandonsStuckHandler(t *testing.T) {
	t.Parallel()
	c := open(t, Config{Timeout: 200 * time.Millisecond})
	hooks, finished := outcomes()
	started, release, returned := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	stop, done := startWork(t, c, func(ctx context.Context, r Run) error {
		started <- struct{}{}
		<-release // ignores ctx
		defer close(returned)
		return nil
	}, WorkOptions{Grace: 50 * time.Millisecond, Hooks: hooks})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	recv(t, started, "first run")
	stop()
	if err := recv(t, done, "Work's return with a stuck handler"); err != nil {
		t.Fatalf("Work = %v, want nil", err)
	}
	runs := runsOf(t, c, WorkOptions{Hooks: hooks}, nil)
	recv(t, runs, "run of the abandoned job")
	if e := recv(t, finished, "outcome"); e.Outcome != jobs.Succeeded || e.Attempt != 1 {
		t.Errorf("second run: %v, attempt %d; want Succeeded, attempt 1", e.Outcome, e.Attempt)
	}
	close(release)
	<-returned
	if st := statsNow(t, c); st != (Stats{}) {
		t.Errorf("Stats = %+v, want none", st)
	}
	select {
	case e := <-finished:
		t.Errorf("OnFinish(%v) for the abandoned run, want none", e.Outcome)
	default:
	}
}

// A handler that finishes within the grace period has its outcome stored,
// and the shutdown waits for it.
func TestShutdownWaitsWithinGrace(t *testing.T) {
	c := open(t, Config{})
	hooks, finished := outcomes()
	started, release := make(chan struct{}, 1), make(chan struct{})
	stop, done := startWork(t, c, func(ctx context.Context, r Run) error {
		started <- struct{}{}
		<-release
		return ctx.Err()
	}, WorkOptions{Grace: time.Minute, Hooks: hooks})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	recv(t, started, "run")
	stop()
	select {
	case err := <-done:
		t.Fatalf("Work returned (%v) while a handler ran within its grace", err)
	default:
	}
	close(release)
	if err := recv(t, done, "Work's return"); err != nil {
		t.Fatal(err)
	}
	if e := recv(t, finished, "outcome"); e.Outcome != jobs.Succeeded {
		t.Errorf("outcome %v (%v), want Succeeded", e.Outcome, e.Err)
	}
}

// Deliveries held in the wheel when Work stops go back without using up
// an attempt, and still run at their time, never before.
func TestShutdownGivesBackHeld(t *testing.T) {
	c := open(t, Config{})
	held := heldCh(t)
	stop, done := startWork(t, c, func(context.Context, Run) error { return nil }, WorkOptions{})
	due := time.Now().Add(900 * time.Millisecond)
	if err := c.EnqueueAt(context.Background(), Job{Queue: "q", ID: "a"}, due); err != nil {
		t.Fatal(err)
	}
	recv(t, held, "held delivery")
	stop()
	if err := recv(t, done, "Work's return"); err != nil {
		t.Fatal(err)
	}
	got := make(chan Run, 1)
	work(t, c, "q", func(ctx context.Context, r Run) error { got <- r; return nil }, WorkOptions{})
	r := recv(t, got, "run after the shutdown")
	if r.Attempt != 1 {
		t.Errorf("Attempt %d, want 1", r.Attempt)
	}
	if r.Started.Before(due) || !r.Scheduled.Equal(due) {
		t.Errorf("started %v, scheduled %v; want at or after %v, scheduled then", r.Started, r.Scheduled, due)
	}
}

// The attempt's timeout: WorkOptions.Timeout for every job, Job.Timeout
// overriding it; the handler's ctx ends with DeadlineExceeded, and the
// attempt fails. A retry and a dead letter keep the job's Timeout.
func TestAttemptTimeout(t *testing.T) {
	t.Parallel()
	c := open(t, Config{})
	hooks, finished := outcomes()
	limits := make(chan time.Duration, 10)
	var dead []DeadLetter
	deadCh := make(chan DeadLetter, 10)
	work(t, c, "q", func(ctx context.Context, r Run) error {
		dl, _ := ctx.Deadline()
		limits <- dl.Sub(r.Started).Round(time.Hour)
		<-ctx.Done()
		return ctx.Err()
	}, WorkOptions{Timeout: time.Hour, Hooks: hooks, Retry: jobs.Retry{Attempts: 2, Base: 2 * time.Second},
		DeadLetter: func(d DeadLetter) { deadCh <- d }})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "a", Timeout: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		if l := recv(t, limits, "run"); l != 0 {
			t.Errorf("attempt %d: deadline %v after its start, want the job's 10ms", attempt, l)
		}
		e := recv(t, finished, "outcome")
		if want := []jobs.Outcome{jobs.Retrying, jobs.Failed}[attempt-1]; e.Outcome != want || !errors.Is(e.Err, context.DeadlineExceeded) {
			t.Errorf("attempt %d: %v, %v; want %v, DeadlineExceeded", attempt, e.Outcome, e.Err, want)
		}
	}
	dead = append(dead, recv(t, deadCh, "dead letter"))
	if dead[0].Job.Timeout != 10*time.Millisecond {
		t.Errorf("dead letter's Timeout %v, want 10ms", dead[0].Job.Timeout)
	}
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "b", Timeout: -1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Enqueue with a negative Timeout = %v, want ErrInvalid", err)
	}
}

// Middleware wraps the handler, the first element outermost, and sees
// the run's ctx.
func TestMiddleware(t *testing.T) {
	c := open(t, Config{})
	var order []string
	done := make(chan []string, 1)
	wrap := func(name string) func(Func) Func {
		return func(next Func) Func {
			return func(ctx context.Context, r Run) error {
				order = append(order, name+">")
				err := next(ctx, r)
				order = append(order, "<"+name)
				return err
			}
		}
	}
	work(t, c, "q", func(ctx context.Context, r Run) error {
		order = append(order, "fn")
		return nil
	}, WorkOptions{Middleware: []func(Func) Func{wrap("a"), wrap("b")}, Hooks: jobs.Hooks{OnFinish: func(jobs.Event) {
		done <- slices.Clone(order)
	}}})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"a>", "b>", "fn", "<b", "<a"}
	if got := recv(t, done, "run"); !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
	err := c.Work(context.Background(), "q", func(context.Context, Run) error { return nil }, WorkOptions{Middleware: []func(Func) Func{nil}})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("Work with a nil Middleware = %v, want ErrInvalid", err)
	}
	for _, o := range []WorkOptions{{Timeout: -1}, {Grace: -1}} {
		if err := c.Work(context.Background(), "q", func(context.Context, Run) error { return nil }, o); !errors.Is(err, ErrInvalid) {
			t.Errorf("Work(%+v) = %v, want ErrInvalid", o, err)
		}
	}
}

// A handler that runs longer than Config.Timeout has its success stored:
// the server calls after it get a Timeout of their own (they shared the
// one started before the handler, and failed, so the job ran again).
//
// The handler returns only once Config.Timeout has passed since r.Started,
// which is after the pre-run context was made, so that context has expired
// whatever the machine's load. Config.Timeout itself must cover a server
// round trip on a loaded machine: at 100 ms, Open's stream creation timed
// out under a load of 25 on 2 cores (once in 90 runs).
func TestHandlerLongerThanTimeout(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	c := open(t, Config{Timeout: timeout})
	hooks, finished := outcomes()
	runs := runsOf(t, c, WorkOptions{Hooks: hooks}, func(ctx context.Context, r Run) error {
		// The work, longer than Config.Timeout.
		<-time.After(time.Until(r.Started.Add(timeout + 10*time.Millisecond)))
		return nil
	})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	recv(t, runs, "run")
	if e := recv(t, finished, "outcome"); e.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v (%v), want Succeeded", e.Outcome, e.Err)
	}
	if st := statsNow(t, c); st != (Stats{}) {
		t.Errorf("Stats = %+v, want none", st)
	}
}

// A worker process whose handler waits on its ctx ends when told to stop
// (its stdin closes, as a SIGINT handler would cancel Work's ctx): the
// handler is cancelled after the grace period, the process exits, and the
// job runs in the next worker process as attempt 1, not as a retry.
func TestShutdownProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("child processes")
	}
	c := open(t, Config{Server: embedded.Server{Listen: "127.0.0.1:0"}})
	events := make(chan childEvent, 100)
	first := startChild(t, 0, c.URL(), 1, events, "NATSJOBS_CHILD_ATTEMPTS=1", "NATSJOBS_CHILD_BLOCK=1")
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	for e := recv(t, events, "run in the first child"); e.kind != "run"; e = recv(t, events, "run in the first child") {
	}
	first.stop(t) // fails unless the child exits, with status 0
	startChild(t, 1, c.URL(), 1, events, "NATSJOBS_CHILD_ATTEMPTS=1")
	for {
		e := recv(t, events, "run in the second child")
		if e.kind == "ack" {
			break
		}
		if e.kind == "run" && (e.child != 1 || e.payload != "attempt1") {
			t.Errorf("run in child %d as %s, want child 1, attempt1", e.child, e.payload)
		}
	}
	if st := statsNow(t, c); st != (Stats{}) {
		t.Errorf("Stats = %+v, want none", st)
	}
}

// Work stops in the middle of a burst, with a delivery in each place it
// can be: held in the wheel until due, running a handler that finishes
// within the grace, running one that returns once its ctx is cancelled,
// running one that ignores its ctx (abandoned), and waiting on the server.
// Nothing is lost and nothing counts as failed: the first Work reports no
// outcome but Succeeded and stores no dead letter; a second Work runs
// every other job, each as its attempt 1 and at or after its time, and
// none that the first one reported Succeeded.
func TestShutdownMidBurstLosesNothing(t *testing.T) {
	c := open(t, Config{Timeout: time.Second})
	ctx := context.Background()
	const n, later, concurrency = 300, 20, 8
	total := n + later
	held := heldCh(t)
	// The first Work: "c" jobs wait for their ctx, "s" jobs ignore it until
	// the test ends, the others succeed at once.
	release := make(chan struct{})
	defer close(release)
	blocked, causes := make(chan string, total), make(chan error, total)
	first := make(chan jobs.Event, total)
	dead := make(chan DeadLetter, total)
	stop, done := startWork(t, c, func(ctx context.Context, r Run) error {
		switch r.ID[0] {
		case 'c':
			blocked <- r.ID
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		case 's':
			blocked <- r.ID
			<-release
			return errors.New("returned after its Work stopped")
		}
		return nil
	}, WorkOptions{Concurrency: concurrency, Grace: 100 * time.Millisecond,
		Hooks:      jobs.Hooks{OnFinish: func(e jobs.Event) { first <- e }},
		DeadLetter: func(d DeadLetter) { dead <- d }})
	due := time.Now().Add(900 * time.Millisecond) // within scheduleLead: handed out at once, held
	for i := range later {
		if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: fmt.Sprint("h", i)}, due); err != nil {
			t.Fatal(err)
		}
	}
	batch := make([]Job, n)
	for i := range batch {
		kind := "f"
		switch i % 10 {
		case 0:
			kind = "s"
		case 1, 2:
			kind = "c"
		}
		batch[i] = Job{Queue: "q", ID: fmt.Sprint(kind, i)}
	}
	if err := c.EnqueueBatch(ctx, time.Time{}, batch...); err != nil {
		t.Fatal(err)
	}
	// Every runner is taken by a handler that does not finish, and the
	// later jobs are held: the first Work takes nothing more.
	for range concurrency {
		recv(t, blocked, "blocked handler")
	}
	for range later {
		recv(t, held, "held delivery")
	}
	stop()
	if err := recv(t, done, "Work's return"); err != nil {
		t.Fatalf("Work = %v, want nil", err)
	}
	succeeded := map[string]bool{}
	for len(first) > 0 {
		e := <-first
		if e.Outcome != jobs.Succeeded {
			t.Errorf("first Work: %s %v (%v), want only Succeeded outcomes", e.ID, e.Outcome, e.Err)
		}
		succeeded[e.ID] = true
	}
	if len(dead) > 0 {
		t.Errorf("first Work stored dead letter %+v, want none", <-dead)
	}
	for len(causes) > 0 {
		if err := <-causes; !errors.Is(err, ErrShutdown) {
			t.Errorf("cancelled handler's cause %v, want ErrShutdown", err)
		}
	}
	// The second Work runs the rest.
	type run struct {
		id      string
		attempt int
		started time.Time
	}
	runs := make(chan run, total)
	second := make(chan jobs.Event, total)
	work(t, c, "q", func(ctx context.Context, r Run) error {
		runs <- run{r.ID, r.Attempt, r.Started}
		return nil
	}, WorkOptions{Concurrency: concurrency, Hooks: jobs.Hooks{OnFinish: func(e jobs.Event) { second <- e }}})
	for left := total - len(succeeded); left > 0; left-- {
		if e := recv(t, second, "outcome in the second Work"); e.Outcome != jobs.Succeeded {
			t.Errorf("second Work: %s %v (%v), want Succeeded", e.ID, e.Outcome, e.Err)
		}
	}
	ran := map[string]int{}
	for len(runs) > 0 {
		r := <-runs
		ran[r.id]++
		switch {
		case succeeded[r.id]:
			t.Errorf("%s ran again after its success was confirmed", r.id)
		case r.attempt != 1:
			t.Errorf("%s ran as attempt %d, want 1: the shutdown counted an attempt", r.id, r.attempt)
		case r.id[0] == 'h' && r.started.Before(due):
			t.Errorf("%s started %v before its time", r.id, due.Sub(r.started))
		}
	}
	for i := range later {
		if id := fmt.Sprint("h", i); !succeeded[id] && ran[id] != 1 {
			t.Errorf("held job %s ran %d times in the second Work, want 1", id, ran[id])
		}
	}
	for _, j := range batch {
		if !succeeded[j.ID] && ran[j.ID] != 1 {
			t.Errorf("job %s ran %d times in the second Work, want 1", j.ID, ran[j.ID])
		}
	}
	if st := statsNow(t, c); st != (Stats{}) {
		t.Errorf("Stats = %+v, want none", st)
	}
	t.Logf("first Work: %d succeeded; second Work: %d runs", len(succeeded), len(ran))
}
