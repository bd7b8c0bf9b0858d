package natsjobs

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
)

func TestEnqueueRunsEachJobOnce(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	const n = 200
	for i := range n {
		if err := c.Enqueue(ctx, Job{Queue: "q", ID: fmt.Sprint("job-", i), Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	runs := make(chan Run, n*2)
	work(t, c, "q", func(ctx context.Context, r Run) error { runs <- r; return nil }, WorkOptions{Concurrency: 4})
	seen := map[string]int{}
	for range n {
		r := recv(t, runs, "run")
		seen[r.ID]++
		if want := r.ID[len("job-"):]; string(r.Payload) != want {
			t.Errorf("job %s: payload %q, want %q", r.ID, r.Payload, want)
		}
		if r.Attempt != 1 {
			t.Errorf("job %s: attempt %d, want 1", r.ID, r.Attempt)
		}
	}
	if len(seen) != n {
		t.Errorf("got %d distinct jobs, want %d", len(seen), n)
	}
}

func TestDelayedJobNeverEarly(t *testing.T) {
	t.Parallel()
	c := open(t, Config{})
	ctx := context.Background()
	type got struct {
		r   Run
		now time.Time
	}
	runs := make(chan got, 10)
	work(t, c, "q", func(ctx context.Context, r Run) error { runs <- got{r, time.Now()}; return nil }, WorkOptions{Concurrency: 4})
	delays := []time.Duration{50 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond, 2200 * time.Millisecond}
	due := map[string]time.Time{}
	for i, d := range delays {
		id := fmt.Sprint("d", i)
		due[id] = time.Now().Add(d)
		if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: id}, due[id]); err != nil {
			t.Fatal(err)
		}
	}
	for range delays {
		g := recv(t, runs, "run")
		if g.now.Before(due[g.r.ID]) {
			t.Errorf("job %s ran %v early", g.r.ID, due[g.r.ID].Sub(g.now))
		}
		if !g.r.Scheduled.Equal(due[g.r.ID]) {
			t.Errorf("job %s: Scheduled %v, want %v", g.r.ID, g.r.Scheduled, due[g.r.ID])
		}
		t.Logf("%s late by %v", g.r.ID, g.now.Sub(due[g.r.ID]))
	}
}

// A delivery that runs, or waits for a free runner, longer than AckWait is
// kept alive from its receipt: the server does not hand it to another
// worker. "held" reaches the worker early and waits in the wheel; it falls
// due while "slow" keeps the only runner busy, and waits for it about two
// AckWaits.
func TestWaitingDeliveryKeptAlive(t *testing.T) {
	c := open(t, Config{AckWait: time.Second})
	ctx := context.Background()
	held := make(chan string, 1)
	testHookHeld = func(id string, _ time.Time) { held <- id }
	t.Cleanup(func() { testHookHeld = nil })
	runs := make(chan string, 10)
	fn := func(ctx context.Context, r Run) error {
		runs <- r.ID
		if r.ID == "slow" {
			<-time.After(3 * time.Second) // simulated long work, not synchronization
		}
		return nil
	}
	work(t, c, "q", fn, WorkOptions{Concurrency: 1})
	if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "held"}, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	recv(t, held, "held delivery")
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "slow"}); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{recv(t, runs, "slow run"): 1}
	// An idle worker, which would get "held" back if its claim lapsed.
	work(t, c, "q", fn, WorkOptions{Concurrency: 1})
	if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "last"}, 4*time.Second); err != nil {
		t.Fatal(err)
	}
	for id := ""; id != "last"; {
		id = recv(t, runs, "run")
		count[id]++
	}
	if count["slow"] != 1 || count["held"] != 1 {
		t.Errorf("runs %v, want slow and held once each", count)
	}
}

// A pull request lost without a word from the server (a connection cut,
// a server killed) is asked again once two heartbeats are missed: here
// the first request never leaves, and the job still runs.
func TestLostPullRequestAskedAgain(t *testing.T) {
	c := open(t, Config{})
	var lost atomic.Bool
	testHookLosePull = func() bool { return lost.CompareAndSwap(false, true) }
	t.Cleanup(func() { testHookLosePull = nil })
	ran := make(chan string, 1)
	work(t, c, "q", func(ctx context.Context, r Run) error { ran <- r.ID; return nil }, WorkOptions{})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if id := recv(t, ran, "run after the lost pull request"); id != "a" {
		t.Errorf("ran %s, want a", id)
	}
	if !lost.Load() {
		t.Error("no pull request was lost")
	}
}

// A Work call asks the server for a delivery only when a runner is free:
// while its one runner is busy, the next job stays on the server for
// another worker. (With the client library's Consume, the busy worker had
// already received it, and the other worker never saw it.)
func TestPullOnlyWhenRunnerFree(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	release := make(chan struct{})
	first := make(chan string, 2)
	work(t, c, "q", func(ctx context.Context, r Run) error {
		first <- r.ID
		<-release
		return nil
	}, WorkOptions{Concurrency: 1})
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	recv(t, first, "run of a")
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "b"}); err != nil {
		t.Fatal(err)
	}
	second := make(chan string, 1)
	work(t, c, "q", func(ctx context.Context, r Run) error {
		second <- r.ID
		return nil
	}, WorkOptions{Concurrency: 1})
	if id := recv(t, second, "run of b by the idle worker"); id != "b" {
		t.Errorf("idle worker ran %s, want b", id)
	}
	close(release)
	if len(first) != 0 {
		t.Errorf("busy worker ran %s too", <-first)
	}
}

// Deliveries held in the wheel until due count against the consumer's
// limit of unacknowledged messages: with the server's default of 1000, a
// burst of more early deliveries than that waited on the server until the
// first ones ran, and started late. All of them must reach the worker
// ahead of their time.
func TestHeldDeliveriesNotCapped(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	const n = 1100
	due := strconv.FormatInt(time.Now().Add(time.Minute).UnixNano(), 10)
	// Ready messages due in a minute, as a schedule would hand them over a
	// second ahead: each is held by the worker that receives it.
	for i := range n {
		msg, err := c.prepare(Job{Queue: "q", ID: fmt.Sprint("h", i)}, time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		msg.Header[hdrDue] = []string{due}
		if err := c.publish(ctx, msg, "test"); err != nil {
			t.Fatal(err)
		}
	}
	held := make(chan string, n)
	testHookHeld = func(id string, _ time.Time) { held <- id }
	t.Cleanup(func() { testHookHeld = nil })
	work(t, c, "q", func(context.Context, Run) error { return nil }, WorkOptions{Concurrency: 1})
	for range n {
		recv(t, held, "held delivery")
	}
	want := Stats{Running: n}
	if st := statsNow(t, c); st != want {
		t.Errorf("Stats = %+v, want all %d held by the worker", st, n)
	}
}

// Work stopped by its ctx while it still sets up its consumer returns nil,
// as any stop does, not the setup's cancelled request.
func TestWorkCancelledDuringSetup(t *testing.T) {
	c := open(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Work(ctx, "q", func(context.Context, Run) error { return nil }, WorkOptions{}); err != nil {
		t.Errorf("Work with a cancelled ctx: %v, want nil", err)
	}
}

// Two runs of one job whose first claim lapsed (here the keeper is off; in
// a cluster its signals are lost while the consumer elects a leader): the
// server confirms the acknowledgement of every delivery of a message, so
// both successes used to be confirmed and reported, whichever finished
// first (the cluster test's "acknowledged twice"). Now the first to delete
// the message stores the outcome: one Succeeded, in either order.
func TestLapsedClaimSucceedsOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first int // the attempt whose outcome is stored first
	}{{"RedeliveryStoresFirst", 2}, {"LapsedRunStoresFirst", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			testHookNoKeep = true
			t.Cleanup(func() { testHookNoKeep = false })
			c := open(t, Config{AckWait: time.Second})
			started := [3]chan struct{}{nil, make(chan struct{}), make(chan struct{})}
			stored := make(chan struct{}) // the first success was reported
			var once sync.Once
			succeeded := make(chan jobs.Event, 4)
			stop := work(t, c, "q", func(_ context.Context, r Run) error {
				if r.Attempt > 2 {
					t.Errorf("attempt %d, want 2 at most", r.Attempt)
					return nil
				}
				close(started[r.Attempt])
				<-started[3-r.Attempt] // both running
				if r.Attempt != tc.first {
					<-stored
				}
				return nil
			}, WorkOptions{Concurrency: 2, Hooks: jobs.Hooks{OnFinish: func(e jobs.Event) {
				if e.Outcome == jobs.Succeeded {
					succeeded <- e
					once.Do(func() { close(stored) })
				}
			}}})
			if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "a"}); err != nil {
				t.Fatal(err)
			}
			if e := recv(t, succeeded, "success"); e.Attempt != tc.first {
				t.Errorf("success of attempt %d, want %d (the first to store it)", e.Attempt, tc.first)
			}
			// Once Work returned, both runs' outcomes were reported.
			stop()
			close(succeeded)
			for e := range succeeded {
				t.Errorf("second success reported (attempt %d), want one in all", e.Attempt)
			}
		})
	}
}

// TestHandlerGoexitGivesDeliveryBack: a handler that calls runtime.Goexit
// ends its runner's goroutine; the delivery is redelivered (not held by the
// keeper forever) and a new runner takes the place of the one that exited,
// so later jobs still run with Concurrency 1.
func TestHandlerGoexitGivesDeliveryBack(t *testing.T) {
	c := open(t, Config{})
	ran := make(chan Run, 8)
	stop := work(t, c, "q", func(_ context.Context, r Run) error {
		if r.ID == "a" && r.Attempt == 1 {
			runtime.Goexit()
		}
		ran <- r
		return nil
	}, WorkOptions{Concurrency: 1})
	defer stop()
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, ran, "the run after Goexit"); r.ID != "a" || r.Attempt != 2 {
		t.Errorf("ran %s attempt %d, want a attempt 2", r.ID, r.Attempt)
	}
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "b"}); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, ran, "a later job"); r.ID != "b" {
		t.Errorf("ran %s, want b", r.ID)
	}
}

// Work's pull requests ask the server for idle heartbeats every
// heartbeatEvery (500 ms), not the library's default of half the expiry
// (2.5 s): nats.go v1.55.0's Consume can skip its refill when the callback
// takes a pull's last message before the library marked that pull sent,
// and then nothing arrives until two heartbeats are missed. 20k runs on 2
// handlers stopped for 5.00 s up to three times per run before (see
// serve). The test reads the requests the worker sends to the server.
func TestPullRequestsCarryShortHeartbeat(t *testing.T) {
	c := open(t, Config{})
	reqs, err := c.nc.SubscribeSync("$JS.API.CONSUMER.MSG.NEXT." + workStream("q") + "." + workerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	work(t, c, "q", func(context.Context, Run) error { return nil }, WorkOptions{Concurrency: 2})
	m, err := reqs.NextMsg(30 * time.Second)
	if err != nil {
		t.Fatalf("no pull request seen: %v", err)
	}
	var req struct {
		Heartbeat time.Duration `json:"idle_heartbeat"`
		Expires   time.Duration `json:"expires"`
	}
	if err := json.Unmarshal(m.Data, &req); err != nil {
		t.Fatalf("pull request %q: %v", m.Data, err)
	}
	if req.Heartbeat != heartbeatEvery || req.Expires != 5*time.Second {
		t.Errorf("pull request heartbeat %v, expires %v; want %v, 5s", req.Heartbeat, req.Expires, heartbeatEvery)
	}
}
