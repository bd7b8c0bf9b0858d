// Command durable is the order-timeout example made durable: an order
// left unpaid is cancelled when its payment window ends, and the pending
// timeouts live in a JetStream store on disk, not in the process. Kill
// the process at any moment, start it again: every timeout still fires,
// never early; one that the killed process had already received fires
// AckWait (5 s) later. A timeout runs twice only if the process died while
// running it.
//
//	go run ./examples/durable place A-1 A-2 A-3   # three orders, 30s to pay
//	go run ./examples/durable pay A-2             # paid: its timeout is cancelled
//	go run ./examples/durable run                 # cancel unpaid orders as they expire (Ctrl-C, kill -9, restart...)
//	go run ./examples/durable stats
//
// Every command opens the same embedded store: -store, by default the
// directory ttlkit/durable-example in the user's cache directory
// (os.UserCacheDir, or os.TempDir without one), outside the source tree.
// Only one process can hold it at a time; delete the directory to start
// afresh.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

const queue = "orders"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "durable:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("durable", flag.ContinueOnError)
	store := fs.String("store", defaultStore(), "store directory of the embedded server")
	window := fs.Duration("window", 30*time.Second, "payment window of a placed order")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: durable [-store dir] [-window d] place ID... | pay ID... | run | stats")
	}
	// A timeout that a killed process had received comes back after
	// AckWait: 5 s here, rather than the default 30 s.
	c, err := natsjobs.Open(ctx, natsjobs.Config{Server: embedded.Server{StoreDir: *store}, Queues: []string{queue}, AckWait: 5 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	cmd, ids := fs.Arg(0), fs.Args()[1:]
	switch cmd {
	case "place":
		for _, id := range ids {
			if err := place(ctx, c, id, *window); err != nil {
				return err
			}
			fmt.Fprintf(out, "placed %s: cancelled unless paid within %v\n", id, *window)
		}
	case "pay":
		for _, id := range ids {
			paid, err := pay(ctx, c, id)
			if err != nil {
				return err
			}
			if paid {
				fmt.Fprintf(out, "paid %s\n", id)
			} else {
				fmt.Fprintf(out, "refused %s: not pending (cancelled already, or unknown)\n", id)
			}
		}
	case "run":
		return serve(ctx, c, out)
	case "stats":
		st, err := c.QueueStats(ctx, queue)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "scheduled %d, pending %d, running %d (retrying %d), dead %d\n", st.Scheduled, st.Pending, st.Running, st.Retrying, st.Dead)
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	return nil
}

// defaultStore is the store directory used without -store: in the user's
// cache directory, so that a go run from the source tree writes nothing
// into it, and kept between runs (the example is about surviving them).
func defaultStore() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "ttlkit", "durable-example")
}

// place stores the order's timeout: the job "unpaid ID" runs window from
// now unless pay cancels it first. The payload records when it was placed.
func place(ctx context.Context, c *natsjobs.Client, id string, window time.Duration) error {
	placed := time.Now().UTC().Format(time.RFC3339)
	return c.EnqueueAfter(ctx, natsjobs.Job{Queue: queue, ID: id, Payload: []byte(placed)}, window)
}

// pay cancels the order's timeout; false means there was none left (it
// fired already, or the order is unknown), so the payment is refused.
func pay(ctx context.Context, c *natsjobs.Client, id string) (bool, error) {
	return c.Cancel(ctx, queue, id)
}

// serve cancels orders whose timeout fires, until ctx ends.
func serve(ctx context.Context, c *natsjobs.Client, out io.Writer) error {
	return c.Work(ctx, queue, func(ctx context.Context, r natsjobs.Run) error {
		// A real shop marks the order cancelled and releases its stock
		// here, idempotently: after a crash a timeout may run twice.
		fmt.Fprintf(out, "cancelled %s: placed %s, unpaid (attempt %d)\n", r.ID, r.Payload, r.Attempt)
		return nil
	}, natsjobs.WorkOptions{Concurrency: 4, Retry: jobs.Retry{Attempts: 5, Base: time.Second, Jitter: 0.2}})
}
