package natsjobs_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ttlkit/ttlkit/natsjobs"
)

func Example() {
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{
		Ephemeral: true, // a real program sets StoreDir
		Queues:    []string{"orders"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	c.EnqueueAfter(ctx, natsjobs.Job{Queue: "orders", ID: "unpaid-1", Payload: []byte("order 1")}, 100*time.Millisecond)
	c.EnqueueAfter(ctx, natsjobs.Job{Queue: "orders", ID: "unpaid-2", Payload: []byte("order 2")}, 100*time.Millisecond)
	c.Cancel(ctx, "orders", "unpaid-2") // order 2 was paid

	done := make(chan string)
	work, stop := context.WithCancel(ctx)
	go c.Work(work, "orders", func(ctx context.Context, r natsjobs.Run) error {
		done <- fmt.Sprintf("%s: cancel %s (attempt %d)", r.ID, r.Payload, r.Attempt)
		return nil
	}, natsjobs.WorkOptions{})
	fmt.Println(<-done)
	stop()
	// Output: unpaid-1: cancel order 1 (attempt 1)
}
