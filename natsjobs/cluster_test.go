package natsjobs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// cluster is three nats-servers in this process, each with JetStream and
// its own store directory, routed to each other on loopback ports the OS
// picked (a clustered JetStream server needs its routes up front, so
// route ports are reserved before the first start; client ports are
// picked at the first start and kept for restarts).
type cluster struct {
	t      testing.TB
	dirs   [3]string
	client [3]int // client ports
	route  [3]int // cluster (route) ports
	srv    [3]*server.Server
}

func startCluster(t testing.TB) *cluster {
	t.Helper()
	cl := &cluster{t: t}
	for i := range cl.srv {
		cl.dirs[i] = t.TempDir()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cl.route[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	var wg sync.WaitGroup
	for i := range cl.srv {
		wg.Go(func() { cl.start(i) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() {
		for i := range cl.srv {
			cl.stop(i)
		}
	})
	return cl
}

// start starts node i, routed to the two others.
func (cl *cluster) start(i int) {
	cl.t.Helper()
	opts := &server.Options{
		ServerName: "n" + strconv.Itoa(i),
		Host:       "127.0.0.1",
		Port:       cl.client[i],
		JetStream:  true,
		StoreDir:   cl.dirs[i],
		NoLog:      true,
		NoSigs:     true,
		Cluster: server.ClusterOpts{
			Name: "natsjobs-test",
			Host: "127.0.0.1",
			Port: cl.route[i],
		},
	}
	if opts.Port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	for j, p := range cl.route {
		if j != i {
			opts.Routes = append(opts.Routes, &url.URL{Scheme: "nats", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p))})
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		cl.t.Errorf("node %d: %v", i, err)
		return
	}
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		cl.t.Errorf("node %d did not start", i)
		return
	}
	cl.srv[i] = s
	cl.client[i] = s.Addr().(*net.TCPAddr).Port
}

func (cl *cluster) stop(i int) {
	if s := cl.srv[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		cl.srv[i] = nil
	}
}

func (cl *cluster) url(i int) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", cl.client[i])
}

// open opens a client on node i, waiting (up to a minute) for the cluster
// to elect its JetStream leaders so that Open can create R3 streams.
func (cl *cluster) open(i int, cfg Config) *Client {
	cl.t.Helper()
	cfg.URL = cl.url(i)
	if len(cfg.Queues) == 0 {
		cfg.Queues = []string{"q"}
	}
	var err error
	for wait, deadline := 50*time.Millisecond, time.Now().Add(time.Minute); time.Now().Before(deadline); wait = min(2*wait, time.Second) {
		var c *Client
		if c, err = Open(context.Background(), cfg); err == nil {
			cl.t.Cleanup(func() { c.Close() })
			return c
		}
		<-time.After(wait) // polling the cluster's election, which has no event to wait on
	}
	cl.t.Fatalf("Open on node %d: %v", i, err)
	return nil
}

// node returns the index of the node named name ("n1").
func (cl *cluster) node(name string) int {
	n, err := strconv.Atoi(name[1:])
	if err != nil || n < 0 || n >= len(cl.srv) {
		cl.t.Fatalf("unknown node %q", name)
	}
	return n
}

// tally records every handler call and every confirmed success. A job is
// an ID and the payload it was stored with (enqueueRetrying gives each of
// its calls a payload of its own): a call retried after ErrUnavailable
// whose first try had been stored after all enqueues again an ID that may
// have run already, which is a second job, with an acknowledgement of its
// own, not a second acknowledgement.
type tally struct {
	mu       sync.Mutex
	runs     map[string]int
	acked    map[string]map[string]int // ID -> payload -> confirmed successes
	payload  map[runKey]string         // the payload of each run, for onFinish
	ticks    map[int64]int             // cron runs per activation (Unix second of Scheduled)
	tickRuns map[int64][]time.Time     // the start of each cron run, per activation
	tickDone map[int64]time.Time       // when an activation's first success was confirmed
	ranJobs  int                       // distinct non-cron IDs run
	progress chan struct{}             // a token per non-cron ID run for the first time
	tick     chan time.Time            // the activation of each cron run
}

func newTally() *tally {
	return &tally{runs: map[string]int{}, acked: map[string]map[string]int{}, payload: map[runKey]string{}, ticks: map[int64]int{}, tickRuns: map[int64][]time.Time{}, tickDone: map[int64]time.Time{}, progress: make(chan struct{}, 1<<16), tick: make(chan time.Time, 1<<10)}
}

// runKey identifies a run: its ID and start time, which OnFinish's event
// carries too.
type runKey struct {
	id      string
	started int64
}

func (ta *tally) handler(ctx context.Context, r Run) error {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	ta.runs[r.ID]++
	ta.payload[runKey{r.ID, r.Started.UnixNano()}] = string(r.Payload)
	if r.ID == "tick" {
		sec := r.Scheduled.Round(time.Second).Unix()
		ta.ticks[sec]++
		ta.tickRuns[sec] = append(ta.tickRuns[sec], time.Now())
		ta.tick <- r.Scheduled
	} else if ta.runs[r.ID] == 1 {
		ta.ranJobs++
		ta.progress <- struct{}{}
	}
	return nil
}

func (ta *tally) onFinish(e jobs.Event) {
	if e.Outcome != jobs.Succeeded {
		return
	}
	ta.mu.Lock()
	defer ta.mu.Unlock()
	k := runKey{e.ID, e.Started.UnixNano()}
	if ta.acked[e.ID] == nil {
		ta.acked[e.ID] = map[string]int{}
	}
	ta.acked[e.ID][ta.payload[k]]++
	if sec := e.Scheduled.Round(time.Second).Unix(); e.ID == "tick" && ta.tickDone[sec].IsZero() {
		ta.tickDone[sec] = time.Now()
	}
	delete(ta.payload, k)
}

// waitRan waits until the jobs ids have run; if they have not within
// 30 s, it fails with the missing ones and the state of the work stream
// (c is any live client).
func (ta *tally) waitRan(t testing.TB, c *Client, ids []string) {
	t.Helper()
	for {
		ta.mu.Lock()
		got := ta.ranJobs
		ta.mu.Unlock()
		if got >= len(ids) {
			return
		}
		select {
		case <-ta.progress:
			continue
		case <-time.After(30 * time.Second):
		}
		ta.mu.Lock()
		var missing []string
		for _, id := range ids {
			if ta.runs[id] == 0 {
				missing = append(missing, id)
			}
		}
		ta.mu.Unlock()
		t.Errorf("%d of %d jobs ran; missing: %v", got, len(ids), missing)
		if s, err := c.js.Stream(context.Background(), workStream("q")); err == nil {
			st := s.CachedInfo().State
			t.Errorf("work stream: %d messages, subjects %v", st.Msgs, st.NumSubjects)
		}
		if ci, err := c.js.Consumer(context.Background(), workStream("q"), workerConsumer); err == nil {
			info := ci.CachedInfo()
			t.Errorf("consumer: pending %d, ack pending %d, redelivered %d, delivered %+v, ack floor %+v", info.NumPending, info.NumAckPending, info.NumRedelivered, info.Delivered, info.AckFloor)
		}
		t.FailNow()
	}
}

// retrying calls f until it returns nil, again while it fails with an
// outage (a request to a busy cluster on a loaded machine times out), for
// up to a minute.
func retrying(t testing.TB, what string, f func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if err = f(); err == nil || !isOutage(err) {
			break
		}
		t.Logf("%s: %v (retrying)", what, err)
		<-time.After(100 * time.Millisecond) // polling the election
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// enqueueRetrying stores jobs prefix0 ... prefix<n-1> due at at (zero:
// now) through c, calling again while the cluster is electing a new
// leader (ErrUnavailable). Enqueueing is idempotent by ID only while the
// job is pending: a job that the failed call stored after all, and that
// ran meanwhile, is enqueued again. So each call stores its own payload
// ("try 1", "try 2", ...), which the tally tells apart.
func enqueueRetrying(t testing.TB, c *Client, prefix string, n int, at time.Time) []string {
	t.Helper()
	batch := make([]Job, n)
	ids := make([]string, n)
	for i := range batch {
		ids[i] = prefix + strconv.Itoa(i)
		batch[i] = Job{Queue: "q", ID: ids[i]}
	}
	var err error
	for try, deadline := 1, time.Now().Add(time.Minute); time.Now().Before(deadline); try++ {
		payload := []byte("try " + strconv.Itoa(try))
		for i := range batch {
			batch[i].Payload = payload
		}
		if err = c.EnqueueBatch(context.Background(), at, batch...); err == nil {
			if try > 1 {
				t.Logf("EnqueueBatch %s: stored at try %d", prefix, try)
			}
			return ids
		}
		if !errors.Is(err, ErrUnavailable) {
			break
		}
		<-time.After(100 * time.Millisecond) // polling the election
	}
	t.Fatalf("EnqueueBatch %s: %v", prefix, err)
	return nil
}

// The Replicas: 3 proof: three servers, three clients, one worker on each
// node; the work stream's leader is shut down while jobs (due now, due
// later, a per-second cron job) are running, and later comes back. Every
// job runs and is acknowledged once, the cron job runs once per
// activation, and work goes on through the loss and the return.
//
// What it caught: a server shutting down answers "no message found" for
// any sequence (its store is closed), and a worker that acknowledged a
// delivery on that wrong "gone" lost the job (14 jobs, once in about 20
// runs); the stored check now drops such a copy without an answer. And
// "acknowledged twice": the server confirms the acknowledgement of a stale
// delivery too, which TestLapsedClaimSucceedsOnce pins. Its enqueues
// retried after ErrUnavailable carry a payload per try, since a try whose
// answer was lost may have stored jobs that ran before the retry.
func TestClusterR3LosesNothing(t *testing.T) {
	t.Parallel()
	cl := startCluster(t)
	cfg := Config{Replicas: 3, AckWait: 2 * time.Second}
	var cs [3]*Client
	for i := range cs {
		cs[i] = cl.open(i, cfg)
	}
	ctx := context.Background()
	// R5 needs five servers: Open says so.
	if _, err := Open(ctx, Config{URL: cl.url(0), Queues: []string{"r5"}, Replicas: 5}); err == nil || !strings.Contains(err.Error(), "Replicas 5") {
		t.Errorf("Open with Replicas 5 on 3 servers: got %v, want an error naming Replicas 5", err)
	}
	for _, name := range []string{workStream("q"), deadStream("q")} {
		var s jetstream.Stream
		retrying(t, "stream "+name, func() (err error) { s, err = cs[0].js.Stream(ctx, name); return err })
		if got := s.CachedInfo().Config.Replicas; got != 3 {
			t.Errorf("stream %s: Replicas %d, want 3", name, got)
		}
	}
	ta := newTally()
	opts := WorkOptions{Concurrency: 4, Hooks: jobs.Hooks{OnFinish: ta.onFinish}}
	for i := range cs {
		work(t, cs[i], "q", ta.handler, opts)
	}

	n := size(300, 3000)
	var ids []string
	if err := cs[1].EnqueueCron(ctx, Job{Queue: "q", ID: "tick"}, "* * * * * *", nil); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, enqueueRetrying(t, cs[0], "now-a-", n, time.Time{})...)
	ids = append(ids, enqueueRetrying(t, cs[1], "later-a-", n/2, time.Now().Add(1500*time.Millisecond))...)
	ta.waitRan(t, cs[0], ids[:n/2])
	// Open and Work set the consumers up with the same Replicas.
	var ci jetstream.Consumer
	retrying(t, "consumer "+workerConsumer, func() (err error) { ci, err = cs[0].js.Consumer(ctx, workStream("q"), workerConsumer); return err })
	if got := ci.CachedInfo().Config.Replicas; got != 3 {
		t.Errorf("consumer %s: Replicas %d, want 3", workerConsumer, got)
	}

	var s jetstream.Stream
	retrying(t, "stream "+workStream("q"), func() (err error) { s, err = cs[0].js.Stream(ctx, workStream("q")); return err })
	leader := s.CachedInfo().Cluster.Leader
	victim := cl.node(leader)
	stopped := time.Now()
	cl.stop(victim)
	down := time.Now()
	t.Logf("stopped %s, the work stream's leader, after %d runs", leader, n/2)
	live := cs[(victim+1)%3]
	ids = append(ids, enqueueRetrying(t, live, "now-b-", n, time.Time{})...)
	ids = append(ids, enqueueRetrying(t, live, "later-b-", n/2, time.Now().Add(1500*time.Millisecond))...)
	ta.waitRan(t, live, ids)

	cl.start(victim)
	restarted := time.Now()
	back := cl.open(victim, cfg)
	ids = append(ids, enqueueRetrying(t, back, "back-", n/2, time.Time{})...)
	ids = append(ids, enqueueRetrying(t, back, "back-later-", n/2, time.Now().Add(1500*time.Millisecond))...)
	ta.waitRan(t, back, ids)
	// The cron job still fires after the loss and the return.
	for at := recv(t, ta.tick, "cron run"); !at.After(restarted); at = recv(t, ta.tick, "cron run after the restart") {
	}
	cancelled := time.Now()
	if ok, err := live.Cancel(ctx, "q", "tick"); !ok || err != nil {
		t.Errorf("Cancel(tick) = %v, %v; want true, nil", ok, err)
	}

	ta.mu.Lock()
	defer ta.mu.Unlock()
	// Lost: never ran. A success whose confirmation was lost with the
	// leader may have been stored all the same (then the job does not
	// come back): such runs are counted, not failed.
	lost, dupRuns, unconfirmed, reEnqueued := 0, 0, 0, 0
	for _, id := range ids {
		switch {
		case ta.runs[id] == 0:
			lost++
		case ta.runs[id] > 1:
			dupRuns++
		}
		for payload, n := range ta.acked[id] {
			if n > 1 {
				t.Errorf("job %s (stored by EnqueueBatch's %s) acknowledged %d times, want 1", id, payload, n)
			}
		}
		switch jobs := len(ta.acked[id]); {
		case jobs == 0:
			unconfirmed++
		case jobs > 1:
			reEnqueued++
		}
	}
	if lost != 0 {
		t.Errorf("%d jobs: %d lost; want 0", len(ids), lost)
	}
	if reEnqueued > 0 {
		t.Logf("%d IDs acknowledged once for each of two enqueues (a batch retried after ErrUnavailable had stored them and they had run)", reEnqueued)
	}
	// An activation runs once, or twice if it was in flight when the
	// leader stopped: its run started before the leader was down and its
	// success was not confirmed when the stop began ("One of N" in the package doc: a job runs
	// twice only if its worker lost the server before its success was
	// stored; the redelivery finds the activation still current, since
	// the next one cannot fire while the stream has no leader).
	for sec, k := range ta.ticks {
		if k == 1 {
			continue
		}
		first, done := slices.MinFunc(ta.tickRuns[sec], time.Time.Compare), ta.tickDone[sec]
		inFlight := first.Before(down) && (done.IsZero() || done.After(stopped))
		at := time.Unix(sec, 0).UTC().Format(time.TimeOnly)
		if k > 2 || !inFlight {
			t.Errorf("cron activation %s ran %d times (first at %s, success confirmed at %s), want 1, or 2 if in flight when the leader stopped (%s to %s; restarted at %s, Cancel at %s)", at, k,
				first.UTC().Format(timeMilli), done.UTC().Format(timeMilli), stopped.UTC().Format(timeMilli), down.UTC().Format(timeMilli), restarted.UTC().Format(timeMilli), cancelled.UTC().Format(timeMilli))
		} else {
			t.Logf("cron activation %s ran twice: in flight when the leader stopped", at)
		}
	}
	if len(ta.ticks) < 2 {
		t.Errorf("cron job ran at %d activations, want several", len(ta.ticks))
	}
	t.Logf("%d jobs, %d run more than once and %d with no confirmed outcome (in flight at the loss); cron ran at %d activations", len(ids), dupRuns, unconfirmed, len(ta.ticks))
}

// timeMilli formats the moments a failure of TestClusterR3LosesNothing
// relates its cron runs to.
const timeMilli = "15:04:05.000"

// Replicas takes 1, 3 or 5; zero means 1. Everything else is refused
// before anything is sent to a server.
func TestReplicasValidated(t *testing.T) {
	for _, tc := range []struct {
		replicas int
		want     string
	}{
		{-1, "out of range"}, {2, "use 1, 3 or 5"}, {4, "use 1, 3 or 5"}, {6, "out of range"},
		{3, "needs a cluster"}, {5, "needs a cluster"},
	} {
		_, err := Open(context.Background(), Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"q"}, Replicas: tc.replicas})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Replicas %d: got %v, want ErrInvalid mentioning %q", tc.replicas, err, tc.want)
		}
		cfg := Config{URL: "nats://127.0.0.1:1", Queues: []string{"q"}, Replicas: tc.replicas}
		if err := cfg.validate(); (err == nil) != (tc.replicas == 3 || tc.replicas == 5) {
			t.Errorf("Replicas %d with a URL: validate = %v", tc.replicas, err)
		}
	}
	cfg := Config{URL: "nats://127.0.0.1:1", Queues: []string{"q"}}
	if err := cfg.validate(); err != nil || cfg.Replicas != 1 {
		t.Errorf("Replicas 0: validate = %v, Replicas %d; want nil, 1", err, cfg.Replicas)
	}
}

// restart starts the stopped nodes again, in parallel (each waits for its
// routes to the others).
func (cl *cluster) restart(nodes ...int) {
	cl.t.Helper()
	var wg sync.WaitGroup
	for _, i := range nodes {
		wg.Go(func() { cl.start(i) })
	}
	wg.Wait()
	if cl.t.Failed() {
		cl.t.FailNow()
	}
}

// A Work call started while the cluster has lost its quorum does not fail:
// its setup gets ErrUnavailable and is retried, and once the quorum is back
// it runs the jobs. Calls made meanwhile fail with ErrUnavailable, within
// Config.Timeout. (Work returned "consumer advisories: context deadline
// exceeded" when its setup ran during an election.)
func TestClusterWorkStartsWithoutQuorum(t *testing.T) {
	cl := startCluster(t)
	c := cl.open(0, Config{Replicas: 3, Timeout: time.Second})
	cl.stop(1)
	cl.stop(2)

	failed := make(chan error, 1)
	testHookSetupFailed = func(err error) {
		select {
		case failed <- err:
		default:
		}
	}
	t.Cleanup(func() { testHookSetupFailed = nil })
	ran := make(chan string, 16)
	stop := work(t, c, "q", func(_ context.Context, r Run) error {
		ran <- r.ID
		return nil
	}, WorkOptions{})
	if err := recv(t, failed, "failed setup"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Work's setup without quorum failed with %v, want ErrUnavailable", err)
	}
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "during"}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Enqueue without quorum: got %v, want ErrUnavailable", err)
	}

	cl.restart(1, 2)
	// "during" may have been stored after all (its answer lost): it may
	// run too, once.
	ids := enqueueRetrying(t, c, "after-", 1, time.Time{})
	for id := recv(t, ran, "run after the quorum returned"); id != ids[0]; id = recv(t, ran, "run of "+ids[0]) {
		if id != "during" {
			t.Errorf("ran %q, want %q or %q", id, "during", ids[0])
		}
	}
	stop() // fails the test if Work returned an error
}
