// Command worker is a worker process and nothing else: it connects to a
// NATS server by URL (an external server, or another process's embedded
// server opened with Listen) and runs one queue's jobs until interrupted.
// It links no nats-server: scale out by starting more of it.
//
//	go run ./examples/worker -url nats://127.0.0.1:4222 -token s3cret -queue orders
//
// Each job is printed with its attempt; the handler is where a real worker
// does its work, idempotently (a job runs twice if a worker dies running it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/ttlkit/ttlkit/natsjobs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	url := fs.String("url", "nats://127.0.0.1:4222", "server URL (comma-separated for a cluster)")
	token := fs.String("token", "", "token the server requires, if any")
	queue := fs.String("queue", "orders", "queue to work on")
	n := fs.Int("n", 4, "jobs run at a time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return errors.New("usage: worker [-url u] [-token t] [-queue q] [-n 4]")
	}
	c, err := natsjobs.Open(ctx, natsjobs.Config{URL: *url, Token: *token, Queues: []string{*queue}})
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Work(ctx, *queue, func(ctx context.Context, r natsjobs.Run) error {
		fmt.Fprintf(out, "ran %s (attempt %d): %s\n", r.ID, r.Attempt, r.Payload)
		return nil
	}, natsjobs.WorkOptions{Concurrency: *n})
}
