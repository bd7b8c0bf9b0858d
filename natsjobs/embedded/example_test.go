package embedded_test

import (
	"context"
	"fmt"

	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// One process runs the server and enqueues; a worker process (played here
// by a second client) connects by URL with the token and runs the job.
// Only the first needs package embedded, and links nats-server.
func ExampleServer() {
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{
		// A real program sets StoreDir, and a reachable Listen address.
		Server: embedded.Server{Ephemeral: true, Listen: "127.0.0.1:0", Token: "s3cret"},
		Queues: []string{"orders"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close() // stops the server
	c.Enqueue(ctx, natsjobs.Job{Queue: "orders", ID: "A-1", Payload: []byte("cancel if unpaid")})

	worker, err := natsjobs.Open(ctx, natsjobs.Config{URL: c.URL(), Token: "s3cret", Queues: []string{"orders"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer worker.Close()
	done := make(chan string)
	work, stop := context.WithCancel(ctx)
	defer stop()
	go worker.Work(work, "orders", func(_ context.Context, r natsjobs.Run) error {
		done <- fmt.Sprintf("%s: %s", r.ID, r.Payload)
		return nil
	}, natsjobs.WorkOptions{})
	fmt.Println(<-done)
	// Output: A-1: cancel if unpaid
}
