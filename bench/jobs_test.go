package bench

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/bench/internal/harness"
)

// Job schedulers (issue 13): ttlkit's jobs against gocron v2 and
// robfig/cron v3, side by side in one process.

// jobsOneShot is the number of one-shot jobs of BenchmarkJobsOneShot and
// BenchmarkJobsBurst: 100k, 10k under -short.
func jobsOneShot() int {
	if testing.Short() {
		return 10_000
	}
	return 100_000
}

// jobsLatency summarizes start lateness, and the process CPU per job from
// the first add to the last run (which does not depend on how much of the
// machine the process got).
type jobsLatency struct {
	early, dup     int
	p50, p99, maxL time.Duration
	cpuPerJob      time.Duration
	jobs           int
}

func (l jobsLatency) report(b *testing.B) {
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(l.cpuPerJob.Nanoseconds()), "cpu-ns/job")
	b.ReportMetric(float64(l.jobs), "jobs")
	b.ReportMetric(float64(l.early), "early")
	b.ReportMetric(float64(l.dup), "dup")
	b.ReportMetric(ms(l.p50), "p50-late-ms")
	b.ReportMetric(ms(l.p99), "p99-late-ms")
	b.ReportMetric(ms(l.maxL), "max-late-ms")
}

func summarize(late []time.Duration) (p50, p99, maxL time.Duration) {
	slices.Sort(late)
	return late[len(late)/2], late[len(late)*99/100], late[len(late)-1]
}

var jobsOneShotResults = map[string]jobsLatency{}

// BenchmarkJobsOneShot: jobsOneShot() one-shot no-op jobs due 0.5–1.5 s
// after they are added; lateness is the run's start minus (the moment just
// before the add + the delay), on the monotonic clock. Jobs are added to a
// running scheduler, robfig/cron's before it starts (see jobSched). One
// round per process.
func BenchmarkJobsOneShot(b *testing.B) {
	for _, im := range jobImpls {
		b.Run("impl="+im.name, func(b *testing.B) {
			r, ok := jobsOneShotResults[im.name]
			if !ok {
				r = measureOneShot(b, im)
				jobsOneShotResults[im.name] = r
			}
			r.report(b)
		})
	}
}

func measureOneShot(b *testing.B, im jobImpl) jobsLatency {
	n := im.oneShots()
	ids := cachedKeys("job-", n)
	delays := make([]time.Duration, n)
	for i, j := range rand.New(rand.NewPCG(3, 0)).Perm(n) {
		delays[i] = 500*time.Millisecond + time.Duration(j)*time.Second/time.Duration(n)
	}
	due := make([]time.Duration, n)
	fired := make([]time.Duration, n)
	hits := make([]atomic.Int32, n)
	var remaining, dups atomic.Int64
	remaining.Store(int64(n))
	done := make(chan struct{})
	s := im.begin(b)
	defer s.close()
	cpu0, _ := harness.ProcessCPU()
	base := time.Now()
	for i, id := range ids {
		now := time.Now()
		due[i] = now.Sub(base) + delays[i]
		if err := s.once(id, now.Add(delays[i]), delays[i], func() {
			at := time.Since(base)
			if hits[i].Add(1) != 1 {
				dups.Add(1)
				return
			}
			fired[i] = at
			if remaining.Add(-1) == 0 {
				close(done)
			}
		}); err != nil {
			b.Fatalf("%s: %v", im.name, err)
		}
	}
	im.end(s)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		b.Fatalf("%s: %d of %d jobs had not run a minute after the last was added", im.name, remaining.Load(), n)
	}
	cpu1, _ := harness.ProcessCPU()
	r := jobsLatency{cpuPerJob: (cpu1 - cpu0) / time.Duration(n), jobs: n}
	late := make([]time.Duration, n)
	for i := range late {
		if late[i] = fired[i] - due[i]; late[i] < 0 {
			r.early++
		}
	}
	r.p50, r.p99, r.maxL = summarize(late)
	r.dup = int(dups.Load())
	return r
}

// jobsCronSize is the number of jobs and seconds of BenchmarkJobsCron.
func jobsCronSize() (jobs, seconds int) {
	if testing.Short() {
		return 1000, 3
	}
	return 10_000, 10
}

type jobsCron struct {
	missed, doubled int
	p50, p99, maxL  time.Duration
	goroutines      int
	cpuPerRun       time.Duration
}

var jobsCronResults = map[string]jobsCron{}

// BenchmarkJobsCron: jobsCronSize() jobs on "* * * * * *" for a number of
// seconds. For every whole second inside the window, each job must run
// exactly once: "missed" counts (job, second) pairs with no run, "doubled"
// those with more than one. Lateness is a run's start after the second
// boundary. "goroutines" is the peak number of goroutines above the count
// before the scheduler was made, sampled every 10 ms. One round per
// process.
func BenchmarkJobsCron(b *testing.B) {
	for _, im := range jobImpls {
		b.Run("impl="+im.name, func(b *testing.B) {
			r, ok := jobsCronResults[im.name]
			if !ok {
				r = measureCron(b, im)
				jobsCronResults[im.name] = r
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(r.missed), "missed")
			b.ReportMetric(float64(r.doubled), "doubled")
			b.ReportMetric(ms(r.p50), "p50-late-ms")
			b.ReportMetric(ms(r.p99), "p99-late-ms")
			b.ReportMetric(ms(r.maxL), "max-late-ms")
			b.ReportMetric(float64(r.goroutines), "goroutines")
			b.ReportMetric(float64(r.cpuPerRun.Nanoseconds()), "cpu-ns/run")
		})
	}
}

func measureCron(b *testing.B, im jobImpl) jobsCron {
	n, secs := jobsCronSize()
	ids := cachedKeys("cron-", n)
	baseline := runtime.NumGoroutine()
	s := im.begin(b)
	// Runs are counted per job and per second since first, the second
	// after the last job is added and the scheduler started.
	var first atomic.Int64
	first.Store(1 << 62) // nothing counts until set
	counts := make([][]atomic.Int32, secs+2)
	for i := range counts {
		counts[i] = make([]atomic.Int32, n)
	}
	lates := make([][]int64, n) // per job, ns after the second, one writer each
	for i, id := range ids {
		if err := s.cron(id, "* * * * * *", func() {
			now := time.Now()
			sec := now.Unix() - first.Load()
			if sec < 0 || sec >= int64(len(counts)) {
				return
			}
			counts[sec][i].Add(1)
			lates[i] = append(lates[i], int64(now.Sub(now.Truncate(time.Second))))
		}); err != nil {
			b.Fatalf("%s: %v", im.name, err)
		}
	}
	im.end(s)
	s.sync()
	start := time.Now().Truncate(time.Second).Add(time.Second)
	first.Store(start.Unix())
	end := start.Add(time.Duration(secs) * time.Second)
	cpu0, _ := harness.ProcessCPU()
	peak := 0
	tick := time.NewTicker(10 * time.Millisecond)
	for now := range tick.C {
		peak = max(peak, runtime.NumGoroutine()-baseline)
		if now.After(end.Add(500 * time.Millisecond)) {
			break
		}
	}
	tick.Stop()
	cpu1, _ := harness.ProcessCPU()
	s.close()
	var r jobsCron
	// Whole seconds inside the window: 0 .. secs-1 since start.
	for sec := range secs {
		for i := range n {
			switch c := counts[sec][i].Load(); {
			case c == 0:
				r.missed++
			case c > 1:
				r.doubled++
			}
		}
	}
	var late []time.Duration
	for _, l := range lates {
		for _, ns := range l {
			late = append(late, time.Duration(ns))
		}
	}
	if len(late) == 0 {
		b.Fatalf("%s: no run", im.name)
	}
	r.p50, r.p99, r.maxL = summarize(late)
	r.goroutines = peak
	// The CPU span covers the window and half a second after it, as the
	// runs counted in late do, give or take the last second's.
	r.cpuPerRun = (cpu1 - cpu0) / time.Duration(len(late))
	return r
}

// jobsAddSizes are the pending counts of BenchmarkJobsAdd: 10k for every
// scheduler; 1M for ttlkit only, without -short (gocron holds about a
// kilobyte and a runtime timer per job, and robfig re-sorts every entry on
// each addition).
func jobsAddSizes() []int {
	if testing.Short() {
		return []int{10_000}
	}
	return []int{10_000, 1_000_000}
}

// BenchmarkJobsAdd measures adding a one-shot job due in an hour to a
// running scheduler that already holds `pending` such jobs: cpu-ns/op is
// process CPU (getrusage), so it includes work handed to the scheduler's
// goroutines; B/pending is the heap per pending job.
func BenchmarkJobsAdd(b *testing.B) {
	for _, pending := range jobsAddSizes() {
		for _, im := range jobImpls {
			if pending > 10_000 && im.name != "ttlkit" {
				continue
			}
			b.Run("pending="+sizeName(pending)+"/impl="+im.name, func(b *testing.B) {
				ids := cachedKeys("add-", pending)
				var s jobSched
				bytes := harness.HeapPerItem(pending, func() {
					s = im.begin(b)
					for _, id := range ids {
						if err := s.once(id, time.Now().Add(time.Hour), time.Hour, func() {}); err != nil {
							b.Fatal(err)
						}
					}
					im.end(s)
					s.sync()
				})
				defer s.close()
				more := cachedKeys("more-", b.N)
				b.ReportAllocs()
				m := harness.Start(b, s.sync)
				for i := range b.N {
					if err := s.once(more[i], time.Now().Add(time.Hour), time.Hour, func() {}); err != nil {
						b.Fatal(err)
					}
				}
				m.Stop()
				b.ReportMetric(bytes, "B/pending")
			})
		}
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

type jobsBurst struct {
	perSec float64
	cpuPer time.Duration
	jobs   int
}

var jobsBurstResults = map[string]jobsBurst{}

// BenchmarkJobsBurst measures throughput: jobsOneShot() no-op one-shot
// jobs all due at the same instant, 10 s after the first is added (3 s
// under -short). runs/s
// is their number over the time from that instant to the last run's
// start; cpu-ns/run is the process CPU over the same span per run. One
// round per process.
func BenchmarkJobsBurst(b *testing.B) {
	for _, im := range jobImpls {
		b.Run("impl="+im.name, func(b *testing.B) {
			r, ok := jobsBurstResults[im.name]
			if !ok {
				r = measureBurst(b, im)
				jobsBurstResults[im.name] = r
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(r.perSec, "runs/s")
			b.ReportMetric(float64(r.cpuPer.Nanoseconds()), "cpu-ns/run")
			b.ReportMetric(float64(r.jobs), "jobs")
		})
	}
}

func measureBurst(b *testing.B, im jobImpl) jobsBurst {
	n := im.oneShots()
	ids := cachedKeys("burst-", n)
	s := im.begin(b)
	defer s.close()
	var remaining atomic.Int64
	remaining.Store(int64(n))
	var last atomic.Int64 // ns since at of the last start
	done := make(chan struct{})
	lead := 10 * time.Second // time to add them all, even to gocron on a busy machine
	if testing.Short() {
		lead = 3 * time.Second
	}
	at := time.Now().Add(lead)
	for _, id := range ids {
		if err := s.once(id, at, time.Until(at), func() {
			if remaining.Add(-1) == 0 {
				last.Store(int64(time.Since(at)))
				close(done)
			}
		}); err != nil {
			b.Fatal(err)
		}
	}
	if time.Now().After(at) {
		b.Fatalf("%s: adding %d jobs took more than %v", im.name, n, lead)
	}
	im.end(s)
	s.sync()
	time.Sleep(time.Until(at))
	cpu0, _ := harness.ProcessCPU()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		b.Fatalf("%s: %d of %d jobs had not run after a minute", im.name, remaining.Load(), n)
	}
	cpu1, _ := harness.ProcessCPU()
	span := time.Duration(last.Load())
	return jobsBurst{perSec: float64(n) / span.Seconds(), cpuPer: (cpu1 - cpu0) / time.Duration(n), jobs: n}
}
