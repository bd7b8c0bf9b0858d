package natsjobs

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// Crash tests run workers in child processes: the test binary re-executed
// with NATSJOBS_CHILD_URL set, connected to the parent's embedded server.
// A child prints "ready", then "run <id>" when a handler starts ("run <id>
// <payload>" for a job with a payload) and "ack <id>" once the server
// confirmed its acknowledgement; with NATSJOBS_CHILD_HOOKS set, also
// "held <id> <due ns>" when a delivery waits in its wheel, "skip <id>"
// when one is dropped because its job was withdrawn, "retrying <id>" when
// a run failed (as runs of jobs with the payload "fail" do) and its retry
// was arranged; with NATSJOBS_CHILD_ATTEMPTS,
// "run <id> attempt<n>"; with NATSJOBS_CHILD_BLOCK, its handlers wait for
// their ctx to end (Grace is 100 ms); with NATSJOBS_CHILD_GATE, a runner
// that took a delivery prints "taken <id>" and waits, before it checks
// the delivery with the server, for a line "go" on stdin. It stops
// when its stdin closes, or dies by SIGKILL.

func TestMain(m *testing.M) {
	if url := os.Getenv("NATSJOBS_CHILD_URL"); url != "" {
		os.Exit(childWorker(url))
	}
	if os.Getenv("NATSJOBS_CHILD_SERVER") != "" {
		os.Exit(serveChild()) // bench_test.go
	}
	// The tests mostly wait on servers, timers and child processes (11 s
	// of CPU in 140 s of wall time, run one at a time): unless -parallel
	// is given, the parallel ones run 8 at a time, not GOMAXPROCS. Not
	// under the race detector, whose cost makes them CPU-bound: 8 at a
	// time on 2 busy cores, timeouts of 5 and 30 s ran out.
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet && !raceEnabled {
		flag.Set("test.parallel", "8")
	}
	os.Exit(m.Run())
}

func childWorker(url string) int {
	conc, _ := strconv.Atoi(os.Getenv("NATSJOBS_CHILD_CONCURRENCY"))
	// A short AckWait, so that a killed worker's jobs come back quickly;
	// live deliveries are kept alive every AckWait/3.
	c, err := Open(context.Background(), Config{URL: url, Queues: []string{"q"}, AckWait: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := make(chan string, 1024)
	done := make(chan struct{})
	go func() { // one writer, so lines never interleave
		w := bufio.NewWriter(os.Stdout)
		for line := range out {
			w.WriteString(line)
			if len(out) == 0 {
				w.Flush()
			}
		}
		w.Flush()
		close(done)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	gate := make(chan struct{}, 1024)
	go func() {
		for sc := bufio.NewScanner(os.Stdin); sc.Scan(); {
			if sc.Text() == "go" {
				gate <- struct{}{}
			}
		}
		cancel()
	}()
	if os.Getenv("NATSJOBS_CHILD_GATE") != "" { // TestCancelFinalProcessesTaken
		testHookRun = func(id string) {
			out <- "taken " + id + "\n"
			select {
			case <-gate:
			case <-ctx.Done():
			}
		}
	}
	hooks := os.Getenv("NATSJOBS_CHILD_HOOKS") != ""
	if hooks { // TestCancelFinalProcesses...
		testHookHeld = func(id string, due time.Time) {
			out <- "held " + id + " " + strconv.FormatInt(due.UnixNano(), 10) + "\n"
		}
		testHookWithdrawn = func(id string) { out <- "skip " + id + "\n" }
	}
	attempts, block := os.Getenv("NATSJOBS_CHILD_ATTEMPTS") != "", os.Getenv("NATSJOBS_CHILD_BLOCK") != ""
	out <- "ready\n"
	err = c.Work(ctx, "q", func(ctx context.Context, r Run) error {
		switch {
		case attempts: // TestShutdownProcess
			out <- "run " + r.ID + " attempt" + strconv.Itoa(r.Attempt) + "\n"
		case len(r.Payload) > 0:
			out <- "run " + r.ID + " " + string(r.Payload) + "\n"
		default:
			out <- "run " + r.ID + "\n"
		}
		if hooks && string(r.Payload) == "fail" {
			return errors.New("fail")
		}
		if block { // until Work's shutdown cancels it
			<-ctx.Done()
			return context.Cause(ctx)
		}
		time.Sleep(time.Millisecond) // simulated work, not synchronization
		return nil
	}, WorkOptions{
		Grace:       100 * time.Millisecond,
		Concurrency: conc,
		Retry:       jobs.Retry{Attempts: 10},
		Hooks: jobs.Hooks{OnFinish: func(e jobs.Event) {
			if e.Outcome == jobs.Succeeded { // reported once the server confirmed the ack
				out <- "ack " + e.ID + "\n"
			}
			if hooks && e.Outcome == jobs.Retrying { // its retry is on the server
				out <- "retrying " + e.ID + "\n"
			}
		}},
	})
	c.Close()
	close(out)
	<-done
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type childEvent struct {
	child             int
	kind, id, payload string
}

type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	exit  chan error
}

// startChild starts worker number n and forwards its lines to events.
func startChild(t *testing.T, n int, url string, concurrency int, events chan<- childEvent, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NATSJOBS_CHILD_URL="+url, "NATSJOBS_CHILD_CONCURRENCY="+strconv.Itoa(concurrency))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := &child{cmd: cmd, stdin: stdin, exit: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			kind, rest, _ := strings.Cut(sc.Text(), " ")
			id, payload, _ := strings.Cut(rest, " ")
			events <- childEvent{n, kind, id, payload}
		}
		ch.exit <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return ch
}

func (ch *child) kill(t *testing.T) {
	t.Helper()
	ch.cmd.Process.Signal(syscall.SIGKILL)
	recv(t, ch.exit, "killed child's exit")
}

func (ch *child) stop(t *testing.T) {
	t.Helper()
	ch.stdin.Close()
	if err := recv(t, ch.exit, "child's exit"); err != nil {
		t.Errorf("child: %v", err)
	}
}

// size is small by default (CI runs every test in about a minute) and
// full with NATSJOBS_FULL=1, the sizes of the proof.
func size(small, full int) int {
	if os.Getenv("NATSJOBS_FULL") != "" {
		return full
	}
	return small
}

func crashSize() int { return size(3000, 100_000) }

// enqueueN stores jobs j0 ... j<n-1>, due at at (zero: now).
func enqueueN(t *testing.T, c *Client, n int, at time.Time) {
	t.Helper()
	batch := make([]Job, 0, 1000)
	for i := range n {
		batch = append(batch, Job{Queue: "q", ID: fmt.Sprint("j", i)})
		if len(batch) == cap(batch) || i == n-1 {
			if err := c.EnqueueBatch(context.Background(), at, batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// Three SIGKILLs of the worker process while it runs: no job is lost, no
// job is acknowledged twice, and a job ran twice only if an earlier run was
// in a killed worker that had not reported an acknowledgement.
func TestCrashWorkerKilled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("child processes")
	}
	n := crashSize()
	c := open(t, Config{Server: embedded.Server{Listen: "127.0.0.1:0"}, AckWait: time.Second})
	enqueueN(t, c, n, time.Time{})
	events := make(chan childEvent, 1024)
	const kills = 3
	gen := 0
	cur := startChild(t, gen, c.URL(), 8, events)
	acks := map[string]int{}
	runs := map[string][]int{}    // id → the children that started a run
	acked := map[[2]string]bool{} // (child, id) acknowledged
	killed := map[int]bool{}
	// settled: a job is settled when acknowledged, or when its last run
	// was in a killed worker (which may have been acknowledged by the
	// server just before the kill, without its line being printed).
	unsettled := n
	settled := func(id string) bool {
		rs := runs[id]
		return acks[id] > 0 || len(rs) > 0 && killed[rs[len(rs)-1]]
	}
	for {
		e := recv(t, events, "worker event")
		was := settled(e.id)
		switch e.kind {
		case "run":
			runs[e.id] = append(runs[e.id], e.child)
		case "ack":
			acks[e.id]++
			acked[[2]string{strconv.Itoa(e.child), e.id}] = true
		}
		if e.id != "" && was != settled(e.id) {
			if was {
				unsettled++
			} else {
				unsettled--
			}
		}
		if gen < kills && e.child == gen && len(acks) >= n*(gen+1)/(kills+1) {
			cur.kill(t)
			killed[gen] = true
			gen++
			unsettled = 0
			for i := range n {
				if !settled(fmt.Sprint("j", i)) {
					unsettled++
				}
			}
			cur = startChild(t, gen, c.URL(), 8, events)
		}
		// Everything settled and the server holds nothing: done. While
		// it still holds a job, a redelivery brings more events.
		if gen == kills && unsettled == 0 {
			if st, err := c.Stats(context.Background(), "q"); err == nil && st == (Stats{}) {
				break
			}
		}
	}
	cur.stop(t)
	dups := 0
	for i := range n {
		id := fmt.Sprint("j", i)
		rs := runs[id]
		if len(rs) == 0 {
			t.Errorf("job %s lost: never ran", id)
		}
		if acks[id] > 1 {
			t.Errorf("job %s acknowledged %d times, want at most 1", id, acks[id])
		}
		for _, ch := range rs[:max(len(rs)-1, 0)] {
			dups++
			if !killed[ch] || acked[[2]string{strconv.Itoa(ch), id}] {
				t.Errorf("job %s ran again after a run in child %d that was not killed or had been acknowledged", id, ch)
			}
		}
	}
	t.Logf("%d jobs, %d kills, %d duplicate runs (all in flight at a kill)", n, kills, dups)
}

// Three worker processes share a queue: no job runs twice, none is lost,
// and each process runs about a third.
func TestThreeWorkerProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("child processes")
	}
	n := crashSize()
	c := open(t, Config{Server: embedded.Server{Listen: "127.0.0.1:0"}, AckWait: time.Second})
	events := make(chan childEvent, 1024)
	var kids []*child
	for i := range 3 {
		kids = append(kids, startChild(t, i, c.URL(), 4, events))
	}
	for range kids {
		if e := recv(t, events, "ready"); e.kind != "ready" {
			t.Fatalf("child %d said %s before ready", e.child, e.kind)
		}
	}
	enqueueN(t, c, n, time.Time{})
	runs := map[string]int{}
	per := [3]int{}
	acks := 0
	for acks < n {
		e := recv(t, events, "worker event")
		switch e.kind {
		case "run":
			runs[e.id]++
			per[e.child]++
		case "ack":
			acks++
		}
	}
	for _, k := range kids {
		k.stop(t)
	}
	for id, k := range runs {
		if k != 1 {
			t.Errorf("job %s ran %d times, want 1", id, k)
		}
	}
	if len(runs) != n {
		t.Errorf("%d jobs ran, want %d", len(runs), n)
	}
	for i, k := range per {
		share := float64(k) / float64(n)
		if share < 0.23 || share > 0.43 {
			t.Errorf("worker %d ran %.1f%% of the jobs, want 33 ± 10%%", i, 100*share)
		}
	}
	t.Logf("runs per worker: %v", per)
}
