package natsjobs

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// go test -run '^$' -bench . -benchtime 20000x ./
//
// Every benchmark runs against its own ephemeral embedded server, in this
// process unless it says otherwise. cpu-ns/op is the process's CPU time
// (getrusage) per operation, client and embedded server together: on a
// busy machine it moves less than the rates do. The bench module's report
// runs these as its natsjobs suite (bench/cmd/report/suites.go).

// cpuMeter reports the process CPU per operation over a benchmark's timed
// region.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuMeter {
	d, ok := processCPU()
	return cpuMeter{d, ok}
}

func (m cpuMeter) report(b *testing.B, n int, unit string) {
	if end, ok := processCPU(); ok && m.ok && n > 0 {
		b.ReportMetric(float64(end-m.start)/float64(n), unit)
	}
}

func BenchmarkEnqueue(b *testing.B) {
	c := open(b, Config{})
	ctx := context.Background()
	payload := make([]byte, 64)
	b.ReportAllocs()
	cpu := startCPU()
	for i := 0; b.Loop(); i++ {
		if err := c.Enqueue(ctx, Job{Queue: "q", ID: "j" + strconv.Itoa(i), Payload: payload}); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b, b.N, "cpu-ns/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkEnqueueParallel: 8 goroutines per core call Enqueue.
func BenchmarkEnqueueParallel(b *testing.B) {
	c := open(b, Config{})
	ctx := context.Background()
	payload := make([]byte, 64)
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.Enqueue(ctx, Job{Queue: "q", ID: "j" + strconv.FormatInt(n.Add(1), 10), Payload: payload}); err != nil {
				b.Fatal(err)
			}
		}
	})
	cpu.report(b, b.N, "cpu-ns/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkEnqueueBatch stores b.N jobs in batches of 1000, due now or in
// an hour.
func BenchmarkEnqueueBatch(b *testing.B) {
	for _, later := range []bool{false, true} {
		b.Run(fmt.Sprintf("later=%v", later), func(b *testing.B) {
			c := open(b, Config{})
			ctx := context.Background()
			batch := make([]Job, 1000)
			var at time.Time
			if later {
				at = time.Now().Add(time.Hour)
			}
			b.ResetTimer()
			cpu := startCPU()
			for done := 0; done < b.N; done += len(batch) {
				for i := range batch {
					batch[i] = Job{Queue: "q", ID: "j" + strconv.Itoa(done+i), Payload: make([]byte, 64)}
				}
				if err := c.EnqueueBatch(ctx, at, batch[:min(len(batch), b.N-done)]...); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b, b.N, "cpu-ns/op")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkEnqueueAfter: one call at a time, each job due in an hour.
func BenchmarkEnqueueAfter(b *testing.B) {
	c := open(b, Config{})
	ctx := context.Background()
	b.ReportAllocs()
	cpu := startCPU()
	for i := 0; b.Loop(); i++ {
		if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "j" + strconv.Itoa(i)}, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b, b.N, "cpu-ns/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkCancel cancels jobs due in an hour, one call at a time: each
// a schedule to withdraw (read, tombstone, purges).
func BenchmarkCancel(b *testing.B) {
	c := open(b, Config{})
	ctx := context.Background()
	storeN(b, c, b.N, time.Now().Add(time.Hour))
	b.ReportAllocs()
	cpu := startCPU()
	b.ResetTimer()
	for i := range b.N {
		if ok, err := c.Cancel(ctx, "q", "j"+strconv.Itoa(i)); !ok || err != nil {
			b.Fatalf("Cancel = %v, %v", ok, err)
		}
	}
	cpu.report(b, b.N, "cpu-ns/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkReplace enqueues again, one call at a time, IDs the queue
// holds: due now over due now (now), in an hour over in an hour (later).
func BenchmarkReplace(b *testing.B) {
	for _, later := range []bool{false, true} {
		b.Run(fmt.Sprintf("later=%v", later), func(b *testing.B) {
			c := open(b, Config{})
			ctx := context.Background()
			var at time.Time
			if later {
				at = time.Now().Add(time.Hour)
			}
			storeN(b, c, b.N, at)
			b.ReportAllocs()
			cpu := startCPU()
			b.ResetTimer()
			for i := range b.N {
				j := Job{Queue: "q", ID: "j" + strconv.Itoa(i), Payload: make([]byte, 64)}
				var err error
				if later {
					err = c.EnqueueAt(ctx, j, at)
				} else {
					err = c.Enqueue(ctx, j)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b, b.N, "cpu-ns/op")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// storeN enqueues n jobs j0.. due at at (zero: now), in batches.
func storeN(b *testing.B, c *Client, n int, at time.Time) {
	b.Helper()
	for done := 0; done < n; done += 1000 {
		batch := make([]Job, min(1000, n-done))
		for i := range batch {
			batch[i] = Job{Queue: "q", ID: "j" + strconv.Itoa(done+i)}
		}
		if err := c.EnqueueBatch(context.Background(), at, batch...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRuns: b.N no-op jobs stored first, then run by two Work calls
// (two workers, 8 handlers each); the timer covers the runs only, up to
// the last confirmed acknowledgement.
func BenchmarkRuns(b *testing.B) {
	c := open(b, Config{})
	ctx := context.Background()
	batch := make([]Job, 0, 1000)
	for i := range b.N {
		batch = append(batch, Job{Queue: "q", ID: "j" + strconv.Itoa(i)})
		if len(batch) == cap(batch) || i == b.N-1 {
			if err := c.EnqueueBatch(ctx, time.Time{}, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	done := make(chan struct{})
	var left atomic.Int64
	left.Store(int64(b.N))
	opts := WorkOptions{Concurrency: 8, Hooks: jobs.Hooks{OnFinish: func(jobs.Event) {
		if left.Add(-1) == 0 {
			close(done)
		}
	}}}
	fn := func(context.Context, Run) error { return nil }
	b.ResetTimer()
	cpu := startCPU()
	work(b, c, "q", fn, opts)
	work(b, c, "q", fn, opts)
	<-done
	b.StopTimer()
	cpu.report(b, b.N, "cpu-ns/run")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}

// rounds keeps the metrics of benchmarks that measure one round per
// process: the testing package calls a benchmark more than once (b.N = 1
// first), and each later call reports the first round again.
var rounds sync.Map // benchmark name → map[string]float64

func oneRound(b *testing.B, round func() map[string]float64) {
	m, ok := rounds.Load(b.Name())
	if !ok {
		m, _ = rounds.LoadOrStore(b.Name(), round())
	}
	for unit, v := range m.(map[string]float64) {
		b.ReportMetric(v, unit)
	}
}

// BenchmarkDelayed: 10,000 jobs (1,000 with -short) due one after the
// other at a steady rate, from 2 s after the first is enqueued; two
// workers of 8 handlers run them. Lateness is a handler's start minus the
// job's time; early counts handlers started before it (there must be
// none). The jobs are enqueued by 8 goroutines, in order of their times,
// while the workers run. One round per process.
func BenchmarkDelayed(b *testing.B) {
	for _, rate := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("rate=%dk", rate/1000), func(b *testing.B) {
			oneRound(b, func() map[string]float64 { return delayedRound(b, rate) })
		})
	}
}

func delayedRound(b *testing.B, rate int) map[string]float64 {
	n := 10_000
	if testing.Short() {
		n = 1000
	}
	c := open(b, Config{})
	ctx := context.Background()
	late := make([]time.Duration, n)
	due := make([]time.Time, n)
	var left sync.WaitGroup
	left.Add(n)
	fn := func(_ context.Context, r Run) error {
		now := time.Now()
		i, _ := strconv.Atoi(r.ID)
		late[i] = now.Sub(due[i]) // each ID runs once: no retries here
		left.Done()
		return nil
	}
	base := time.Now().Add(2 * time.Second)
	for i := range due {
		due[i] = base.Add(time.Duration(i) * time.Second / time.Duration(rate))
	}
	work(b, c, "q", fn, WorkOptions{Concurrency: 8})
	work(b, c, "q", fn, WorkOptions{Concurrency: 8})
	var enq sync.WaitGroup
	for g := range 8 {
		enq.Add(1)
		go func() {
			defer enq.Done()
			for i := g; i < n; i += 8 {
				if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: strconv.Itoa(i)}, due[i]); err != nil {
					b.Error(err)
					left.Done()
				}
			}
		}()
	}
	enq.Wait()
	left.Wait()
	early := 0
	for _, d := range late {
		if d < 0 {
			early++
		}
	}
	slices.Sort(late)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	return map[string]float64{
		"p50-late-ms": ms(late[n/2]),
		"p99-late-ms": ms(late[n*99/100]),
		"max-late-ms": ms(late[n-1]),
		"early":       float64(early),
	}
}

// BenchmarkReopen: an embedded server's store holding 100,000 pending
// jobs (10,000 with -short), half due now and half in an hour, is opened
// again; reopen-ms is Open's time, until it can take calls. One round per
// process.
func BenchmarkReopen(b *testing.B) {
	oneRound(b, func() map[string]float64 {
		n := 100_000
		if testing.Short() {
			n = 10_000
		}
		ctx := context.Background()
		cfg := Config{Server: embedded.Server{StoreDir: b.TempDir()}, Queues: []string{"q"}}
		c, err := Open(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		batch := make([]Job, 1000)
		for done := 0; done < n; done += len(batch) {
			var at time.Time
			if done >= n/2 {
				at = time.Now().Add(time.Hour)
			}
			for i := range batch {
				batch[i] = Job{Queue: "q", ID: "j" + strconv.Itoa(done+i)}
			}
			if err := c.EnqueueBatch(ctx, at, batch...); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		c = open(b, cfg)
		elapsed := time.Since(start)
		if st, err := c.Stats(ctx, "q"); err != nil || st.Pending+st.Due != n {
			b.Fatalf("Stats after reopening = %+v, %v; want %d jobs", st, err, n)
		}
		return map[string]float64{"reopen-ms": float64(elapsed) / 1e6}
	})
}

// BenchmarkPendingMemory reports the heap per pending job (due in an
// hour, a 64-byte payload): process=client is a client connected by URL
// to a server in a child process, which keeps the jobs; process=embedded
// is a client with its embedded server, the default deployment, both in
// this process.
func BenchmarkPendingMemory(b *testing.B) {
	b.Run("process=client", func(b *testing.B) {
		url, stop := childServer(b)
		defer stop()
		pendingMemory(b, open(b, Config{URL: url}))
	})
	b.Run("process=embedded", func(b *testing.B) {
		pendingMemory(b, open(b, Config{}))
	})
}

func pendingMemory(b *testing.B, c *Client) {
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; b.Loop(); i++ {
		if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "j" + strconv.Itoa(i), Payload: make([]byte, 64)}, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "heapB/job")
}

// childServer starts this test binary as an embedded server listening on
// a free local port (see serveChild) and returns its URL and a function
// that stops it.
func childServer(b *testing.B) (url string, stop func()) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NATSJOBS_CHILD_SERVER=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop = func() {
		stdin.Close()
		cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		b.Fatalf("child server: %v", err)
	}
	return line[:len(line)-1], stop
}

// serveChild is the child process of childServer: it prints its URL and
// serves until its stdin closes.
func serveChild() int {
	c, err := Open(context.Background(), Config{Server: embedded.Server{Ephemeral: true, Listen: "127.0.0.1:0"}, Queues: []string{"q"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	fmt.Println(c.URL())
	io.Copy(io.Discard, os.Stdin)
	return 0
}
