package durable

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// BenchmarkCancel: n jobs due a few seconds ahead are stored, then
// cancelled one call at a time while 8 handlers wait for work. cancels/s
// counts the calls; not-found counts cancels that reported the job absent
// (there must be none); ran counts cancelled jobs that ran anyway, from
// their due time until 8 s after it (longer than any system's scheduling
// interval): there must be none.
func BenchmarkCancel(b *testing.B) {
	n := size(5000, 200)
	lead := time.Duration(size(20, 5)) * time.Second
	forImpls(b, func(b *testing.B, e *env) map[string]float64 {
		ctx := context.Background()
		t := newTally(n)
		stop, err := e.sys.Work(ctx, 8, func(_ context.Context, id string, _ []byte) error {
			t.ran(id)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		defer stop()
		due := time.Now().Add(lead)
		all := ids("c", n)
		if err := fanOut(ctx, all, 8, func(id string) error { return e.sys.EnqueueAt(ctx, id, due, payloadAt(16, due)) }); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		notFound := 0
		for _, id := range all {
			ok, err := e.sys.Cancel(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				notFound++
			}
		}
		rate := float64(n) / time.Since(start).Seconds()
		if time.Now().After(due) {
			b.Logf("cancelling took past the due time: the last cancels raced the runs")
		}
		time.Sleep(time.Until(due.Add(8 * time.Second))) // the workload's observation window
		return map[string]float64{"cancels/s": rate, "not-found": float64(notFound), "ran": float64(t.n.Load())}
	})
}

// BenchmarkRecovery: n jobs due now wait on a server with no worker; the
// server is stopped (SIGTERM) and started again on its data; then a new
// client starts 8 handlers. first-run-ms counts from the server's start
// (for natsjobs embedded: Open on the store) to the first handler's start,
// runs/s the jobs run until all ran or 2 × runCap passed, whichever comes
// first; unrun counts those not run by then.
func BenchmarkRecovery(b *testing.B) {
	n := size(100_000, 2000)
	forImpls(b, func(b *testing.B, e *env) map[string]float64 {
		ctx := context.Background()
		all := ids("v", n)
		p := payloadAt(64, time.Time{})
		for i := 0; i < n; i += 1000 {
			if err := e.sys.EnqueueBatch(ctx, all[i:min(i+1000, n)], p); err != nil {
				b.Fatal(err)
			}
		}
		t := newTally(n)
		var first time.Time
		firstOnce := make(chan struct{})
		start := time.Now()
		e.restart(b, false)
		stop, err := e.sys.Work(ctx, 8, func(_ context.Context, id string, _ []byte) error {
			select {
			case <-firstOnce:
			default:
				first = time.Now()
				close(firstOnce)
			}
			t.ran(id)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		defer stop()
		unrun := t.wait(2 * runCap)
		elapsed := time.Since(start)
		<-firstOnce
		return map[string]float64{"first-run-ms": float64(first.Sub(start)) / 1e6,
			"runs/s": float64(n-unrun) / elapsed.Seconds(), "unrun": float64(unrun)}
	})
}

// BenchmarkServerMemory: the server's memory per job due in an hour:
// (memory with n such jobs − memory before) / n, where memory is the
// proportional set size summed over the server's processes (memBytes). natsjobs embedded
// shares its process with the client and is left out (natsjobs-ext is the
// same server in a process of its own).
func BenchmarkServerMemory(b *testing.B) {
	n := size(100_000, 2000)
	forImpls(b, func(b *testing.B, e *env) map[string]float64 {
		if e.srv == nil {
			skip(b, "the server runs in this process, beside the client (natsjobs-ext is the same server in a process of its own)")
		}
		ctx := context.Background()
		// Warm up first, with the same 8 goroutines: connections, pools
		// and server processes exist before the baseline is read.
		warm := time.Now().Add(time.Hour)
		if err := fanOut(ctx, ids("w", 400), 8, func(id string) error { return e.sys.EnqueueAt(ctx, id, warm, payloadAt(64, warm)) }); err != nil {
			b.Fatal(err)
		}
		before, err := e.srv.memBytes()
		if err != nil {
			b.Fatal(err)
		}
		due := time.Now().Add(time.Hour)
		if err := fanOut(ctx, ids("m", n), 8, func(id string) error { return e.sys.EnqueueAt(ctx, id, due, payloadAt(64, due)) }); err != nil {
			b.Fatal(err)
		}
		after, err := e.srv.memBytes()
		if err != nil {
			b.Fatal(err)
		}
		return map[string]float64{"B/job": float64(after-before) / float64(n)}
	})
}

// BenchmarkKill: n jobs of 2 ms each due now; a worker process (8
// handlers) is killed with SIGKILL once a third of them are done, and a
// second one finishes the rest. For natsjobs embedded the worker process
// holds the server too, so the kill takes the server down with it, and
// the second worker opens the same store again. lost counts jobs never
// finished; twice counts jobs finished twice; rerun counts jobs started
// more than once (the ones in flight at the kill, run again after their
// claim lapsed: each system's claim is set to 30 s where it can be set).
// after-confirm (natsjobs only) counts jobs started again after the
// server confirmed a run's success, which natsjobs promises never happens:
// its twice can only be jobs done but not yet confirmed at the kill.
// wait-s is from the kill to the last job done. Full size only: the
// claims' 30 s (and the peers' scan intervals) make it too slow for a
// smoke run.
func BenchmarkKill(b *testing.B) {
	if testing.Short() {
		skip(b, "full size only (claims lapse after 30 s)")
	}
	n := 6000
	forImpls(b, func(b *testing.B, e *env) map[string]float64 {
		ctx := context.Background()
		all := ids("k", n)
		p := payloadAt(16, time.Time{})
		for i := 0; i < n; i += 1000 {
			if err := e.sys.EnqueueBatch(ctx, all[i:min(i+1000, n)], p); err != nil {
				b.Fatal(err)
			}
		}
		if e.handOff != nil {
			e.handOff()
		}
		logPath := b.TempDir() + "/runs.log"
		w1 := startWorker(b, e, logPath)
		waitDone(b, logPath, n/3, 5*time.Minute)
		w1.Process.Signal(syscall.SIGKILL)
		w1.Wait()
		killed := time.Now()
		w2 := startWorker(b, e, logPath)
		defer func() { w2.Process.Signal(syscall.SIGKILL); w2.Wait() }()
		done := waitDone(b, logPath, n, 5*time.Minute)
		starts, dones := readRuns(b, logPath)
		lost, twice, rerun := n-len(dones), 0, 0
		for _, c := range dones {
			if c > 1 {
				twice++
			}
		}
		for _, c := range starts {
			if c > 1 {
				rerun++
			}
		}
		m := map[string]float64{"lost": float64(lost), "twice": float64(twice), "rerun": float64(rerun),
			"wait-s": done.Sub(killed).Seconds()}
		if c, ok := startedAfterConfirmed(b, logPath); ok {
			m["after-confirm"] = float64(c)
		}
		return m
	})
}

func startWorker(tb testing.TB, e *env, logPath string) *exec.Cmd {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), "DURABLE_CHILD=worker", "DURABLE_LOG="+logPath), e.workerEnv...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return cmd
}

// waitDone polls the runs log until k distinct jobs are done; it returns
// when that happened.
func waitDone(tb testing.TB, path string, k int, d time.Duration) time.Time {
	tb.Helper()
	deadline := time.Now().Add(d)
	for {
		_, dones := readRuns(tb, path)
		if len(dones) >= k {
			return time.Now()
		}
		if time.Now().After(deadline) {
			tb.Logf("%d of %d jobs done after %v", len(dones), k, d)
			return time.Now()
		}
		time.Sleep(50 * time.Millisecond) // polling another process's log
	}
}

// readRuns counts the starts and finishes of each job in a runs log.
func readRuns(tb testing.TB, path string) (starts, dones map[string]int) {
	starts, dones = map[string]int{}, map[string]int{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return
	} else if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, id, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue // a line cut by the kill
		}
		switch kind {
		case "s":
			starts[id]++
		case "d":
			dones[id]++
		}
	}
	return
}

// startedAfterConfirmed counts the jobs of a runs log that started again
// after the server confirmed one of their runs' success ("c ID", natsjobs
// only: ok is false for a log without such lines). natsjobs promises none:
// a job runs twice only when its worker died before its success was
// stored, so twice may count jobs done but not yet confirmed, never these.
func startedAfterConfirmed(tb testing.TB, path string) (n int, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	confirmed := map[string]bool{}
	counted := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, id, cut := strings.Cut(sc.Text(), " ")
		switch {
		case !cut:
		case kind == "c":
			confirmed[id], ok = true, true
		case kind == "s" && confirmed[id] && !counted[id]:
			counted[id] = true
			n++
		}
	}
	return n, ok
}

// runWorkerChild is a worker process: it runs the jobs of DURABLE_IMPL's
// queue at DURABLE_ADDR (for natsjobs embedded: its store directory) with
// 8 handlers until killed, appending "s ID" when a job starts and "d ID"
// when it is done to DURABLE_LOG (one write each, O_APPEND), and for
// natsjobs "c ID" when the server confirmed its success.
func runWorkerChild() {
	ctx := context.Background()
	log, err := os.OpenFile(os.Getenv("DURABLE_LOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fail(err)
	}
	addr := os.Getenv("DURABLE_ADDR")
	var sys system
	switch os.Getenv("DURABLE_IMPL") {
	case "natsjobs": // the embedded server, on the store in DURABLE_ADDR
		sys, err = openNATS(ctx, natsjobs.Config{Server: embedded.Server{StoreDir: addr}})
	case "natsjobs-ext":
		sys, err = openNATS(ctx, natsjobs.Config{URL: "nats://" + addr})
	case "asynq":
		sys = openAsynq(addr)
	case "river":
		sys, err = openRiver(ctx, addr)
	default:
		err = fmt.Errorf("unknown DURABLE_IMPL %q", os.Getenv("DURABLE_IMPL"))
	}
	if err != nil {
		fail(err)
	}
	if ns, ok := sys.(*natsSystem); ok {
		ns.confirmed = func(id string) { log.WriteString("c " + id + "\n") }
	}
	_, err = sys.Work(ctx, 8, func(_ context.Context, id string, _ []byte) error {
		log.WriteString("s " + id + "\n")
		time.Sleep(2 * time.Millisecond) // the job's work
		log.WriteString("d " + id + "\n")
		return nil
	})
	if err != nil {
		fail(err)
	}
	select {} // until killed
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "worker:", err)
	os.Exit(1)
}
