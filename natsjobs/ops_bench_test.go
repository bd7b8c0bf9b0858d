package natsjobs

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkListPage reads a page of 50 pending jobs from queues of 10,000
// and 100,000: without a prefix (one direct read per job), with a prefix
// that every ID matches (batched direct reads), and without a prefix from
// a stream that does not allow direct reads (one leader read per job).
func BenchmarkListPage(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		c := open(b, Config{})
		ctx := context.Background()
		if err := c.Pause(ctx, "q"); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i += 5000 {
			batch := make([]Job, 5000)
			for k := range batch {
				batch[k] = Job{Queue: "q", ID: fmt.Sprintf("job-%07d", i+k), Payload: make([]byte, 200)}
			}
			if err := c.EnqueueBatch(ctx, time.Time{}, batch...); err != nil {
				b.Fatal(err)
			}
		}
		page := func(b *testing.B, prefix string) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := c.List(ctx, "q", ListOptions{State: Pending, Limit: 50, Prefix: prefix})
				if err != nil || len(p.Jobs) != 50 || p.Next == 0 {
					b.Fatalf("%d jobs, next %d, %v", len(p.Jobs), p.Next, err)
				}
			}
		}
		b.Run(fmt.Sprintf("jobs=%d/single", n), func(b *testing.B) { page(b, "") })
		b.Run(fmt.Sprintf("jobs=%d/batched", n), func(b *testing.B) { page(b, "job-") })
		s, err := c.js.Stream(ctx, workStream("q"))
		if err != nil {
			b.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.AllowDirect = false
		if _, err := c.js.UpdateStream(ctx, cfg); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("jobs=%d/leader", n), func(b *testing.B) { page(b, "") })
		c.Close()
	}
}
