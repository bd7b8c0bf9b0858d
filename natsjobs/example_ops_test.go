package natsjobs_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// An operator pauses a queue, looks at what waits in it, page by page,
// and at one job.
func ExampleClient_List() {
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"orders"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	c.Pause(ctx, "orders") // workers, wherever they run, take nothing
	for _, id := range []string{"order-1", "order-2", "order-3"} {
		c.Enqueue(ctx, natsjobs.Job{Queue: "orders", ID: id, Payload: []byte(`{"total":42}`)})
	}
	c.EnqueueAfter(ctx, natsjobs.Job{Queue: "orders", ID: "reminder-1"}, time.Hour)

	opts := natsjobs.ListOptions{State: natsjobs.Pending, Limit: 2}
	for page := 1; ; page++ {
		p, err := c.List(ctx, "orders", opts)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, j := range p.Jobs {
			fmt.Printf("page %d: %s %s\n", page, j.ID, j.State)
		}
		if p.Next == 0 {
			break
		}
		opts.After = p.Next
	}
	j, _ := c.Get(ctx, "orders", "reminder-1")
	fmt.Printf("%s: %s, runs in about %v\n", j.ID, j.State, time.Until(j.NextRun).Round(time.Hour))
	st, _ := c.QueueStats(ctx, "orders")
	fmt.Printf("paused %v, %d pending, %d scheduled\n", st.Paused, st.Pending, st.Scheduled)
	// Output:
	// page 1: order-1 pending
	// page 1: order-2 pending
	// page 2: order-3 pending
	// reminder-1: scheduled, runs in about 1h0m0s
	// paused true, 3 pending, 1 scheduled
}
