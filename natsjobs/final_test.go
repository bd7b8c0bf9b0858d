package natsjobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// Cancel is final: once Cancel returned true, or an enqueue that replaces
// the job returned, the withdrawn copy never starts. One test per moment a
// copy can be in: held in the worker's wheel, handed to a runner, waiting
// for a retry, a cron activation, not yet handed out. Each test withdraws
// the copy at that moment (a hook holds the worker there) and waits for
// the worker to drop it (testHookWithdrawn), so a run would be seen.

// hookCh returns a channel that receives the IDs passed to a hook, and
// installs fn as that hook until the test ends.
func hookCh(t *testing.T, hook *func(string)) <-chan string {
	ch := make(chan string, 100)
	*hook = func(id string) { ch <- id }
	t.Cleanup(func() { *hook = nil })
	return ch
}

// heldCh returns a channel that receives the IDs of the deliveries put
// in a wheel, until the test ends.
func heldCh(t *testing.T) <-chan string {
	ch := make(chan string, 100)
	testHookHeld = func(id string, _ time.Time) { ch <- id }
	t.Cleanup(func() { testHookHeld = nil })
	return ch
}

// runsOf runs a worker that sends each run's "ID payload".
func runsOf(t *testing.T, c *Client, opts WorkOptions, fn Func) <-chan string {
	runs := make(chan string, 100)
	work(t, c, "q", func(ctx context.Context, r Run) error {
		runs <- r.ID + " " + string(r.Payload)
		if fn != nil {
			return fn(ctx, r)
		}
		return nil
	}, opts)
	return runs
}

// expectWithdrawn waits until the worker dropped id's copy, failing if a
// run of a copy in stale starts first. It returns the other runs seen.
func expectWithdrawn(t *testing.T, withdrawn <-chan string, runs <-chan string, id string, stale ...string) (others []string) {
	t.Helper()
	for {
		select {
		case got := <-withdrawn:
			if got == id {
				return others
			}
		case r := <-runs:
			for _, s := range stale {
				if r == s {
					t.Fatalf("run %q started after its job was withdrawn", r)
				}
			}
			others = append(others, r)
		case <-time.After(30 * time.Second):
			t.Fatalf("the copy of %s was not dropped within 30 s", id)
		}
	}
}

func TestCancelFinalHeldInWheel(t *testing.T) {
	for _, how := range []string{"cancel", "replace now", "replace later"} {
		t.Run(how, func(t *testing.T) {
			c := open(t, Config{})
			ctx := context.Background()
			held := heldCh(t)
			withdrawn := hookCh(t, &testHookWithdrawn)
			runs := runsOf(t, c, WorkOptions{}, nil)
			// Within scheduleLead: handed out at once, held until due.
			due := time.Now().Add(900 * time.Millisecond)
			if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: "a", Payload: []byte("old")}, due); err != nil {
				t.Fatal(err)
			}
			if id := recv(t, held, "held delivery"); id != "a" {
				t.Fatalf("held %s, want a", id)
			}
			want := ""
			switch how {
			case "cancel":
				if ok, err := c.Cancel(ctx, "q", "a"); !ok || err != nil {
					t.Fatalf("Cancel = %v, %v; want true, nil", ok, err)
				}
			case "replace now":
				if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a", Payload: []byte("new")}); err != nil {
					t.Fatal(err)
				}
				want = "a new"
			case "replace later":
				if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "a", Payload: []byte("new")}, 2*time.Second); err != nil {
					t.Fatal(err)
				}
				want = "a new"
			}
			others := expectWithdrawn(t, withdrawn, runs, "a", "a old")
			if want != "" {
				if len(others) == 0 {
					others = append(others, recv(t, runs, "run of the replacement"))
				}
				if others[0] != want || len(others) > 1 {
					t.Fatalf("runs %q, want %q", others, want)
				}
			}
		})
	}
}

func TestCancelFinalHandedToRunner(t *testing.T) {
	for _, how := range []string{"cancel", "replace"} {
		t.Run(how, func(t *testing.T) {
			c := open(t, Config{})
			ctx := context.Background()
			withdrawn := hookCh(t, &testHookWithdrawn)
			// The runner has the delivery and waits here, before its check,
			// until the job is withdrawn.
			taken, resume := make(chan string, 10), make(chan struct{})
			first := true
			testHookRun = func(id string) {
				taken <- id
				if first {
					first = false
					<-resume
				}
			}
			t.Cleanup(func() { testHookRun = nil })
			runs := runsOf(t, c, WorkOptions{}, nil)
			if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a", Payload: []byte("old")}); err != nil {
				t.Fatal(err)
			}
			recv(t, taken, "delivery at the runner")
			if how == "cancel" {
				if ok, err := c.Cancel(ctx, "q", "a"); !ok || err != nil {
					t.Fatalf("Cancel = %v, %v; want true, nil", ok, err)
				}
			} else if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a", Payload: []byte("new")}); err != nil {
				t.Fatal(err)
			}
			close(resume)
			others := expectWithdrawn(t, withdrawn, runs, "a", "a old")
			if how == "replace" {
				if len(others) == 0 {
					others = append(others, recv(t, runs, "run of the replacement"))
				}
				if others[0] != "a new" || len(others) > 1 {
					t.Fatalf("runs %q, want %q", others, "a new")
				}
			}
		})
	}
}

// A job cancelled while it waits for its retry is not run again: neither
// a short wait (the server's redelivery) nor a long one (a schedule). A
// job due after the retry, enqueued before the cancel, marks the end.
// The Cancel must return within the wait: the redelivery's is the longest
// that stays a redelivery (scheduleLead, less a tenth), not the 300 ms it
// was, which two requests on a loaded machine could overrun.
func TestCancelFinalDuringRetry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		base time.Duration
	}{{"redelivery", scheduleLead * 9 / 10}, {"schedule", 1500 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := open(t, Config{})
			ctx := context.Background()
			finished := make(chan jobs.Event, 10)
			opts := WorkOptions{
				Retry: jobs.Retry{Attempts: 3, Base: tc.base},
				Hooks: jobs.Hooks{OnFinish: func(e jobs.Event) { finished <- e }},
			}
			runs := runsOf(t, c, opts, func(ctx context.Context, r Run) error {
				if r.ID == "a" {
					return errFailed
				}
				return nil
			})
			if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a"}); err != nil {
				t.Fatal(err)
			}
			if got := recv(t, runs, "first run"); got != "a " {
				t.Fatalf("run %q, want %q", got, "a ")
			}
			if e := recv(t, finished, "first outcome"); e.Outcome != jobs.Retrying {
				t.Fatalf("outcome %v, want Retrying", e.Outcome)
			}
			if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "end"}, 2*tc.base+time.Second); err != nil {
				t.Fatal(err)
			}
			if ok, err := c.Cancel(ctx, "q", "a"); !ok || err != nil {
				t.Fatalf("Cancel = %v, %v; want true, nil", ok, err)
			}
			if got := recv(t, runs, "run of end"); got != "end " {
				t.Fatalf("run %q after Cancel, want only %q", got, "end ")
			}
		})
	}
}

var errFailed = errors.New("failed")

// A cron activation cancelled (or replaced) while the worker holds it
// does not run, and no later activation follows a Cancel.
func TestCancelFinalCron(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	held := heldCh(t)
	withdrawn := hookCh(t, &testHookWithdrawn)
	runs := runsOf(t, c, WorkOptions{}, nil)
	if err := c.EnqueueCron(ctx, Job{Queue: "q", ID: "tick"}, "@every 2s", nil); err != nil {
		t.Fatal(err)
	}
	recv(t, held, "held activation")
	if ok, err := c.Cancel(ctx, "q", "tick"); !ok || err != nil {
		t.Fatalf("Cancel = %v, %v; want true, nil", ok, err)
	}
	expectWithdrawn(t, withdrawn, runs, "tick", "tick ")
	// Nothing of the job is left on the server to fire again. (The dropped
	// activation was not answered: the server forgets it in its own time.)
	if st := statsSettle(t, c, Stats{}); st != (Stats{}) {
		t.Fatalf("Stats after Cancel = %+v; want none", st)
	}
}

// Cancel takes a cron job's schedule and its current activation so that
// no activation re-arms it afterwards. A runner that took an activation
// re-arms it (stores the next one) on condition that its copy is still
// the job's ready message, and the schedule fires a new copy while no
// copy is ready. Cancel used to remove the schedule and then the copy, in
// two requests: a re-arm between them survived, Cancel returned (false,
// when the run also finished in between) and the job fired on and on
// (TestClusterR3LosesNothing's "Cancel(tick) = false", about 1 run in 10).
// Each case lets the chain move between Cancel's first and second request.
func TestCancelCronBetweenPurges(t *testing.T) {
	for _, tc := range []struct {
		name string
		// heldBefore: a runner holds an activation when Cancel starts
		// and is let go after Cancel's first request; otherwise the
		// schedule waits, and Cancel goes on once it fired a copy that
		// a runner took (let go after Cancel returned).
		heldBefore bool
	}{{"re-arm between", true}, {"fire between", false}} {
		t.Run(tc.name, func(t *testing.T) {
			c := open(t, Config{})
			ctx := context.Background()
			var blocking atomic.Bool
			blocking.Store(tc.heldBefore)
			taken, release := make(chan struct{}, 1), make(chan struct{})
			testHookRun = func(id string) {
				if blocking.Load() {
					taken <- struct{}{}
					<-release
				}
			}
			t.Cleanup(func() { testHookRun = nil })
			withdrawn := hookCh(t, &testHookWithdrawn)
			runs := runsOf(t, c, WorkOptions{}, nil)
			if err := c.EnqueueCron(ctx, Job{Queue: "q", ID: "tick"}, "@every 1s", nil); err != nil {
				t.Fatal(err)
			}
			if tc.heldBefore {
				recv(t, taken, "activation taken by a runner")
			} else {
				recv(t, runs, "first activation's run") // it stored the next one first
			}
			testHookPurged = func(Job) {
				testHookPurged = nil
				if tc.heldBefore {
					close(release)
					return
				}
				blocking.Store(true)
				recv(t, taken, "next activation taken by a runner")
			}
			t.Cleanup(func() { testHookPurged = nil })
			ok, err := c.Cancel(ctx, "q", "tick")
			if !tc.heldBefore {
				close(release)
			}
			select { // what the activation taken meanwhile did
			case <-withdrawn:
			case r := <-runs:
				t.Errorf("an activation taken during Cancel ran (%q), want it withdrawn", r)
			case <-time.After(30 * time.Second):
				t.Errorf("the activation taken during Cancel was neither run nor withdrawn within 30 s")
			}
			if !ok || err != nil {
				t.Errorf("Cancel = %v, %v; want true, nil", ok, err)
			}
			if j, err := c.Get(ctx, "q", "tick"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("after Cancel: Get = %+v, %v; want ErrNotFound (the job would fire again)", j, err)
			}
		})
	}
}

// A job cancelled before any worker took it never reaches one.
func TestCancelFinalBeforeHandedOut(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Cancel(ctx, "q", "a"); !ok || err != nil {
		t.Fatalf("Cancel = %v, %v; want true, nil", ok, err)
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "end"}); err != nil {
		t.Fatal(err)
	}
	runs := runsOf(t, c, WorkOptions{}, nil)
	if got := recv(t, runs, "run of end"); got != "end " {
		t.Fatalf("run %q, want only %q", got, "end ")
	}
}

// Two worker processes hold a batch of jobs in their wheels; while they
// wait, the parent cancels a quarter, replaces a quarter with a new
// payload to run now and a quarter with one to run later. No withdrawn
// copy runs: each is dropped ("skip") when it falls due, each replacement
// runs once, the untouched quarter runs once. An action that returned
// after the jobs' time is not checked (the old copy may have started
// before it, legitimately): no copy starts before its time, so one that
// starts after an action returned in time started after that action.
func TestCancelFinalProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("child processes")
	}
	c := open(t, Config{Server: embedded.Server{Listen: "127.0.0.1:0"}, AckWait: 2 * time.Second})
	ctx := context.Background()
	events := make(chan childEvent, 1024)
	var kids []*child
	for i := range 2 {
		kids = append(kids, startChild(t, i, c.URL(), 4, events, "NATSJOBS_CHILD_HOOKS=1"))
	}
	for range kids {
		if e := recv(t, events, "ready"); e.kind != "ready" {
			t.Fatalf("child %d said %s before ready", e.child, e.kind)
		}
	}
	n := size(200, 2000)
	due := time.Now().Add(5 * time.Second)
	enqueueN(t, c, n, due)

	const (
		cancelled = iota
		replacedNow
		untouched
		replacedLater
	)
	action := func(id string) int { i, _ := strconv.Atoi(id[1:]); return i % 4 }
	checked := map[string]bool{} // the action returned in time
	skips, runs := map[string]int{}, map[string][]string{}
	// left counts the events still expected: a skip of the withdrawn copy
	// and a run of the replacement, or a run of an untouched job.
	left, late := 0, 0
	for i := range n {
		switch action(fmt.Sprint("j", i)) {
		case untouched:
			left++
		}
	}
	violation := func(e childEvent) string {
		switch a := action(e.id); {
		case e.kind == "run" && a == cancelled && checked[e.id]:
			return "cancelled job ran"
		case e.kind == "run" && (a == replacedNow || a == replacedLater) && checked[e.id] && e.payload == "":
			return "replaced copy ran"
		case e.kind == "run" && len(runs[e.id]) > 1 && (checked[e.id] || a == untouched):
			return "ran twice"
		}
		return ""
	}
	for left > 0 || len(checked) == 0 {
		e := recv(t, events, "worker event")
		if e.id == "" || e.id[0] != 'j' {
			continue
		}
		a := action(e.id)
		switch e.kind {
		case "held":
			if a == untouched || checked[e.id] || time.Until(due) <= 0 {
				if a != untouched && !checked[e.id] {
					late++
				}
				continue
			}
			var err error
			switch a {
			case cancelled:
				var ok bool
				if ok, err = c.Cancel(ctx, "q", e.id); err == nil && !ok {
					t.Fatalf("Cancel(%s) = false, want true", e.id)
				}
				left++
			case replacedNow:
				err = c.Enqueue(ctx, Job{Queue: "q", ID: e.id, Payload: []byte("new")})
				left += 2
			case replacedLater:
				err = c.EnqueueAt(ctx, Job{Queue: "q", ID: e.id, Payload: []byte("later")}, due.Add(time.Second))
				left += 2
			}
			if err != nil {
				t.Fatal(err)
			}
			if time.Until(due) <= 0 {
				late++
				if a == cancelled {
					left--
				} else {
					left -= 2
				}
				continue
			}
			checked[e.id] = true
		case "skip":
			skips[e.id]++
			if checked[e.id] && skips[e.id] == 1 {
				left--
			}
		case "run":
			runs[e.id] = append(runs[e.id], e.payload)
			if v := violation(e); v != "" {
				t.Fatalf("%s: %s in child %d, payload %q", e.id, v, e.child, e.payload)
			}
			if (checked[e.id] && e.payload != "") || a == untouched {
				left--
			}
		}
	}
	// The children's dropped copies were not answered (statsSettle).
	if st := statsSettle(t, c, Stats{}); st != (Stats{}) {
		t.Errorf("Stats at the end = %+v, want none", st)
	}
	for _, k := range kids {
		k.stop(t)
	}
	for len(events) > 0 {
		if e := <-events; e.kind == "run" && e.id != "" && e.id[0] == 'j' {
			runs[e.id] = append(runs[e.id], e.payload)
			if v := violation(e); v != "" {
				t.Errorf("%s: %s in child %d, payload %q", e.id, v, e.child, e.payload)
			}
		}
	}
	if len(checked) < 10 {
		t.Errorf("%d of %d actions in time, want at least 10", len(checked), 3*n/4)
	}
	t.Logf("%d jobs, %d withdrawn in time (%d too late to check), %d copies dropped", n, len(checked), late, len(skips))
}

// Worker processes and the two places the tests above leave to one
// process: a job cancelled before any worker took it, and a delivery a
// runner of another process has taken. The child's runner waits, before
// it checks the delivery with the server, until the parent's Cancel or
// replacing enqueue returned ("taken", then "go"); the withdrawn copy must
// be dropped ("skip"), never run, and a replacement must run once.
func TestCancelFinalProcessesTaken(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("child processes")
	}
	c := open(t, Config{Server: embedded.Server{Listen: "127.0.0.1:0"}, AckWait: 2 * time.Second})
	ctx := context.Background()
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "early", Payload: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Cancel(ctx, "q", "early"); !ok || err != nil {
		t.Fatalf("Cancel(early) = %v, %v; want true, nil", ok, err)
	}
	events := make(chan childEvent, 1024)
	kid := startChild(t, 0, c.URL(), 2, events, "NATSJOBS_CHILD_HOOKS=1", "NATSJOBS_CHILD_GATE=1")
	if e := recv(t, events, "ready"); e.kind != "ready" {
		t.Fatalf("child said %s before ready", e.kind)
	}
	release := func() {
		t.Helper()
		if _, err := io.WriteString(kid.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	// next returns the child's next event, failing on a run of early or of
	// stale ("<id> <payload>"), and letting go at once every runner that
	// took something, unless hold names the job.
	next := func(hold, stale string) childEvent {
		t.Helper()
		for {
			e := recv(t, events, "worker event")
			switch {
			case e.kind == "run" && (e.id == "early" || e.id+" "+e.payload == stale):
				t.Fatalf("run %q %q started after its job was withdrawn", e.id, e.payload)
			case e.kind == "taken" && e.id != hold:
				release()
				continue
			}
			return e
		}
	}
	for _, how := range []string{"cancel", "replace"} {
		id := "t-" + how
		if err := c.Enqueue(ctx, Job{Queue: "q", ID: id, Payload: []byte("old")}); err != nil {
			t.Fatal(err)
		}
		for e := next(id, ""); e.kind != "taken" || e.id != id; e = next(id, "") {
		}
		// The child's runner holds the old copy, before its check.
		if how == "cancel" {
			if ok, err := c.Cancel(ctx, "q", id); !ok || err != nil {
				t.Fatalf("Cancel(%s) = %v, %v; want true, nil", id, ok, err)
			}
		} else if err := c.Enqueue(ctx, Job{Queue: "q", ID: id, Payload: []byte("new")}); err != nil {
			t.Fatal(err)
		}
		release()
		skipped, replaced := false, how == "cancel"
		for !skipped || !replaced {
			switch e := next("", id+" old"); {
			case e.kind == "skip" && e.id == id:
				skipped = true
			case e.kind == "run" && e.id == id && e.payload == "new":
				if replaced {
					t.Fatalf("the replacement of %s ran twice", id)
				}
				replaced = true
			}
		}
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "end"}); err != nil {
		t.Fatal(err)
	}
	for e := next("", ""); e.kind != "ack" || e.id != "end"; e = next("", "") {
	}
	kid.stop(t)
	for len(events) > 0 {
		if e := <-events; e.kind == "run" && (e.id == "early" || e.payload == "old") {
			t.Errorf("run %q %q after its job was withdrawn", e.id, e.payload)
		}
	}
	if st := statsSettle(t, c, Stats{}); st != (Stats{}) { // the dropped copies were not answered
		t.Errorf("Stats at the end = %+v, want none", st)
	}
}

// Worker processes and the two other places a copy waits: a retry's
// backoff and a cron activation held until due. Jobs f0..f4 fail; when a
// child reports their retry arranged (redelivery in 1 s), the parent
// cancels them. Cron jobs c0..c4 fire every 2 s; when a child holds an
// activation, the parent cancels the job. A cancel counts when it returned
// before the copy's time (the retry's 1 s after the report, the
// activation's due time); no cancelled job runs again, and every held
// activation is dropped.
func TestCancelFinalProcessesRetryCron(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("child processes")
	}
	c := open(t, Config{Server: embedded.Server{Listen: "127.0.0.1:0"}, AckWait: 2 * time.Second})
	ctx := context.Background()
	events := make(chan childEvent, 1024)
	for i := range 2 {
		startChild(t, i, c.URL(), 4, events, "NATSJOBS_CHILD_HOOKS=1")
	}
	for range 2 {
		if e := recv(t, events, "ready"); e.kind != "ready" {
			t.Fatalf("child %d said %s before ready", e.child, e.kind)
		}
	}
	const k = 5
	for i := range k {
		if err := c.Enqueue(ctx, Job{Queue: "q", ID: fmt.Sprint("f", i), Payload: []byte("fail")}); err != nil {
			t.Fatal(err)
		}
		if err := c.EnqueueCron(ctx, Job{Queue: "q", ID: fmt.Sprint("c", i)}, "@every 2s", nil); err != nil {
			t.Fatal(err)
		}
	}
	checked, late := map[string]bool{}, 0
	runs, skips := map[string]int{}, map[string]int{}
	cancelled := 0
	var last time.Time
	for cancelled < 2*k {
		e := recv(t, events, "worker event")
		if e.id == "" {
			continue
		}
		var due time.Time
		switch {
		case e.kind == "run":
			runs[e.id]++
			if checked[e.id] {
				t.Fatalf("%s ran in child %d after its Cancel returned", e.id, e.child)
			}
			continue
		case e.kind == "skip":
			skips[e.id]++
			continue
		case e.kind == "retrying" && e.id[0] == 'f' && runs[e.id] == 1:
			due = time.Now().Add(time.Second) // the report came after the nak
		case e.kind == "held" && e.id[0] == 'c' && skips[e.id] == 0 && runs[e.id] == 0:
			ns, _ := strconv.ParseInt(e.payload, 10, 64)
			due = time.Unix(0, ns)
		default:
			continue
		}
		if ok, err := c.Cancel(ctx, "q", e.id); err != nil || !ok {
			t.Fatalf("Cancel(%s) = %v, %v; want true, nil", e.id, ok, err)
		}
		cancelled++
		if time.Now().Before(due) {
			checked[e.id] = true
		} else {
			late++
		}
		if due.After(last) {
			last = due
		}
	}
	// Past every copy's time, a marker: whatever was to run has run.
	if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: "end"}, last.Add(1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	for {
		e := recv(t, events, "worker event")
		if e.kind == "run" && e.id == "end" {
			break
		}
		switch e.kind {
		case "run":
			runs[e.id]++
			if checked[e.id] {
				t.Fatalf("%s ran in child %d after its Cancel returned", e.id, e.child)
			}
		case "skip":
			skips[e.id]++
		}
	}
	for id := range checked {
		if id[0] == 'c' && skips[id] != 1 {
			t.Errorf("held activation of %s dropped %d times, want 1", id, skips[id])
		}
	}
	if len(checked) < 2 {
		t.Errorf("%d of %d cancels in time, want at least 2", len(checked), 2*k)
	}
	// The children's dropped copies were not answered (statsSettle).
	if st := statsSettle(t, c, Stats{}); st != (Stats{}) {
		t.Errorf("Stats at the end = %+v, want none", st)
	}
	t.Logf("%d cancels in time (%d late), %d held activations dropped", len(checked), late, len(skips))
}

// The server fires a delayed job's schedule in two steps: it builds the
// ready copy from the schedule message, then stores it, without looking
// again; a Cancel (or a replacing enqueue) whose purge of the schedule
// lands in between returns true, and the copy is stored all the same
// (microseconds on one server, one proposal in a cluster). Each case here
// stores by hand exactly the copy the server builds (the schedule's
// headers and payload, its server headers swapped for the fired copy's; due now rather than in an hour) after the withdrawal returned,
// and the worker must drop it: its generation was tombstoned.
func TestCancelFinalCopyFiredDuringCancel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		enqueue  func(c *Client, j Job) error
		withdraw func(c *Client, j Job) error
	}{
		{"Cancel", enqueueInAnHour, func(c *Client, j Job) error {
			if ok, err := c.Cancel(context.Background(), j.Queue, j.ID); !ok || err != nil {
				return fmt.Errorf("Cancel = %v, %v; want true, nil", ok, err)
			}
			return nil
		}},
		{"replaced by EnqueueAt", enqueueInAnHour, func(c *Client, j Job) error {
			j.Payload = []byte("new")
			return enqueueInAnHour(c, j)
		}},
		{"replaced by Enqueue", enqueueInAnHour, func(c *Client, j Job) error {
			j.Payload = []byte("new")
			return c.Enqueue(context.Background(), j)
		}},
		{"replaced by EnqueueBatch", enqueueInAnHour, func(c *Client, j Job) error {
			j.Payload = []byte("new")
			return c.EnqueueBatch(context.Background(), time.Now().Add(time.Hour), j)
		}},
		{"cron Cancel", func(c *Client, j Job) error {
			return c.EnqueueCron(context.Background(), j, "@yearly", nil)
		}, func(c *Client, j Job) error {
			if ok, err := c.Cancel(context.Background(), j.Queue, j.ID); !ok || err != nil {
				return fmt.Errorf("Cancel = %v, %v; want true, nil", ok, err)
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := open(t, Config{})
			ctx := context.Background()
			withdrawn := hookCh(t, &testHookWithdrawn)
			runs := runsOf(t, c, WorkOptions{}, nil)
			j := Job{Queue: "q", ID: "a", Payload: []byte("old")}
			if err := tc.enqueue(c, j); err != nil {
				t.Fatal(err)
			}
			sched := lastOf(t, c, statePrefix("q", "s")+"a.*")
			if sched == nil {
				t.Fatal("no schedule stored")
			}
			// The server has built the copy; the withdrawal lands now.
			if err := tc.withdraw(c, j); err != nil {
				t.Fatal(err)
			}
			if tc.name == "replaced by Enqueue" {
				// The new copy runs first, so that the stale copy's drop
				// is not mistaken for the new one's.
				for _, r := range runsUntil(t, runs, "a new") {
					t.Errorf("ran %q before the new copy", r)
				}
			}
			fireLate(t, c, sched)
			expectWithdrawn(t, withdrawn, runs, "a", "a old")
			// The dropped copy was acknowledged (removed); a cron
			// activation did not store its successor. The sentinel's
			// run is confirmed after that acknowledgement.
			if err := c.Enqueue(ctx, Job{Queue: "q", ID: "sentinel"}); err != nil {
				t.Fatal(err)
			}
			for _, r := range runsUntil(t, runs, "sentinel ") {
				if r == "a old" {
					t.Fatalf("the stale copy ran")
				}
			}
			if m := lastOf(t, c, statePrefix("q", "r")+"a.*"); m != nil && string(m.Data) == "old" {
				t.Errorf("the stale copy is still stored (%s), want it removed", m.Header.Get(jetstream.SequenceHeader))
			}
			if tc.name == "cron Cancel" {
				if j, err := c.Get(ctx, "q", "a"); !errors.Is(err, ErrNotFound) {
					t.Errorf("after the stale activation: Get = %+v, %v; want ErrNotFound (it re-armed)", j, err)
				}
			}
		})
	}
}

func enqueueInAnHour(c *Client, j Job) error {
	return c.EnqueueAt(context.Background(), j, time.Now().Add(time.Hour))
}

// runsUntil waits for the run want and returns the runs seen before it.
func runsUntil(t *testing.T, runs <-chan string, want string) (others []string) {
	t.Helper()
	for {
		r := recv(t, runs, want)
		if r == want {
			return others
		}
		others = append(others, r)
	}
}

// fireLate stores exactly the copy the server builds from schedule sched
// (read by lastFor) when it fires, due now rather than at its time: the
// schedule's headers and payload, its server headers swapped for the
// fired copy's, on its target subject.
func fireLate(t *testing.T, c *Client, sched *nats.Msg) {
	t.Helper()
	fired := &nats.Msg{Subject: sched.Header.Get(jetstream.ScheduleTargetHeader), Data: sched.Data, Header: nats.Header{}}
	for k, v := range sched.Header {
		// The server strips its own headers (schedule, expected
		// sequence, rollup), and the read added the stream's.
		if !strings.HasPrefix(k, "Nats-") {
			fired.Header[k] = v
		}
	}
	fired.Header.Set(hdrDue, strconv.FormatInt(time.Now().UnixNano(), 10))
	fired.Header.Set(jetstream.SchedulerHeader, sched.Header.Get(jetstream.SubjectHeader))
	fired.Header.Set(jetstream.ScheduleNextHeader, "purge")
	if _, err := c.js.PublishMsg(context.Background(), fired); err != nil {
		t.Fatal(err)
	}
}

// A copy fired late from a cancelled schedule may wait for a worker far
// longer than a moment: its queue paused over a weekend, no worker
// running. Tombstones used to expire after 24 h, and such a copy then
// ran. Now a tombstone goes only with the late copy: the sweep, once no
// copy of the generation can land any more, purges the copy and then the
// tombstone. Here the tombstone's age limit is short, the queue paused
// while the worker's sweeps run, and the copy must not run on Resume.
func TestCancelFinalStaleCopyOutlivesTombstone(t *testing.T) {
	age := tombstoneAge
	tombstoneAge = 200 * time.Millisecond
	t.Cleanup(func() { tombstoneAge = age })
	swept := make(chan int, 100)
	testHookSwept = func(n int, err error) {
		if err != nil {
			t.Errorf("sweep: %v", err)
		}
		swept <- n
	}
	t.Cleanup(func() { testHookSwept = nil })
	c := open(t, Config{})
	ctx := context.Background()
	if err := c.Pause(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if err := enqueueInAnHour(c, Job{Queue: "q", ID: "a", Payload: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	sched := lastOf(t, c, statePrefix("q", "s")+"a.*")
	if ok, err := c.Cancel(ctx, "q", "a"); !ok || err != nil {
		t.Fatalf("Cancel = %v, %v; want true, nil", ok, err)
	}
	fireLate(t, c, sched)
	runs := runsOf(t, c, WorkOptions{}, nil)
	for recv(t, swept, "a sweep") == 0 {
	}
	if m := lastOf(t, c, tombSubject("q", "*")); m != nil {
		t.Fatalf("after the sweep: tombstone %s, want none", m.Header.Get(jetstream.SubjectHeader))
	}
	if err := c.Resume(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "sentinel"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range runsUntil(t, runs, "sentinel ") {
		if r == "a old" {
			t.Fatalf("the late copy ran after its tombstone was removed")
		}
	}
	// runs reports a start: the sentinel's outcome may be on its way.
	if st := statsSettle(t, c, Stats{}); st != (Stats{}) {
		t.Errorf("Stats at the end = %+v, want none", st)
	}
}

// A copy fired late from a replaced schedule must leave the replacement
// alone. It used to land on the job's one ready subject, replacing the
// new due copy there, and to purge the job's one schedule subject, which
// held the new schedule: the worker dropped the condemned copy and the
// replacement was lost. Now each generation has subjects of its own.
func TestReplaceSurvivesCopyFiredLate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace func(c *Client, j Job) error
	}{
		{"EnqueueAt", func(c *Client, j Job) error {
			return c.EnqueueAfter(context.Background(), j, 1500*time.Millisecond)
		}},
		{"Enqueue", func(c *Client, j Job) error { return c.Enqueue(context.Background(), j) }},
		{"EnqueueBatch", func(c *Client, j Job) error { return c.EnqueueBatch(context.Background(), time.Time{}, j) }},
		{"EnqueueCron", func(c *Client, j Job) error {
			return c.EnqueueCron(context.Background(), j, "@every 2s", nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := open(t, Config{})
			ctx := context.Background()
			// Paused: the new copy waits while the late one lands.
			if err := c.Pause(ctx, "q"); err != nil {
				t.Fatal(err)
			}
			if err := enqueueInAnHour(c, Job{Queue: "q", ID: "a", Payload: []byte("old")}); err != nil {
				t.Fatal(err)
			}
			sched := lastOf(t, c, statePrefix("q", "s")+"a.*")
			if err := tc.replace(c, Job{Queue: "q", ID: "a", Payload: []byte("new")}); err != nil {
				t.Fatal(err)
			}
			fireLate(t, c, sched)
			runs := runsOf(t, c, WorkOptions{}, nil)
			if err := c.Resume(ctx, "q"); err != nil {
				t.Fatal(err)
			}
			for _, r := range runsUntil(t, runs, "a new") {
				t.Errorf("ran %q before the replacement", r)
			}
		})
	}
}

// Jobs stored by an earlier version, one subject per state, are moved to
// their generation's subjects by Open: a schedule keeps its time, a ready
// copy runs, a tombstone still condemns its late copy, and enqueueing
// and Cancel see them.
func TestUpgradeMovesOldLayout(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	pub := func(subject, data string, h nats.Header) {
		t.Helper()
		if _, err := c.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: []byte(data), Header: h}); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().Add(time.Hour)
	sched := func(id string) nats.Header {
		return nats.Header{
			jetstream.ScheduleHeader:       []string{"@at " + at.UTC().Format(time.RFC3339Nano)},
			jetstream.ScheduleTargetHeader: []string{"natsjobs.q.r." + id},
			hdrGen:                         []string{"G" + id},
			hdrDue:                         []string{strconv.FormatInt(at.UnixNano(), 10)},
		}
	}
	pub("natsjobs.q.s.later", "later", sched("later"))        // delayed
	pub("natsjobs.q.s.gone", "gone", sched("gone"))           // to be cancelled
	pub("natsjobs.q.r.ready", "ready", nats.Header{})         // due
	pub("natsjobs.q.r.kept", "kept", nats.Header{"K": {"v"}}) // due, kept under Keep
	pub("natsjobs.q.x.late.Glate", "", nats.Header{jetstream.MsgTTLHeader: {"86400"}})
	pub("natsjobs.q.r.late", "late", nats.Header{hdrGen: {"Glate"}}) // fired after its Cancel
	if err := c.declare(ctx, "q"); err != nil {                      // as Open does
		t.Fatal(err)
	}
	if err := c.declare(ctx, "q"); err != nil { // nothing left to move
		t.Fatal(err)
	}
	for _, old := range []string{"natsjobs.q.s.*", "natsjobs.q.r.*", "natsjobs.q.x.*.*"} {
		if m := lastOf(t, c, old); m != nil {
			t.Errorf("%s still stored after the upgrade", m.Header.Get(jetstream.SubjectHeader))
		}
	}
	if j, err := c.Get(ctx, "q", "later"); err != nil || j.State != Scheduled || !j.NextRun.Equal(at) || string(j.Payload) != "later" {
		t.Errorf("Get(later) = %v %v %q, %v; want scheduled at %v", j.State, j.NextRun, j.Payload, err, at)
	}
	if ok, err := c.Cancel(ctx, "q", "gone"); !ok || err != nil {
		t.Errorf("Cancel(gone) = %v, %v; want true, nil", ok, err)
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "kept", Unique: Keep}); !errors.Is(err, ErrExists) {
		t.Errorf("Enqueue(kept, Keep) = %v, want ErrExists", err)
	}
	runs := runsOf(t, c, WorkOptions{}, nil)
	got := map[string]bool{recv(t, runs, "run"): true, recv(t, runs, "run"): true}
	if !got["ready ready"] || !got["kept kept"] {
		t.Errorf("runs %v, want ready and kept", got)
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "sentinel"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range runsUntil(t, runs, "sentinel ") {
		t.Errorf("ran %q", r)
	}
	// The sentinel's outcome may be on its way, the late copy's drop was
	// not answered (statsSettle).
	if st := statsSettle(t, c, Stats{Pending: 1}); st != (Stats{Pending: 1}) {
		t.Errorf("Stats = %+v, want only later scheduled", st)
	}
}
