package natsjobs

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Delayed jobs due 0.5 to 2.5 s ahead: none runs before its time. The
// lateness percentiles are logged (go test -v), not asserted: the machine
// running the tests decides them.
func TestDelayedJobsNeverEarly(t *testing.T) {
	t.Parallel()
	c := open(t, Config{})
	ctx := context.Background()
	n := size(300, 10_000)
	type got struct {
		id  string
		now time.Time
	}
	runs := make(chan got, n)
	work(t, c, "q", func(ctx context.Context, r Run) error {
		runs <- got{r.ID, time.Now()}
		return nil
	}, WorkOptions{Concurrency: 16})
	// Each job is due 0.5 to 2.5 s after it is enqueued.
	due := make(map[string]time.Time, n)
	for i := range n {
		id := fmt.Sprint("d", i)
		due[id] = time.Now().Add(500*time.Millisecond + time.Duration(i%1000)*2*time.Millisecond)
		if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: id}, due[id]); err != nil {
			t.Fatal(err)
		}
	}
	late := make([]time.Duration, 0, n)
	for range n {
		g := recv(t, runs, "run")
		d := g.now.Sub(due[g.id])
		if d < 0 {
			t.Errorf("job %s ran %v early", g.id, -d)
		}
		late = append(late, d)
	}
	slices.Sort(late)
	t.Logf("%d jobs: lateness p50 %v, p99 %v, max %v", n, late[n/2], late[n*99/100], late[n-1])
}
