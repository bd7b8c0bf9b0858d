package natsjobs

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

func TestCronSpec(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone database")
	}
	for _, tc := range []struct {
		spec   string
		loc    *time.Location
		stored string
	}{
		{"*/5 * * * *", nil, "CRON_TZ=UTC */5 * * * *"},
		{"30 0 9 * * MON-FRI", berlin, "CRON_TZ=Europe/Berlin 30 0 9 * * MON-FRI"},
		{"CRON_TZ=Asia/Kolkata 0 9 * * *", nil, "CRON_TZ=Asia/Kolkata 0 9 * * *"},
		{" TZ=Asia/Kolkata  0 9 * * *", berlin, "CRON_TZ=Asia/Kolkata 0 9 * * *"},
		{"@hourly", time.UTC, "CRON_TZ=UTC @hourly"},
		{"@every 90s", berlin, "CRON_TZ=Europe/Berlin @every 90s"},
	} {
		sched, stored, err := cronSpec(tc.spec, tc.loc)
		if err != nil || stored != tc.stored {
			t.Errorf("cronSpec(%q) = %q, %v; want %q", tc.spec, stored, err, tc.stored)
			continue
		}
		// Workers parse the stored text again: same schedule.
		again, err := (&Client{}).schedule(stored)
		if err != nil {
			t.Errorf("schedule(%q): %v", stored, err)
			continue
		}
		from := time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC)
		for range 5 {
			a, b := sched.Next(from), again.Next(from)
			if !a.Equal(b) {
				t.Errorf("%q: Next(%v) = %v as enqueued, %v as stored", tc.spec, from, a, b)
			}
			from = a
		}
	}
}

// A cron job every second: the server fires it once per second however
// many workers share the queue, and Cancel stops it.
func TestCronEverySecond(t *testing.T) {
	t.Parallel()
	c := open(t, Config{})
	ctx := context.Background()
	runs := make(chan Run, 100)
	fn := func(ctx context.Context, r Run) error { runs <- r; return nil }
	stop1 := work(t, c, "q", fn, WorkOptions{})
	stop2 := work(t, c, "q", fn, WorkOptions{})
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		berlin = nil
	}
	if err := c.EnqueueCron(ctx, Job{Queue: "q", ID: "tick", Payload: []byte("t")}, "* * * * * *", berlin); err != nil {
		t.Fatal(err)
	}
	seconds := map[int64]int{}
	for range 3 {
		r := recv(t, runs, "cron run")
		if r.ID != "tick" || string(r.Payload) != "t" {
			t.Errorf("run %+v, want tick with payload t", r)
		}
		seconds[r.Scheduled.Round(time.Second).Unix()]++
	}
	for s, n := range seconds {
		if n != 1 {
			t.Errorf("second %d: %d runs, want 1", s, n)
		}
	}
	// With no worker running, the job stays: its next activation waits
	// as Pending, or as Due once it fired.
	stop1()
	stop2()
	if st, err := c.Stats(ctx, "q"); err != nil || st.Pending+st.Due != 1 {
		t.Errorf("Stats = %+v, %v; want the job Pending or Due", st, err)
	}
	work(t, c, "q", fn, WorkOptions{})
	if ok, err := c.Cancel(ctx, "q", "tick"); !ok || err != nil {
		t.Fatalf("Cancel = %v, %v", ok, err)
	}
	// A sentinel due after the next activation: once it ran, a
	// surviving schedule would have fired too.
	if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "last"}, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	extra := 0
	for r := recv(t, runs, "sentinel"); r.ID != "last"; r = recv(t, runs, "sentinel") {
		extra++
	}
	if extra > 1 { // one activation may have been in flight at Cancel
		t.Errorf("%d runs after Cancel, want at most 1 in flight", extra)
	}
}

// The cron proof, 20 s long, so only with NATSJOBS_FULL=1: a
// per-second cron job runs 10 ± 1 times in 10 s, and after the embedded
// server was down for 5 s it catches up with one run, not five.
func TestCronTenSecondsAndOutage(t *testing.T) {
	t.Parallel()
	if size(0, 1) == 0 {
		t.Skip("set NATSJOBS_FULL=1 (20 s of cron)")
	}
	dir := t.TempDir()
	ctx := context.Background()
	cfg := Config{Server: embedded.Server{StoreDir: dir}, Queues: []string{"q"}}
	runs := make(chan Run, 100)
	fn := func(ctx context.Context, r Run) error { runs <- r; return nil }
	c := open(t, cfg)
	stop := work(t, c, "q", fn, WorkOptions{})
	if err := c.EnqueueCron(ctx, Job{Queue: "q", ID: "tick"}, "* * * * * *", nil); err != nil {
		t.Fatal(err)
	}
	first := recv(t, runs, "first run")
	end := first.Started.Add(10 * time.Second)
	n := 1
	for r := recv(t, runs, "run"); r.Started.Before(end); r = recv(t, runs, "run") {
		n++
	}
	if n < 9 || n > 11 {
		t.Errorf("%d runs in 10 s, want 10 ± 1", n)
	}
	stop()
	c.Close()
	for len(runs) > 0 {
		<-runs
	}
	<-time.After(5 * time.Second) // the outage itself, not synchronization
	back := time.Now()
	c = open(t, cfg)
	work(t, c, "q", fn, WorkOptions{})
	catchUp := 0
	for r := recv(t, runs, "run after the outage"); r.Started.Before(back.Add(1500 * time.Millisecond)); r = recv(t, runs, "run") {
		catchUp++
	}
	if catchUp > 2 {
		t.Errorf("%d runs in the 1.5 s after a 5 s outage, want the one catch-up (and at most one regular tick)", catchUp)
	}
	t.Logf("%d runs in 10 s; %d in the 1.5 s after a 5 s outage", n, catchUp)
}

// A worker that received an activation and died before storing the next
// one (here: a bare fetch of the workers' consumer that never answers)
// does not end the chain: the server gives the activation to another
// worker after AckWait, which runs it late, stores its successor, and
// the job goes on once per activation.
func TestCronChainSurvivesWorkerDeathBeforeRearm(t *testing.T) {
	t.Parallel()
	c := open(t, Config{AckWait: time.Second})
	ctx := context.Background()
	if err := c.EnqueueCron(ctx, Job{Queue: "q", ID: "tick"}, "* * * * * *", nil); err != nil {
		t.Fatal(err)
	}
	cons, err := c.js.Consumer(ctx, workStream("q"), workerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var lost jetstream.Msg
	for m := range batch.Messages() {
		lost = m
	}
	if lost == nil {
		t.Fatalf("no activation fetched: %v", batch.Error())
	}
	ns, _ := strconv.ParseInt(lost.Headers().Get(hdrDue), 10, 64)
	first := time.Unix(0, ns)

	runs := make(chan Run, 100)
	work(t, c, "q", func(ctx context.Context, r Run) error { runs <- r; return nil }, WorkOptions{})
	r := recv(t, runs, "the lost activation")
	if !r.Scheduled.Equal(first) || r.Attempt != 2 {
		t.Fatalf("first run: Scheduled %v, Attempt %d; want the lost activation %v, attempt 2", r.Scheduled, r.Attempt, first)
	}
	prev := r.Scheduled
	for range 3 {
		r := recv(t, runs, "next activation")
		if !r.Scheduled.After(prev) || r.Scheduled.Nanosecond() != 0 || r.Attempt != 1 {
			t.Fatalf("run after %v: Scheduled %v, Attempt %d; want a later whole second, attempt 1", prev, r.Scheduled, r.Attempt)
		}
		prev = r.Scheduled
	}
}

// A worker process SIGKILLed while it runs an activation has already
// stored the next one: the chain goes on in the other workers, each
// activation once.
func TestCronChainSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	c := open(t, Config{Server: embedded.Server{Listen: "127.0.0.1:0"}})
	ctx := context.Background()
	events := make(chan childEvent, 100)
	ch := startChild(t, 0, c.URL(), 1, events)
	if ev := recv(t, events, "child ready"); ev.kind != "ready" {
		t.Fatalf("child said %q, want ready", ev.kind)
	}
	if err := c.EnqueueCron(ctx, Job{Queue: "q", ID: "tick"}, "* * * * * *", nil); err != nil {
		t.Fatal(err)
	}
	for ev := recv(t, events, "child's run"); ev.kind != "run"; ev = recv(t, events, "child's run") {
	}
	ch.kill(t)

	runs := make(chan Run, 100)
	work(t, c, "q", func(ctx context.Context, r Run) error { runs <- r; return nil }, WorkOptions{})
	seen := map[time.Time]bool{}
	for range 4 {
		r := recv(t, runs, "activation after the kill")
		if seen[r.Scheduled] {
			t.Errorf("activation %v ran twice", r.Scheduled)
		}
		seen[r.Scheduled] = true
	}
}

// Enqueueing a cron job again with a new spec replaces the chain even
// while an activation of the old spec is held by a worker that dies (a
// bare fetch that never answers): that activation neither runs nor
// stores its successor when the server gives it back.
func TestCronReenqueueWithdrawsActivationInFlight(t *testing.T) {
	t.Parallel()
	c := open(t, Config{AckWait: time.Second})
	ctx := context.Background()
	if err := c.EnqueueCron(ctx, Job{Queue: "q", ID: "tick"}, "* * * * * *", nil); err != nil {
		t.Fatal(err)
	}
	cons, err := c.js.Consumer(ctx, workStream("q"), workerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for range batch.Messages() {
		held++
	}
	if held != 1 {
		t.Fatalf("fetched %d activations, want 1: %v", held, batch.Error())
	}
	if err := c.EnqueueCron(ctx, Job{Queue: "q", ID: "tick"}, "@yearly", nil); err != nil {
		t.Fatal(err)
	}
	runs := make(chan Run, 100)
	work(t, c, "q", func(ctx context.Context, r Run) error { runs <- r; return nil }, WorkOptions{})
	// A sentinel due after the held activation's AckWait ran out: once
	// it ran, the old activation would have been given back.
	if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "sentinel"}, 2500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, runs, "sentinel"); r.ID != "sentinel" {
		t.Fatalf("ran %s (scheduled %v) before the sentinel; want the old spec's activations gone", r.ID, r.Scheduled)
	}
	// The sentinel's outcome may still be on its way, and the activation
	// fetched by hand was never answered: the server drops it from the
	// counts in its own time (statsSettle).
	if want, st := (Stats{Pending: 1}), statsSettle(t, c, Stats{Pending: 1}); st != want {
		t.Errorf("Stats = %+v; want %+v, the @yearly activation alone", st, want)
	}
}
