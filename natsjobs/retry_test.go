package natsjobs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/timingwheel"
)

func TestRetryThenDeadLetterOnce(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	attempts := make(chan int, 10)
	dead := make(chan DeadLetter, 10)
	opts := WorkOptions{
		Retry:      jobs.Retry{Attempts: 3, Base: 10 * time.Millisecond, Factor: 1},
		DeadLetter: func(d DeadLetter) { dead <- d },
	}
	stop := work(t, c, "q", func(ctx context.Context, r Run) error {
		attempts <- r.Attempt
		return errors.New("boom")
	}, opts)
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a", Payload: []byte("p"), Header: map[string]string{"K": "v"}}); err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 3; want++ {
		if got := recv(t, attempts, "attempt"); got != want {
			t.Fatalf("attempt %d, want %d", got, want)
		}
	}
	d := recv(t, dead, "dead letter")
	if d.Job.ID != "a" || d.Attempts != 3 || d.Err != "boom" || string(d.Job.Payload) != "p" || d.Job.Header["K"] != "v" {
		t.Errorf("dead letter %+v, want ID a, 3 attempts, error boom, payload p, header K=v", d)
	}
	stop()
	select {
	case n := <-attempts:
		t.Errorf("attempt %d after the last one", n)
	case d := <-dead:
		t.Errorf("second dead letter %+v", d)
	default:
	}
	list, err := c.DeadLetters(ctx, "q")
	if err != nil || len(list) != 1 || list[0].Job.ID != "a" || list[0].Attempts != 3 {
		t.Fatalf("DeadLetters = %+v, %v; want one letter for a with 3 attempts", list, err)
	}
	if st := statsNow(t, c); st != (Stats{Dead: 1}) { // Work returned
		t.Errorf("Stats = %+v; want only Dead: 1", st)
	}

	// Redrive: the job runs again from attempt 1 and its letter is gone.
	if err := c.Redrive(ctx, "q", "a"); err != nil {
		t.Fatal(err)
	}
	ok := make(chan Run, 1)
	work(t, c, "q", func(ctx context.Context, r Run) error { ok <- r; return nil }, opts)
	if r := recv(t, ok, "redriven run"); r.Attempt != 1 || string(r.Payload) != "p" {
		t.Errorf("redriven run %+v, want attempt 1 with payload p", r)
	}
	if list, err := c.DeadLetters(ctx, "q"); err != nil || len(list) != 0 {
		t.Errorf("DeadLetters after Redrive = %+v, %v; want none", list, err)
	}
	if err := c.Redrive(ctx, "q", "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Redrive: %v, want ErrNotFound", err)
	}
}

func TestPermanentErrorSkipsRetries(t *testing.T) {
	c := open(t, Config{})
	attempts := make(chan int, 10)
	dead := make(chan DeadLetter, 10)
	work(t, c, "q", func(ctx context.Context, r Run) error {
		attempts <- r.Attempt
		return jobs.Permanent(errors.New("bad order"))
	}, WorkOptions{DeadLetter: func(d DeadLetter) { dead <- d }})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "p"}); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, dead, "dead letter"); d.Attempts != 1 || d.Err != "bad order" {
		t.Errorf("dead letter %+v, want 1 attempt, error bad order", d)
	}
	if n := len(attempts); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

// A retry delay over a second waits as a server-side schedule, not in the
// worker: the attempt count survives in the new message.
func TestLongRetryDelayIsRescheduled(t *testing.T) {
	t.Parallel()
	c := open(t, Config{})
	type got struct {
		r   Run
		now time.Time
	}
	runs := make(chan got, 10)
	finished := make(chan jobs.Event, 10)
	const delay = 2500 * time.Millisecond
	work(t, c, "q", func(ctx context.Context, r Run) error {
		runs <- got{r, time.Now()}
		if r.Attempt == 1 {
			return errors.New("once")
		}
		return nil
	}, WorkOptions{Retry: jobs.Retry{Attempts: 5, Base: delay}, Hooks: jobs.Hooks{OnFinish: func(e jobs.Event) { finished <- e }}})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "r"}); err != nil {
		t.Fatal(err)
	}
	first := recv(t, runs, "first run")
	if e := recv(t, finished, "first outcome"); e.Outcome != jobs.Retrying {
		t.Fatalf("first outcome %v, want %v", e.Outcome, jobs.Retrying)
	}
	// The schedule fires scheduleLead before the retry is due, so for
	// about delay-scheduleLead the job is pending on the server.
	// OnFinish reported it once the schedule was stored and the delivery
	// acknowledged.
	if st := statsNow(t, c); st != (Stats{Pending: 1}) {
		t.Errorf("Stats between attempts = %+v; want Pending: 1", st)
	}
	second := recv(t, runs, "retry")
	if second.r.Attempt != 2 {
		t.Errorf("retry attempt %d, want 2", second.r.Attempt)
	}
	if gap := second.now.Sub(first.now); gap < delay {
		t.Errorf("retry %v after the first run, want at least %v", gap, delay)
	}
}

// A job whose workers die on every delivery is dead-lettered without a
// run by the worker that receives it after its last attempt (the consumer
// counts deliveries without limit). The dying worker is simulated by
// pulling from the shared consumer and never answering.
func TestCrashLoopGoesToDeadLetters(t *testing.T) {
	t.Parallel()
	c := open(t, Config{AckWait: time.Second})
	ctx := context.Background()
	retry := jobs.Retry{Attempts: 2}
	if _, err := c.js.CreateOrUpdateConsumer(ctx, workStream("q"), workerConfig("q", c.cfg)); err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "loop", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	cons, err := c.js.Consumer(ctx, workStream("q"), workerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		if md, _ := m.Metadata(); md.NumDelivered != uint64(i) {
			t.Fatalf("delivery %d has NumDelivered %d", i, md.NumDelivered)
		}
	}
	dead := make(chan DeadLetter, 4)
	ran := make(chan Run, 4)
	stop := work(t, c, "q", func(ctx context.Context, r Run) error { ran <- r; return nil },
		WorkOptions{Retry: retry, DeadLetter: func(d DeadLetter) { dead <- d }})
	d := recv(t, dead, "dead letter of the crash-looping job")
	if d.Job.ID != "loop" || d.Attempts != 2 || string(d.Job.Payload) != "x" {
		t.Errorf("dead letter %+v, want loop, 2 attempts, payload x", d)
	}
	stop() // DeadLetter runs before the delivery's acknowledgement; Work waits for it
	if st := statsNow(t, c); st != (Stats{Dead: 1}) {
		t.Errorf("Stats = %+v; want only Dead: 1 (the job left the work stream)", st)
	}
	if len(ran) != 0 {
		t.Errorf("the crash-looping job ran in the healthy worker")
	}
}

// An earlier version kept the server's max-deliveries advisories in a
// stream of their own, with the consumer's MaxDeliver at the policy's
// attempts: the server delivers a message that reached it no more. Work
// buries the jobs whose advisories that stream still holds, deletes it,
// and lifts the consumer's limit.
func TestLeftoverAdvisoryStreamBuried(t *testing.T) {
	t.Parallel()
	c := open(t, Config{AckWait: time.Second})
	ctx := context.Background()
	adv := jetstream.StreamConfig{
		Name:      advStream("q"),
		Subjects:  []string{"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + workStream("q") + "." + workerConsumer},
		Retention: jetstream.WorkQueuePolicy,
	}
	if _, err := c.js.CreateStream(ctx, adv); err != nil {
		t.Fatal(err)
	}
	old := workerConfig("q", c.cfg)
	old.MaxDeliver = 2
	cons, err := c.js.CreateOrUpdateConsumer(ctx, workStream("q"), old)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "stuck", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ { // two deliveries whose workers died
		if _, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second)); err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	// The third is not made: the server announces it instead.
	if m, err := cons.Next(jetstream.FetchMaxWait(3 * time.Second)); err == nil {
		t.Fatalf("delivery 3 of %s, want none after MaxDeliver 2", m.Subject())
	}
	s, err := c.js.Stream(ctx, advStream("q"))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := s.Info(ctx); err != nil || info.State.Msgs != 1 {
		t.Fatalf("advisory stream: %v, %v; want 1 advisory", info, err)
	}

	dead := make(chan DeadLetter, 4)
	ran := make(chan Run, 4)
	stop := work(t, c, "q", func(ctx context.Context, r Run) error { ran <- r; return nil },
		WorkOptions{DeadLetter: func(d DeadLetter) { dead <- d }})
	d := recv(t, dead, "dead letter of the stuck job")
	if d.Job.ID != "stuck" || d.Attempts != 2 || string(d.Job.Payload) != "x" {
		t.Errorf("dead letter %+v, want stuck, 2 attempts, payload x", d)
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "next"}); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, ran, "run after the migration"); r.ID != "next" {
		t.Errorf("ran %s, want next", r.ID)
	}
	stop()
	if _, err := c.js.Stream(ctx, advStream("q")); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("advisory stream after Work: %v, want it deleted", err)
	}
	if ci, err := c.js.Consumer(ctx, workStream("q"), workerConsumer); err != nil || ci.CachedInfo().Config.MaxDeliver != -1 {
		t.Errorf("consumer after Work: %v; want MaxDeliver -1", err)
	}
	if st := statsNow(t, c); st != (Stats{Dead: 1}) { // Work returned
		t.Errorf("Stats = %+v; want only Dead: 1", st)
	}
}

func TestBackoff(t *testing.T) {
	r := jobs.Retry{Attempts: 9, Base: time.Second, Max: 5 * time.Second, Jitter: 0.1}
	r, err := policy(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 5 * time.Second}, {60, 5 * time.Second}} {
		for range 100 {
			got := backoff(&r, tc.attempt)
			lo, hi := time.Duration(float64(tc.want)*0.9), time.Duration(float64(tc.want)*1.1)
			if got < lo || got > hi {
				t.Fatalf("backoff after attempt %d = %v, want within [%v, %v]", tc.attempt, got, lo, hi)
			}
		}
	}
}

func TestRetryPolicy(t *testing.T) {
	if p, err := policy(jobs.Retry{}); err != nil || p.Attempts != 5 || p.Base != time.Second || p.Factor != 2 {
		t.Errorf("policy(zero) = %+v, %v; want 5 attempts from 1s doubling", p, err)
	}
	if p, err := policy(jobs.Retry{Attempts: 1}); err != nil || p.Attempts != 1 {
		t.Errorf("policy(Attempts 1) = %+v, %v; want 1 attempt", p, err)
	}
	for _, r := range []jobs.Retry{{Attempts: -1}, {Base: -1}, {Max: -1}, {Factor: 0.5}, {Jitter: 1}, {Jitter: -0.1}} {
		if _, err := policy(r); !errors.Is(err, ErrInvalid) || !errors.Is(err, jobs.ErrInvalid) {
			t.Errorf("policy(%+v) = %v, want ErrInvalid (ours and jobs')", r, err)
		}
	}
}

// TestBackoffDefaultsAndCap: in a non-zero Retry, a zero Base, Factor or
// Max means 1s, 2 and no cap (as in jobs.Retry.Delay), and no wait exceeds
// a year.
func TestBackoffDefaultsAndCap(t *testing.T) {
	for _, tc := range []struct {
		r    jobs.Retry
		n    int
		want time.Duration
	}{
		{jobs.Retry{Attempts: 3}, 1, time.Second},
		{jobs.Retry{Attempts: 3}, 3, 4 * time.Second},
		{jobs.Retry{Attempts: 3, Base: time.Hour}, 20, maxRetryDelay},
	} {
		r, err := policy(tc.r)
		if err != nil {
			t.Fatal(err)
		}
		if got := backoff(&r, tc.n); got != tc.want {
			t.Errorf("backoff(%+v, %d) = %v, want %v", tc.r, tc.n, got, tc.want)
		}
	}
}

func TestRetryIf(t *testing.T) {
	c := open(t, Config{})
	attempts := make(chan int, 10)
	dead := make(chan DeadLetter, 1)
	errFatal := errors.New("fatal")
	work(t, c, "q", func(ctx context.Context, r Run) error {
		attempts <- r.Attempt
		return errFatal
	}, WorkOptions{
		Retry:      jobs.Retry{Attempts: 5, Base: 10 * time.Millisecond, If: func(err error) bool { return !errors.Is(err, errFatal) }},
		DeadLetter: func(d DeadLetter) { dead <- d },
	})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "f"}); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, dead, "dead letter"); d.Attempts != 1 {
		t.Errorf("dead after %d attempts, want 1 (Retry.If refused)", d.Attempts)
	}
}

// A panic in Retry.If counts as "not retryable", as in package jobs: the
// job is dead-lettered at once with the handler's error, and the worker
// goes on. (The panic went up through the runner goroutine and took the
// process down.)
func TestRetryIfPanicIsNotRetryable(t *testing.T) {
	c := open(t, Config{})
	dead := make(chan DeadLetter, 10)
	ran := make(chan string, 10)
	errJob := errors.New("job failed")
	work(t, c, "q", func(ctx context.Context, r Run) error {
		ran <- r.ID
		if r.ID == "bad" {
			return errJob
		}
		return nil
	}, WorkOptions{
		Retry:      jobs.Retry{Attempts: 5, Base: 10 * time.Millisecond, If: func(error) bool { panic("If kaboom") }},
		DeadLetter: func(d DeadLetter) { dead <- d },
	})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "bad"}); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, dead, "dead letter"); d.Job.ID != "bad" || d.Attempts != 1 || !strings.Contains(d.Err, errJob.Error()) {
		t.Errorf("dead letter %s after %d attempts with error %q; want bad after 1 with %q", d.Job.ID, d.Attempts, d.Err, errJob)
	}
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "next"}); err != nil {
		t.Fatal(err)
	}
	for id := recv(t, ran, "run"); id != "next"; id = recv(t, ran, "run of next") {
	}
}

func TestPanicIsRetried(t *testing.T) {
	c := open(t, Config{})
	done := make(chan jobs.Event, 10)
	work(t, c, "q", func(ctx context.Context, r Run) error {
		if r.Attempt == 1 {
			panic("kaboom")
		}
		return nil
	}, WorkOptions{
		Retry: jobs.Retry{Attempts: 3, Base: 10 * time.Millisecond},
		Hooks: jobs.Hooks{OnFinish: func(e jobs.Event) { done <- e }},
	})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "p"}); err != nil {
		t.Fatal(err)
	}
	first := recv(t, done, "first outcome")
	var pe *timingwheel.PanicError
	if first.Outcome != jobs.Retrying || !errors.As(first.Err, &pe) || pe.Value != "kaboom" {
		t.Errorf("first outcome %v, %v; want Retrying with a PanicError of kaboom", first.Outcome, first.Err)
	}
	if second := recv(t, done, "second outcome"); second.Outcome != jobs.Succeeded || second.Attempt != 2 {
		t.Errorf("second outcome %v at attempt %d, want Succeeded at 2", second.Outcome, second.Attempt)
	}
}

// A job cancelled while it runs is neither retried nor dead-lettered when
// the run fails: not by a short or a long retry, not at its last attempt.
func TestCancelWhileRunning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		retry jobs.Retry
	}{
		{"ShortRetry", jobs.Retry{Attempts: 3, Base: 10 * time.Millisecond}},
		{"LongRetry", jobs.Retry{Attempts: 3, Base: 2 * time.Second}},
		{"LastAttempt", jobs.Retry{Attempts: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := open(t, Config{})
			ctx := context.Background()
			started := make(chan string, 10)
			release := make(chan struct{})
			finished := make(chan jobs.Event, 10)
			dead := make(chan DeadLetter, 10)
			work(t, c, "q", func(ctx context.Context, r Run) error {
				started <- r.ID
				if r.ID == "victim" {
					<-release
				}
				return errors.New("failed")
			}, WorkOptions{Retry: tc.retry, DeadLetter: func(d DeadLetter) { dead <- d },
				Hooks: jobs.Hooks{OnFinish: func(e jobs.Event) { finished <- e }}})
			if err := c.Enqueue(ctx, Job{Queue: "q", ID: "victim"}); err != nil {
				t.Fatal(err)
			}
			recv(t, started, "run")
			if ok, err := c.Cancel(ctx, "q", "victim"); !ok || err != nil {
				t.Fatalf("Cancel = %v, %v", ok, err)
			}
			close(release)
			e := recv(t, finished, "outcome")
			if tc.name != "ShortRetry" && e.Outcome != jobs.Canceled {
				t.Errorf("outcome %v, want %v", e.Outcome, jobs.Canceled)
			}
			// A withdrawn job's nak or acknowledgement is not confirmed
			// (statsSettle).
			if st := statsSettle(t, c, Stats{}); st != (Stats{}) {
				t.Errorf("Stats = %+v; want nothing left", st)
			}
			if len(dead) != 0 {
				t.Errorf("cancelled job dead-lettered: %+v", <-dead)
			}
			// A sentinel run after any retry would have come.
			if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "sentinel"}, 2500*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if id := recv(t, started, "sentinel"); id != "sentinel" {
				t.Errorf("%s ran after Cancel", id)
			}
		})
	}
}
