package natsjobs

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestTmpDelay(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	n := 10000
	spread, _ := strconv.Atoi(os.Getenv("SPREAD"))
	type got struct {
		id  string
		now time.Time
	}
	runs := make(chan got, n)
	start := time.Now().Add(3 * time.Second)
	due := make([]time.Time, n)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 8 {
				due[i] = start.Add(time.Duration(i) * time.Duration(spread) * time.Millisecond / time.Duration(n))
				if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: fmt.Sprint(i)}, due[i]); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("enqueued in %v", time.Until(start)*-1+3*time.Second)
	for range 2 {
		work(t, c, "q", func(ctx context.Context, r Run) error {
			runs <- got{r.ID, time.Now()}
			return nil
		}, WorkOptions{Concurrency: 8})
	}
	late := make([]time.Duration, 0, n)
	byIdx := make([]time.Duration, n)
	for range n {
		g := recv(t, runs, "run")
		i, _ := strconv.Atoi(g.id)
		d := g.now.Sub(due[i])
		late = append(late, d)
		byIdx[i] = d
	}
	slices.Sort(late)
	t.Logf("%d jobs over %d ms: lateness p50 %v, p90 %v, p99 %v, max %v", n, spread, late[n/2], late[n*9/10], late[n*99/100], late[n-1])
	for k := 0; k < n; k += n / 20 {
		t.Logf("i=%d late %v", k, byIdx[k])
	}
}
