package natsjobs

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
)

// go test -run '^$' -bench . -benchtime 20000x ./
//
// Every benchmark runs against its own ephemeral embedded server.

func BenchmarkEnqueue(b *testing.B) {
	c := open(b, Config{})
	ctx := context.Background()
	payload := make([]byte, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := c.Enqueue(ctx, Job{Queue: "q", ID: "j" + fmt.Sprint(i), Payload: payload}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

func BenchmarkEnqueueParallel(b *testing.B) {
	c := open(b, Config{})
	ctx := context.Background()
	payload := make([]byte, 64)
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.Enqueue(ctx, Job{Queue: "q", ID: "j" + fmt.Sprint(n.Add(1)), Payload: payload}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkEnqueueBatch stores b.N jobs in batches of 1000.
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
			for done := 0; done < b.N; done += len(batch) {
				for i := range batch {
					batch[i] = Job{Queue: "q", ID: "j" + fmt.Sprint(done+i), Payload: make([]byte, 64)}
				}
				if err := c.EnqueueBatch(ctx, at, batch[:min(len(batch), b.N-done)]...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

func BenchmarkEnqueueAfter(b *testing.B) {
	c := open(b, Config{})
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "j" + fmt.Sprint(i)}, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkRuns: b.N no-op jobs stored first, then run by two Work calls
// (two workers, 8 handlers each); the timer covers the runs only.
func BenchmarkRuns(b *testing.B) {
	c := open(b, Config{})
	ctx := context.Background()
	for i := range b.N {
		if err := c.Enqueue(ctx, Job{Queue: "q", ID: "j" + fmt.Sprint(i)}); err != nil {
			b.Fatal(err)
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
	work(b, c, "q", fn, opts)
	work(b, c, "q", fn, opts)
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}

// BenchmarkPendingMemory reports the heap per pending delayed job in this
// process, embedded server included.
func BenchmarkPendingMemory(b *testing.B) {
	c := open(b, Config{})
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; b.Loop(); i++ {
		if err := c.EnqueueAfter(ctx, Job{Queue: "q", ID: "j" + fmt.Sprint(i), Payload: make([]byte, 64)}, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "heapB/job")
}
