package natsjobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// listIDs lists every job of the state, page by page, and returns the IDs.
func listIDs(t *testing.T, c *Client, queue string, o ListOptions) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		p, err := c.List(context.Background(), queue, o)
		if err != nil {
			t.Fatalf("List %v: %v", o.State, err)
		}
		for _, j := range p.Jobs {
			if j.State != o.State {
				t.Errorf("List %v: job %s has State %v", o.State, j.ID, j.State)
			}
			ids = append(ids, j.ID)
		}
		if p.Next == 0 {
			return ids
		}
		if p.Next <= o.After {
			t.Fatalf("List %v: cursor went from %d to %d", o.State, o.After, p.Next)
		}
		o.After = p.Next
	}
}

// bury makes dead letters of ids in queue q, with the error "bad <id>".
func bury(t *testing.T, c *Client, ids ...string) {
	t.Helper()
	ctx := context.Background()
	dead := make(chan DeadLetter, 100)
	stop := work(t, c, "q", func(ctx context.Context, r Run) error {
		return jobs.Permanent(errors.New("bad " + r.ID))
	}, WorkOptions{DeadLetter: func(d DeadLetter) { dead <- d }})
	for _, id := range ids {
		if err := c.Enqueue(ctx, Job{Queue: "q", ID: id, Payload: []byte("p-" + id)}); err != nil {
			t.Fatal(err)
		}
	}
	for range ids {
		recv(t, dead, "dead letter")
	}
	stop()
}

func TestListByState(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	bury(t, c, "d-1", "d-2")
	if err := c.Pause(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"p-1", "p-2", "x-3"} {
		if err := c.Enqueue(ctx, Job{Queue: "q", ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"s-1", "s-2"} {
		if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: id}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.EnqueueCron(ctx, Job{Queue: "q", ID: "cron-1"}, "@daily", nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    ListOptions
		want []string
	}{
		{"Pending", ListOptions{State: Pending}, []string{"p-1", "p-2", "x-3"}},
		{"PendingPrefix", ListOptions{State: Pending, Prefix: "p-"}, []string{"p-1", "p-2"}},
		{"PendingPages", ListOptions{State: Pending, Limit: 1}, []string{"p-1", "p-2", "x-3"}},
		{"Scheduled", ListOptions{State: Scheduled}, []string{"s-1", "s-2", "cron-1"}},
		{"ScheduledPrefix", ListOptions{State: Scheduled, Prefix: "cron"}, []string{"cron-1"}},
		{"Running", ListOptions{State: Running}, nil},
		{"Dead", ListOptions{State: Dead}, []string{"d-1", "d-2"}},
		{"DeadNoMatch", ListOptions{State: Dead, Prefix: "zzz"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := listIDs(t, c, "q", tc.o); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	p, err := c.List(ctx, "q", ListOptions{State: Dead, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Jobs) != 1 || p.Jobs[0].LastError != "bad d-1" || p.Jobs[0].Attempts != 1 || string(p.Jobs[0].Payload) != "p-d-1" || p.Jobs[0].Failed.IsZero() {
		t.Errorf("dead letter: got %+v, want d-1 with error %q, 1 attempt, payload p-d-1, a Failed time", p.Jobs, "bad d-1")
	}
	for _, tc := range []struct {
		name string
		o    ListOptions
	}{
		{"NoState", ListOptions{}},
		{"BadState", ListOptions{State: Dead + 1}},
		{"NegativeLimit", ListOptions{State: Dead, Limit: -1}},
		{"HugeLimit", ListOptions{State: Dead, Limit: 1001}},
	} {
		if _, err := c.List(ctx, "q", tc.o); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", tc.name, err)
		}
	}
	if _, err := c.List(ctx, "other", ListOptions{State: Dead}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown queue: got %v, want ErrInvalid", err)
	}
}

// A page reads from the server about as many jobs as it returns, not the
// whole queue: List holds one page in memory.
func TestListReadsOnePage(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	if err := c.Pause(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	batch := make([]Job, n)
	for i := range batch {
		batch[i] = Job{Queue: "q", ID: fmt.Sprintf("j-%04d", i)}
	}
	if err := c.EnqueueBatch(ctx, time.Time{}, batch...); err != nil {
		t.Fatal(err)
	}
	read := 0
	testHookScanned = func() { read++ }
	defer func() { testHookScanned = nil }()
	p, err := c.List(ctx, "q", ListOptions{State: Pending, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Jobs) != 10 || p.Jobs[0].ID != "j-0000" || p.Next == 0 {
		t.Fatalf("first page: %d jobs from %q, Next %d; want 10 from j-0000 and a cursor", len(p.Jobs), p.Jobs[0].ID, p.Next)
	}
	if read != 10 {
		t.Errorf("a page of 10 read %d messages, want 10", read)
	}
	read = 0
	if p, err = c.List(ctx, "q", ListOptions{State: Pending, Limit: 10, Prefix: "j-00"}); err != nil || len(p.Jobs) != 10 {
		t.Fatalf("a page of 10 with a prefix: %d jobs, %v", len(p.Jobs), err)
	}
	if read > scanBatch {
		t.Errorf("a page of 10 with a prefix read %d messages, want at most one batch (%d)", read, scanBatch)
	}
	if got := listIDs(t, c, "q", ListOptions{State: Pending, Limit: 1000}); len(got) != n || got[n-1] != "j-1999" {
		t.Errorf("all pages: %d jobs, want %d ending with j-1999", len(got), n)
	}
	// A prefix reads on until the page is full or the jobs end.
	if got := listIDs(t, c, "q", ListOptions{State: Pending, Prefix: "j-19"}); len(got) != 100 {
		t.Errorf("prefix j-19: %d jobs, want 100", len(got))
	}
}

func TestGet(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	bury(t, c, "dead-1")

	// A failed run whose retry waits an hour: stored as a schedule with
	// its error, while the job runs again and blocks.
	started, release := make(chan string, 4), make(chan struct{})
	finished := make(chan jobs.Event, 4)
	work(t, c, "q", func(ctx context.Context, r Run) error {
		started <- r.ID
		if r.ID == "retry-1" {
			return errors.New("boom\nsecond line")
		}
		<-release
		return nil
	}, WorkOptions{Concurrency: 2, Retry: jobs.Retry{Attempts: 3, Base: time.Hour},
		Hooks: jobs.Hooks{OnFinish: func(e jobs.Event) { finished <- e }}})
	defer close(release)
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "retry-1"}); err != nil {
		t.Fatal(err)
	}
	recv(t, started, "run of retry-1")
	// OnFinish reports Retrying once the retry's schedule is stored.
	if e := recv(t, finished, "outcome of retry-1"); e.ID != "retry-1" || e.Outcome != jobs.Retrying {
		t.Fatalf("outcome of %s: %v, want retry-1 Retrying", e.ID, e.Outcome)
	}
	info, err := c.Get(ctx, "q", "retry-1")
	if err != nil {
		t.Fatal(err)
	}
	if info.State != Scheduled || info.Attempts != 1 || info.LastError != "boom second line" || time.Until(info.NextRun) < 59*time.Minute {
		t.Errorf("retry-1: got %v, attempts %d, error %q, next run in %v; want scheduled, 1, %q, about 1h",
			info.State, info.Attempts, info.LastError, time.Until(info.NextRun).Round(time.Second), "boom second line")
	}

	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "run-1", Payload: []byte(`{"a":1}`), Header: map[string]string{"Tenant": "t1"}}); err != nil {
		t.Fatal(err)
	}
	recv(t, started, "run of run-1")
	info, err = c.Get(ctx, "q", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if info.State != Running || string(info.Payload) != `{"a":1}` || info.Header["Tenant"] != "t1" || info.Stored.IsZero() {
		t.Errorf("run-1: got %v payload %q header %v stored %v; want running with its payload and header", info.State, info.Payload, info.Header, info.Stored)
	}

	at := time.Now().Add(2 * time.Hour).Truncate(time.Millisecond)
	if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: "later-1"}, at); err != nil {
		t.Fatal(err)
	}
	if info, err = c.Get(ctx, "q", "later-1"); err != nil || info.State != Scheduled || !info.NextRun.Equal(at) {
		t.Errorf("later-1: got %v %v, %v; want scheduled at %v", info.State, info.NextRun, err, at)
	}
	if err := c.EnqueueCron(ctx, Job{Queue: "q", ID: "cron-1"}, "0 3 * * *", nil); err != nil {
		t.Fatal(err)
	}
	if info, err = c.Get(ctx, "q", "cron-1"); err != nil || info.State != Scheduled || info.Cron != "CRON_TZ=UTC 0 3 * * *" || info.NextRun.UTC().Hour() != 3 {
		t.Errorf("cron-1: got %v cron %q next %v, %v; want scheduled at 03:00 UTC", info.State, info.Cron, info.NextRun, err)
	}
	if info, err = c.Get(ctx, "q", "dead-1"); err != nil || info.State != Dead || info.LastError != "bad dead-1" {
		t.Errorf("dead-1: got %v %q, %v; want dead with its error", info.State, info.LastError, err)
	}
	if _, err := c.Get(ctx, "q", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing job: got %v, want ErrNotFound", err)
	}
	if _, err := c.Get(ctx, "q", "bad.id"); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad ID: got %v, want ErrInvalid", err)
	}
	if got := listIDs(t, c, "q", ListOptions{State: Running}); !slices.Equal(got, []string{"run-1"}) {
		t.Errorf("running: got %q, want [run-1]", got)
	}
}

// waitConsuming waits until a Work call of queue q has set up its
// consumer and asks the server for jobs. The server's count of waiting
// requests is the only sign of that (Work sends them without an answer),
// so it asks every 10 ms, for 10 s at most.
func waitConsuming(t *testing.T, c *Client) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); <-time.After(10 * time.Millisecond) {
		info, err := c.workers(context.Background(), "q")
		if err != nil {
			t.Fatal(err)
		}
		if info.NumWaiting > 0 {
			return
		}
	}
	t.Fatal("no worker asked for jobs within 10 s")
}

// A paused queue stays paused across a restart of the server and a
// worker's setup (which rewrites the consumer's configuration), keeps
// its jobs, and runs them once resumed.
func TestPauseSurvivesRestartAndWork(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	c := open(t, Config{Server: embedded.Server{StoreDir: dir}})
	if err := c.Pause(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(ctx, "q"); err != nil {
		t.Fatalf("second Pause: %v", err)
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "held"}); err != nil {
		t.Fatal(err)
	}
	c.Close()

	c = open(t, Config{Server: embedded.Server{StoreDir: dir}})
	runs := make(chan string, 1)
	work(t, c, "q", func(ctx context.Context, r Run) error { runs <- r.ID; return nil }, WorkOptions{Retry: jobs.Retry{Attempts: 7}})
	waitConsuming(t, c)
	st, err := c.QueueStats(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Paused || st.Pending != 1 {
		t.Fatalf("after restart and Work: paused %v, pending %d; want paused with 1 pending", st.Paused, st.Pending)
	}
	select {
	case id := <-runs:
		t.Fatalf("job %s ran while the queue was paused", id)
	case <-time.After(time.Second): // a worker is asking; the server must not answer
	}
	if err := c.Resume(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if id := recv(t, runs, "run after Resume"); id != "held" {
		t.Errorf("ran %s, want held", id)
	}
	if st, err = c.QueueStats(ctx, "q"); err != nil || st.Paused {
		t.Errorf("after Resume: paused %v, %v; want not paused", st.Paused, err)
	}

	// Paused under a running Work, whose requests for jobs wait on the server.
	if err := c.Pause(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	waitConsuming(t, c)
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "held-2"}); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-runs:
		t.Fatalf("job %s ran while the queue was paused under a running Work", id)
	case <-time.After(time.Second):
	}
	if err := c.Resume(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if id := recv(t, runs, "run after the second Resume"); id != "held-2" {
		t.Errorf("ran %s, want held-2", id)
	}
}

func TestPurge(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	bury(t, c, "d-1")
	if err := c.Pause(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "p-1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "s-1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := c.EnqueueCron(ctx, Job{Queue: "q", ID: "c-1"}, "@hourly", nil); err != nil {
		t.Fatal(err)
	}
	n, err := c.Purge(ctx, "q")
	if err != nil || n != 3 {
		t.Fatalf("Purge: %d, %v; want 3", n, err)
	}
	// Purge returned: the stream is empty (but for its head marker), and
	// nothing was delivered, the queue being paused.
	st, err := c.QueueStats(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	if st.Scheduled+st.Pending+st.Running != 0 || st.Dead != 1 {
		t.Errorf("after Purge: %+v; want no live job and the dead letter", st)
	}
}

func TestRedriveAndDeleteDead(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	bury(t, c, "a-1", "a-2", "a-3", "b-1", "b-2")
	if err := c.Pause(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sel  Select
	}{
		{"Empty", Select{}},
		{"Two", Select{Prefix: "a", All: true}},
		{"BadID", Select{IDs: []string{"x y"}}},
	} {
		if _, err := c.RedriveDead(ctx, "q", tc.sel); !errors.Is(err, ErrInvalid) {
			t.Errorf("RedriveDead %s: got %v, want ErrInvalid", tc.name, err)
		}
		if _, err := c.DeleteDead(ctx, "q", tc.sel); !errors.Is(err, ErrInvalid) {
			t.Errorf("DeleteDead %s: got %v, want ErrInvalid", tc.name, err)
		}
	}
	if n, err := c.DeleteDead(ctx, "q", Select{Prefix: "b-"}); err != nil || n != 2 {
		t.Errorf("DeleteDead b-: %d, %v; want 2", n, err)
	}
	if n, err := c.RedriveDead(ctx, "q", Select{IDs: []string{"a-2", "missing"}}); err != nil || n != 1 {
		t.Errorf("RedriveDead [a-2 missing]: %d, %v; want 1", n, err)
	}
	if got := listIDs(t, c, "q", ListOptions{State: Pending}); !slices.Equal(got, []string{"a-2"}) {
		t.Errorf("pending after redrive: %q, want [a-2]", got)
	}
	if info, err := c.Get(ctx, "q", "a-2"); err != nil || info.State != Pending || string(info.Payload) != "p-a-2" || info.Attempts != 0 {
		t.Errorf("a-2: %v payload %q attempts %d, %v; want pending with its payload and no attempts", info.State, info.Payload, info.Attempts, err)
	}
	if n, err := c.RedriveDead(ctx, "q", Select{All: true}); err != nil || n != 2 {
		t.Errorf("RedriveDead all: %d, %v; want 2", n, err)
	}
	if got := listIDs(t, c, "q", ListOptions{State: Pending}); !slices.Equal(got, []string{"a-2", "a-1", "a-3"}) {
		t.Errorf("pending: %q, want [a-2 a-1 a-3]", got)
	}
	if n, err := c.Purge(ctx, "q"); err != nil || n != 3 {
		t.Errorf("Purge: %d, %v; want 3", n, err)
	}
	if err := c.Resume(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	bury(t, c, "c-1", "c-2")
	if n, err := c.DeleteDead(ctx, "q", Select{All: true}); err != nil || n != 2 {
		t.Errorf("DeleteDead all: %d, %v; want 2", n, err)
	}
	if got := listIDs(t, c, "q", ListOptions{State: Dead}); len(got) != 0 {
		t.Errorf("dead after DeleteDead all: %q", got)
	}
}

// TestQueueStatsCountsEnqueuedJob: a job whose Enqueue has returned is
// counted as Pending by the next QueueStats (and as Due by Stats), not as
// Scheduled. Pending was the consumer's NumPending, which the server
// raises on another goroutine after acknowledging the write: right after
// an Enqueue it could miss the job (ExampleClient_List flaked on it).
func TestQueueStatsCountsEnqueuedJob(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	for i := 1; i <= 100; i++ {
		if err := c.Enqueue(ctx, Job{Queue: "q", ID: fmt.Sprint("j", i)}); err != nil {
			t.Fatal(err)
		}
		st, err := c.QueueStats(ctx, "q")
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending != i || st.Scheduled != 0 {
			t.Fatalf("after enqueue %d: Pending %d, Scheduled %d; want %d, 0", i, st.Pending, st.Scheduled, i)
		}
		if i%10 != 0 {
			continue
		}
		if err := c.Enqueue(ctx, Job{Queue: "q", ID: fmt.Sprint("k", i)}); err != nil {
			t.Fatal(err)
		}
		old, err := c.Stats(ctx, "q")
		if err != nil {
			t.Fatal(err)
		}
		if want := (Stats{Due: i + 1}); old != want {
			t.Fatalf("Stats after enqueue %d: got %+v, want %+v", i, old, want)
		}
		if _, err := c.Cancel(ctx, "q", fmt.Sprint("k", i)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestQueueStats(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	bury(t, c, "d-1")
	if err := c.Pause(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "p-1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "p-2"}); err != nil {
		t.Fatal(err)
	}
	if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "s-1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	st, err := c.QueueStats(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	want := QueueStats{Queue: "q", Paused: true, Scheduled: 1, Pending: 2, Dead: 1, Buried: 1, Started: 1}
	got := st
	got.OldestPending, got.At, got.Stored = time.Time{}, time.Time{}, 0
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if st.OldestPending.Before(before) || st.OldestPending.After(time.Now()) {
		t.Errorf("OldestPending %v, want between %v and now", st.OldestPending, before)
	}
	if st.Stored < 4 {
		t.Errorf("Stored %d, want at least 4 (d-1, p-1, p-2, s-1)", st.Stored)
	}
	if _, err := c.QueueStats(ctx, "nope"); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown queue: %v, want ErrInvalid", err)
	}
}

func TestRates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	prev := QueueStats{Stored: 10, Started: 5, Buried: 1, At: t0}
	for _, tc := range []struct {
		name string
		now  QueueStats
		want Rates
	}{
		{"TwoSeconds", QueueStats{Stored: 30, Started: 9, Buried: 2, At: t0.Add(2 * time.Second)}, Rates{Stored: 10, Started: 2, Buried: 0.5}},
		{"SameTime", QueueStats{Stored: 30, At: t0}, Rates{}},
		{"Earlier", QueueStats{Stored: 30, At: t0.Add(-time.Second)}, Rates{}},
		{"CounterReset", QueueStats{Stored: 12, Started: 1, Buried: 1, At: t0.Add(time.Second)}, Rates{Stored: 2}},
	} {
		if got := tc.now.Rates(prev); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := (QueueStats{Stored: 5, At: t0}).Rates(QueueStats{}); got != (Rates{}) {
		t.Errorf("zero prev: got %+v, want zero", got)
	}
}

// An administrative client (URL, no Queues) creates nothing, finds the
// queues and works on any of them.
func TestAdminClient(t *testing.T) {
	srv := open(t, Config{Server: embedded.Server{Listen: "127.0.0.1:0"}, Queues: []string{"q", "orders_dead", "b"}})
	ctx := context.Background()
	if err := srv.Enqueue(ctx, Job{Queue: "b", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	admin, err := Open(ctx, Config{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	qs, err := admin.Queues(ctx)
	if err != nil || !slices.Equal(qs, []string{"b", "orders_dead", "q"}) {
		t.Fatalf("Queues: %q, %v; want [b orders_dead q]", qs, err)
	}
	if err := admin.Pause(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if info, err := admin.Get(ctx, "b", "x"); err != nil || info.ID != "x" {
		t.Errorf("Get b/x: %+v, %v", info, err)
	}
	if _, err := admin.List(ctx, "zzz", ListOptions{State: Pending}); !errors.Is(err, ErrNotFound) {
		t.Errorf("List of a queue the server lacks: %v, want ErrNotFound", err)
	}
	if err := admin.Pause(ctx, "zzz"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "zzz") {
		t.Errorf("Pause of a queue the server lacks: %v, want ErrNotFound naming it", err)
	}
	if qs, _ := admin.Queues(ctx); len(qs) != 3 {
		t.Errorf("the admin client created queues: %q", qs)
	}
}

// Streams without direct reads (made by an older natsjobs, or replicated
// streams whose runs read from the leader) are read through the leader's
// API, one message per request, with the same results.
func TestOpsWithoutDirectReads(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	// The dead letters first: a Replicas 1 worker may use direct reads.
	bury(t, c, "d-1", "d-2", "e-1")
	for _, name := range []string{workStream("q"), deadStream("q")} {
		s, err := c.js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.AllowDirect = false
		if _, err := c.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Pause(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"p-1", "p-2", "x-3"} {
		if err := c.Enqueue(ctx, Job{Queue: "q", ID: id, Payload: []byte("pay " + id)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "s-1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    ListOptions
		want []string
	}{
		{"Pending", ListOptions{State: Pending, Limit: 2}, []string{"p-1", "p-2", "x-3"}},
		{"PendingPrefix", ListOptions{State: Pending, Prefix: "x"}, []string{"x-3"}},
		{"Scheduled", ListOptions{State: Scheduled}, []string{"s-1"}},
		{"Dead", ListOptions{State: Dead, Limit: 1}, []string{"d-1", "d-2", "e-1"}},
	} {
		if got := listIDs(t, c, "q", tc.o); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	if j, err := c.Get(ctx, "q", "p-2"); err != nil || j.State != Pending || string(j.Payload) != "pay p-2" || j.Seq == 0 || j.Stored.IsZero() {
		t.Errorf("Get p-2: %+v, %v", j, err)
	}
	if j, err := c.Get(ctx, "q", "d-2"); err != nil || j.State != Dead || j.LastError != "bad d-2" {
		t.Errorf("Get d-2: %+v, %v", j, err)
	}
	if st, err := c.QueueStats(ctx, "q"); err != nil || st.OldestPending.IsZero() {
		t.Errorf("QueueStats: OldestPending %v, %v", st.OldestPending, err)
	}
	if n, err := c.DeleteDead(ctx, "q", Select{Prefix: "e-"}); err != nil || n != 1 {
		t.Errorf("DeleteDead e-: %d, %v; want 1", n, err)
	}
	if n, err := c.RedriveDead(ctx, "q", Select{All: true}); err != nil || n != 2 {
		t.Errorf("RedriveDead all: %d, %v; want 2", n, err)
	}
}
