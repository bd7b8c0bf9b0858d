package natsjobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// collect runs a worker that sends every run's ID and payload.
func collect(t *testing.T, c *Client) <-chan Run {
	runs := make(chan Run, 1000)
	work(t, c, "q", func(ctx context.Context, r Run) error { runs <- r; return nil }, WorkOptions{Concurrency: 4})
	return runs
}

// drainUntil receives runs until the one with ID last and returns the
// number of runs per ID and the last payload seen per ID.
func drainUntil(t *testing.T, runs <-chan Run, last string) (map[string]int, map[string]string) {
	count, payload := map[string]int{}, map[string]string{}
	for {
		r := recv(t, runs, "run of "+last)
		count[r.ID]++
		payload[r.ID] = string(r.Payload)
		if r.ID == last {
			return count, payload
		}
	}
}

// TestCancel cancels delayed and ready jobs and checks, through Stats,
// that their messages are gone, then that only the others run. (Cancel
// purges each subject with an exact filter: after a purge with a wildcard
// filter the workers consumer's pending count went stale, which this test
// caught while Stats read that count; Stats now counts the stream.)
//
// No worker runs until the checks are done, so the test assumes nothing
// about how long they take: the delayed jobs fire whenever they are due
// and wait as Due. (It once gave the checks about two seconds before the
// schedules fired, which a loaded machine under -race overran, and took
// the runs until a job due last, which a runner could deliver before a
// slower runner's earlier job.)
func TestCancel(t *testing.T) {
	t.Parallel()
	c := open(t, Config{})
	ctx := context.Background()
	n := size(40, 10_000)
	// Due after scheduleLead, so stored as schedules (unless enqueueing
	// takes longer than that, when some are stored ready: both are to be
	// cancelled the same way).
	enqueueN(t, c, n, time.Now().Add(2*scheduleLead))
	// Due now: a ready job is cancelled too.
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "now"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 2 {
		if ok, err := c.Cancel(ctx, "q", fmt.Sprint("j", i)); !ok || err != nil {
			t.Fatalf("Cancel(j%d) = %v, %v; want true, nil", i, ok, err)
		}
	}
	if ok, err := c.Cancel(ctx, "q", "now"); !ok || err != nil {
		t.Fatalf("Cancel(now) = %v, %v; want true, nil", ok, err)
	}
	if ok, err := c.Cancel(ctx, "q", "j0"); ok || err != nil {
		t.Errorf("second Cancel(j0) = %v, %v; want false, nil", ok, err)
	}
	// The n/2 jobs left are counted at once: scheduled, or due once the
	// server fired their schedule. It fires in its own time, storing the
	// copy and purging the schedule in one step under the stream's lock,
	// so their sum does not depend on when Stats reads.
	if st := statsNow(t, c); st.Pending+st.Due != n/2 || st.Running+st.Retrying+st.Dead != 0 {
		t.Errorf("Stats = %+v; want Pending+Due %d and nothing else", st, n/2)
	}
	runs := make(chan Run, n+1)
	stop := work(t, c, "q", func(ctx context.Context, r Run) error { runs <- r; return nil }, WorkOptions{Concurrency: 4})
	count := map[string]int{}
	for range n / 2 {
		count[recv(t, runs, "run").ID]++
	}
	stop() // whatever ran besides shows below
	for more := true; more; {
		select {
		case r := <-runs:
			count[r.ID]++
		default:
			more = false
		}
	}
	for i := range n {
		id := fmt.Sprint("j", i)
		if want := i % 2; count[id] != want {
			t.Errorf("%s ran %d times, want %d", id, count[id], want)
		}
	}
	if count["now"] != 0 {
		t.Errorf("cancelled ready job ran %d times", count["now"])
	}
}

func TestEnqueueSameIDReplaces(t *testing.T) {
	t.Parallel()
	c := open(t, Config{})
	ctx := context.Background()
	soon := time.Now().Add(1200 * time.Millisecond)
	// later → now: the schedule is withdrawn.
	if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: "a", Payload: []byte("old")}, soon); err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a", Payload: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	// now → later: the ready copy is withdrawn.
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "b", Payload: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: "b", Payload: []byte("new")}, soon); err != nil {
		t.Fatal(err)
	}
	// later → later: the second schedule replaces the first.
	if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: "c", Payload: []byte("old")}, soon); err != nil {
		t.Fatal(err)
	}
	if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: "c", Payload: []byte("new")}, soon.Add(200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: "last"}, soon.Add(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	// Wait for every job (on a loaded machine "last" may overtake the
	// others), then for a sentinel after all of them.
	runs := collect(t, c)
	count, payload := map[string]int{}, map[string]string{}
	for count["a"] == 0 || count["b"] == 0 || count["c"] == 0 || count["last"] == 0 {
		r := recv(t, runs, "run")
		count[r.ID]++
		payload[r.ID] = string(r.Payload)
	}
	for _, id := range []string{"a", "b", "c"} {
		if count[id] != 1 || payload[id] != "new" {
			t.Errorf("job %s ran %d times with payload %q, want once with new", id, count[id], payload[id])
		}
	}
}

// A later batch mixing IDs that have a ready message with new IDs: the
// server refuses the conditional schedules of the former, which are
// withdrawn and stored again, across more than one window.
func TestEnqueueBatchLaterMixed(t *testing.T) {
	t.Parallel()
	c := open(t, Config{})
	ctx := context.Background()
	const n = 1500
	now := make([]Job, n)
	for i := range now {
		now[i] = Job{Queue: "q", ID: fmt.Sprint("n", i)}
	}
	if err := c.EnqueueBatch(ctx, time.Time{}, now...); err != nil {
		t.Fatal(err)
	}
	var later []Job
	for i := 0; i < n; i += 2 {
		later = append(later, now[i], Job{Queue: "q", ID: fmt.Sprint("x", i)})
	}
	if err := c.EnqueueBatch(ctx, time.Now().Add(time.Minute), later...); err != nil {
		t.Fatal(err)
	}
	want := Stats{Pending: len(later), Due: n / 2}
	if st := statsNow(t, c); st != want {
		t.Errorf("Stats = %+v; want %+v", st, want)
	}
}

func TestBadInput(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	big := make([]byte, c.nc.MaxPayload())
	past := time.Now().Add(-time.Second)
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"EmptyID", func() error { return c.Enqueue(ctx, Job{Queue: "q"}) }, "empty job ID"},
		{"DotInID", func() error { return c.Enqueue(ctx, Job{Queue: "q", ID: "a.b"}) }, "not allowed"},
		{"SpaceInID", func() error { return c.Enqueue(ctx, Job{Queue: "q", ID: "a b"}) }, "not allowed"},
		{"WildcardInID", func() error { return c.Enqueue(ctx, Job{Queue: "q", ID: "a>"}) }, "not allowed"},
		{"LongID", func() error { return c.Enqueue(ctx, Job{Queue: "q", ID: strings.Repeat("x", 201)}) }, "longer than 200"},
		{"UnknownQueue", func() error { return c.Enqueue(ctx, Job{Queue: "nope", ID: "a"}) }, `unknown queue "nope"`},
		{"PayloadTooLarge", func() error { return c.Enqueue(ctx, Job{Queue: "q", ID: "a", Payload: big}) }, "over the server's limit"},
		{"ReservedHeader", func() error {
			return c.Enqueue(ctx, Job{Queue: "q", ID: "a", Header: map[string]string{"Nats-Msg-Id": "x"}})
		}, "reserved"},
		{"PastTime", func() error { return c.EnqueueAt(ctx, Job{Queue: "q", ID: "a"}, past) }, "in the past"},
		{"ZeroTime", func() error { return c.EnqueueAt(ctx, Job{Queue: "q", ID: "a"}, time.Time{}) }, "zero time"},
		{"NegativeDelay", func() error { return c.EnqueueAfter(ctx, Job{Queue: "q", ID: "a"}, -time.Second) }, "negative delay"},
		{"BadCron", func() error { return c.EnqueueCron(ctx, Job{Queue: "q", ID: "a"}, "61 * * * *", nil) }, "minute"},
		{"CronLocal", func() error { return c.EnqueueCron(ctx, Job{Queue: "q", ID: "a"}, "* * * * *", time.Local) }, "name the zone"},
		{"CancelEmptyID", func() error { _, err := c.Cancel(ctx, "q", ""); return err }, "empty job ID"},
		{"CancelUnknownQueue", func() error { _, err := c.Cancel(ctx, "x", "a"); return err }, "unknown queue"},
		{"StatsUnknownQueue", func() error { _, err := c.Stats(ctx, "x"); return err }, "unknown queue"},
		{"WorkNilFunc", func() error { return c.Work(ctx, "q", nil, WorkOptions{}) }, "nil handler"},
		{"WorkBadRetry", func() error {
			return c.Work(ctx, "q", func(context.Context, Run) error { return nil }, WorkOptions{Retry: jobs.Retry{Factor: 0.5}})
		}, "Factor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
	if st, err := c.Stats(ctx, "q"); err != nil || st != (Stats{}) {
		t.Errorf("Stats after rejected calls = %+v, %v; want all zero", st, err)
	}
}

func TestBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"NoServer", Config{Queues: []string{"q"}}, "set URL, or Server"},
		{"NoStore", Config{Server: embedded.Server{}, Queues: []string{"q"}}, "StoreDir is required"},
		{"StoreAndEphemeral", Config{Server: embedded.Server{StoreDir: "x", Ephemeral: true}, Queues: []string{"q"}}, "exclusive"},
		{"URLAndServer", Config{Server: embedded.Server{StoreDir: "x"}, URL: "nats://x", Queues: []string{"q"}}, "exclusive"},
		{"ServerAndToken", Config{Server: embedded.Server{Ephemeral: true}, Token: "t", Queues: []string{"q"}}, "go in embedded.Server"},
		{"NoQueues", Config{Server: embedded.Server{Ephemeral: true}}, "no Queues"},
		{"BadQueue", Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"a.b"}}, "only letters"},
		{"Replicas", Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"q"}, Replicas: 7}, "Replicas"},
		{"EmbeddedR3", Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"q"}, Replicas: 3}, "needs a cluster"},
		{"AckWait", Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"q"}, AckWait: time.Millisecond}, "AckWait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(context.Background(), tc.cfg)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		ok      bool
	}{
		{"2.14.0", true}, {"2.15.2", true}, {"3.0.0", true}, {"2.14.0-beta.1", true}, {"2.20", true},
		{"2.13.9", false}, {"2.10.22", false}, {"1.99.0", false}, {"", false}, {"x.y", false},
	} {
		if err := checkVersion(tc.version); (err == nil) != tc.ok {
			t.Errorf("checkVersion(%q) = %v, want ok=%v", tc.version, err, tc.ok)
		}
	}
}

func TestClosed(t *testing.T) {
	c := open(t, Config{})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	ctx := context.Background()
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Enqueue after Close: %v, want ErrClosed", err)
	}
	if err := c.Work(ctx, "q", func(context.Context, Run) error { return nil }, WorkOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Work after Close: %v, want ErrClosed", err)
	}
}

// TestEnqueueBatch stores jobs in batches and reads them back through
// Stats. Stats once counted the schedules with a separate consumer that
// was never pulled from; its counts trailed bursts of writes, so it was
// dropped for the work stream's own counts.
func TestEnqueueBatch(t *testing.T) {
	t.Parallel()
	c := open(t, Config{})
	ctx := context.Background()
	const n = 2500 // more than one window
	now := make([]Job, n)
	for i := range now {
		now[i] = Job{Queue: "q", ID: fmt.Sprint("n", i), Payload: []byte(fmt.Sprint(i))}
	}
	if err := c.EnqueueBatch(ctx, time.Time{}, now...); err != nil {
		t.Fatal(err)
	}
	// The same IDs again, later: the ready copies are withdrawn.
	due := time.Now().Add(time.Minute) // far enough that the check below sees them pending
	if err := c.EnqueueBatch(ctx, due, now[:n/2]...); err != nil {
		t.Fatal(err)
	}
	// Counted as soon as the batch returned: Due reads the stream.
	want := Stats{Pending: n / 2, Due: n - n/2}
	if st := statsNow(t, c); st != want {
		t.Errorf("Stats = %+v; want %+v", st, want)
	}
	bad := []Job{{Queue: "q", ID: "ok"}, {Queue: "q", ID: ""}}
	if err := c.EnqueueBatch(ctx, time.Time{}, bad...); !errors.Is(err, ErrInvalid) {
		t.Errorf("batch with an empty ID: %v, want ErrInvalid", err)
	}
	if err := c.EnqueueBatch(ctx, time.Now().Add(-time.Second), now[0]); !errors.Is(err, ErrInvalid) {
		t.Errorf("batch in the past: %v, want ErrInvalid", err)
	}
	if st, err := c.Stats(ctx, "q"); err != nil || st.Pending+st.Due != n {
		t.Errorf("rejected batches stored jobs: Stats = %+v, %v", st, err)
	}
}

// A later enqueue of an ID that has a ready message withdraws it, then
// stores the schedule. A ready copy stored between the two (a concurrent
// Enqueue of the ID, or an activation of its cron schedule firing; here an
// Enqueue from the test hook) must not stay beside the new schedule: the
// ID would run twice, or the activation would re-arm its cron chain over
// the schedule. The enqueues must leave one job, as if serialized: here
// the later one, whose store comes last. (replaceReady published
// unconditionally after its purge, and left both.)
func TestEnqueueLaterReplacesReadyCopyStoredMeanwhile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		enqueue func(c *Client, j Job, at time.Time) error
	}{
		{"EnqueueAt", func(c *Client, j Job, at time.Time) error { return c.EnqueueAt(context.Background(), j, at) }},
		{"EnqueueBatch", func(c *Client, j Job, at time.Time) error {
			return c.EnqueueBatch(context.Background(), at, j)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := open(t, Config{})
			ctx := context.Background()
			if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a", Payload: []byte("first")}); err != nil {
				t.Fatal(err)
			}
			raced := 0
			testHookPurged = func(j Job) {
				if raced++; raced == 1 {
					if err := c.Enqueue(ctx, Job{Queue: "q", ID: j.ID, Payload: []byte("racer")}); err != nil {
						t.Errorf("racing Enqueue: %v", err)
					}
				}
			}
			defer func() { testHookPurged = nil }()
			if err := tc.enqueue(c, Job{Queue: "q", ID: "a", Payload: []byte("later")}, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if raced < 2 {
				t.Errorf("the schedule was stored after %d purges, want 2 (one more after the racing Enqueue)", raced)
			}
			if m := lastOf(t, c, statePrefix("q", "r")+"a.*"); m != nil {
				t.Errorf("ready message of a: got %q, want none beside the schedule", m.Data)
			}
			if m := lastOf(t, c, statePrefix("q", "s")+"a.*"); m == nil || string(m.Data) != "later" {
				t.Errorf("schedule of a: got %v, want %q", m, "later")
			}
		})
	}
}

// lastOf returns the last message on subject (a wildcard too) in queue
// q's work stream, nil if none.
func lastOf(t *testing.T, c *Client, subject string) *nats.Msg {
	t.Helper()
	m, err := c.lastFor(context.Background(), workStream("q"), subject)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func msgData(m *jetstream.RawStreamMsg) string {
	if m == nil {
		return ""
	}
	return string(m.Data)
}
