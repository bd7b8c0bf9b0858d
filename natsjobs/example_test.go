package natsjobs_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

func Example() {
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{
		Server: embedded.Server{Ephemeral: true}, // a real program sets StoreDir
		Queues: []string{"orders"},
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

// A double submit: under Keep the second Enqueue leaves the first job as
// it was (its payload and time) and says so with ErrExists.
func ExampleUnique() {
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"mail"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	welcome := natsjobs.Job{Queue: "mail", ID: "welcome-7", Payload: []byte("first"), Unique: natsjobs.Keep}
	fmt.Println(c.Enqueue(ctx, welcome))
	welcome.Payload = []byte("second")
	err = c.Enqueue(ctx, welcome)
	fmt.Println(errors.Is(err, natsjobs.ErrExists))

	welcome.Unique = natsjobs.Refuse
	fmt.Println(errors.Is(c.Enqueue(ctx, welcome), natsjobs.ErrConflict))

	done := make(chan string)
	work, stop := context.WithCancel(ctx)
	go c.Work(work, "mail", func(ctx context.Context, r natsjobs.Run) error {
		done <- string(r.Payload)
		return nil
	}, natsjobs.WorkOptions{})
	fmt.Println(<-done)
	stop()
	// Output:
	// <nil>
	// true
	// true
	// first
}

// A worker that shuts down on time: when its ctx ends (a SIGINT, say),
// running handlers get Grace, then their ctx is cancelled with the cause
// ErrShutdown, and the unfinished job goes back to the queue.
func ExampleWorkOptions() {
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"reports"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	c.Enqueue(ctx, natsjobs.Job{Queue: "reports", ID: "monthly"})

	logRuns := func(next natsjobs.Func) natsjobs.Func {
		return func(ctx context.Context, r natsjobs.Run) error {
			fmt.Println("start", r.ID, "attempt", r.Attempt)
			return next(ctx, r)
		}
	}
	started, cause := make(chan struct{}), make(chan error, 1)
	work, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		done <- c.Work(work, "reports", func(ctx context.Context, r natsjobs.Run) error {
			close(started)
			<-ctx.Done() // a long job that honours its ctx
			cause <- context.Cause(ctx)
			return ctx.Err()
		}, natsjobs.WorkOptions{
			Timeout:    time.Hour,              // per attempt
			Grace:      100 * time.Millisecond, // at shutdown
			Middleware: []func(natsjobs.Func) natsjobs.Func{logRuns},
		})
	}()
	<-started
	stop()
	fmt.Println(<-cause)
	fmt.Println(<-done)
	// Get reads the job's stored copy, which Work put back before it
	// returned.
	j, _ := c.Get(ctx, "reports", "monthly")
	fmt.Println(j.State, "again, failed attempts:", j.Attempts)
	// Output:
	// start monthly attempt 1
	// natsjobs: worker stopped
	// <nil>
	// pending again, failed attempts: 0
}
