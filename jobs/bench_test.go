package jobs

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// pendingJobs is how many jobs the pending-job benchmarks hold: 1M, or
// 100k under -short.
func pendingJobs() int {
	if testing.Short() {
		return 100_000
	}
	return 1_000_000
}

func jobIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "order-" + strconv.Itoa(i)
	}
	return ids
}

// BenchmarkAddPending measures Add with pendingJobs() jobs already
// pending (due in an hour), and reports the heap held per pending job
// (job, table entry and wheel link; the ID string is the caller's).
// "steady" cancels the job it replaces, so the number pending stays put,
// as with order timeouts that are added and settled at the same rate;
// "growing" adds new IDs only, paying for the table's growth.
func BenchmarkAddPending(b *testing.B) {
	n := pendingJobs()
	ids := jobIDs(n)
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, id := range ids {
		if err := s.Add(id, After(time.Hour), noop); err != nil {
			b.Fatal(err)
		}
	}
	s.sched.Len() // the wheel has taken every Schedule
	runtime.GC()
	runtime.ReadMemStats(&after)
	perJob := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
	when := After(time.Hour)
	b.Run("steady", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			id := ids[i%n]
			s.Cancel(id)
			if err := s.Add(id, when, noop); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(perJob, "B/job")
	})
	added := 0
	b.Run("growing", func(b *testing.B) {
		b.ReportAllocs()
		more := jobIDs(added + b.N)[added:]
		added += b.N
		b.ResetTimer()
		for i := range b.N {
			if err := s.Add("x"+more[i], when, noop); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBurst runs b.N no-op one-shot jobs all due at the same instant
// and reports runs per second from that instant to the last start.
func BenchmarkBurst(b *testing.B) {
	for _, workers := range []int{2, 16} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			s, err := New(Options{Workers: workers, Queue: max(b.N, 1)})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			var left atomic.Int64
			left.Store(int64(b.N))
			done := make(chan struct{})
			fn := func(context.Context, Run) error {
				if left.Add(-1) == 0 {
					close(done)
				}
				return nil
			}
			ids := jobIDs(b.N)
			at := time.Now().Add(time.Second + time.Duration(b.N)*2*time.Microsecond)
			for _, id := range ids {
				if err := s.Add(id, At(at), fn); err != nil {
					b.Fatal(err)
				}
			}
			time.Sleep(time.Until(at))
			b.ResetTimer()
			<-done
			b.ReportMetric(float64(b.N)/time.Since(at).Seconds(), "runs/s")
		})
	}
}

// BenchmarkFirePass measures the wheel owner's side of a tick that fires
// 10k cron jobs at once (the hand-off of BenchmarkJobsCron's seconds): the
// fire callback for each, as the owner calls it, with the workers running
// the no-op jobs meanwhile. ns/op is per job fired. The jobs' wall clock is
// shifted so that they are due; each pass starts with the workers idle.
func BenchmarkFirePass(b *testing.B) {
	const n = 10_000
	s, err := New(Options{Queue: 2 * n})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	yearly, err := Cron("0 0 0 1 1 *")
	if err != nil {
		b.Fatal(err)
	}
	js := make([]*job, n)
	for i, id := range jobIDs(n) {
		if err := s.Add(id, yearly, noop); err != nil {
			b.Fatal(err)
		}
		js[i] = s.jobs.get(id)
	}
	s.Stats()
	shift := 2 * 366 * 24 * time.Hour
	s.clock.offset = func() time.Duration { return shift }
	b.ResetTimer()
	for pass := 0; pass*n < b.N; pass++ {
		b.StopTimer()
		for _, j := range js {
			j.mu.Lock()
			j.next = time.Now().Add(-time.Hour)
			j.mu.Unlock()
		}
		for st := s.Stats(); st.Queued+st.Running > 0; st = s.Stats() {
			runtime.Gosched()
		}
		b.StartTimer()
		now := time.Now()
		for _, j := range js {
			s.fire(&j.tw, now)
		}
	}
}
