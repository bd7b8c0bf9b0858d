package natsjobs

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestEnqueueRunsEachJobOnce(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	const n = 200
	for i := range n {
		if err := c.Enqueue(ctx, Job{Queue: "q", ID: fmt.Sprint("job-", i), Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	runs := make(chan Run, n*2)
	work(t, c, "q", func(ctx context.Context, r Run) error { runs <- r; return nil }, WorkOptions{Concurrency: 4})
	seen := map[string]int{}
	for range n {
		r := recv(t, runs, "run")
		seen[r.ID]++
		if want := r.ID[len("job-"):]; string(r.Payload) != want {
			t.Errorf("job %s: payload %q, want %q", r.ID, r.Payload, want)
		}
		if r.Attempt != 1 {
			t.Errorf("job %s: attempt %d, want 1", r.ID, r.Attempt)
		}
	}
	if len(seen) != n {
		t.Errorf("got %d distinct jobs, want %d", len(seen), n)
	}
}

func TestDelayedJobNeverEarly(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	type got struct {
		r   Run
		now time.Time
	}
	runs := make(chan got, 10)
	work(t, c, "q", func(ctx context.Context, r Run) error { runs <- got{r, time.Now()}; return nil }, WorkOptions{Concurrency: 4})
	delays := []time.Duration{50 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond, 2200 * time.Millisecond}
	due := map[string]time.Time{}
	for i, d := range delays {
		id := fmt.Sprint("d", i)
		due[id] = time.Now().Add(d)
		if err := c.EnqueueAt(ctx, Job{Queue: "q", ID: id}, due[id]); err != nil {
			t.Fatal(err)
		}
	}
	for range delays {
		g := recv(t, runs, "run")
		if g.now.Before(due[g.r.ID]) {
			t.Errorf("job %s ran %v early", g.r.ID, due[g.r.ID].Sub(g.now))
		}
		if !g.r.Scheduled.Equal(due[g.r.ID]) {
			t.Errorf("job %s: Scheduled %v, want %v", g.r.ID, g.r.Scheduled, due[g.r.ID])
		}
		t.Logf("%s late by %v", g.r.ID, g.now.Sub(due[g.r.ID]))
	}
}
