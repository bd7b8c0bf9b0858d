// Command install is the program .ci/install-check builds in a new module
// outside the repository, after following the README's Install section: it
// uses the core module (cache), the nested natsjobs module (a job on an
// embedded NATS server) and the nested prometheus module (a collector), so
// a missing or wrong replace line fails the build or the run.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/ttlkit/ttlkit/cache"
	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
	ttlprom "github.com/ttlkit/ttlkit/prometheus"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "install:", err)
		os.Exit(1)
	}
}

func run() error {
	c, err := cache.New(cache.Options[string, string]{TTL: time.Minute})
	if err != nil {
		return err
	}
	defer c.Close()
	c.Set("user:1", "Ada")
	c.Get("user:1")
	c.Get("user:2")

	reg := prometheus.NewRegistry()
	reg.MustRegister(ttlprom.NewCacheCollector("sessions", c))
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	for _, f := range families {
		if f.GetName() != "ttlkit_cache_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					fmt.Printf("cache %s: %v\n", l.GetValue(), m.GetCounter().GetValue())
				}
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := natsjobs.Open(ctx, natsjobs.Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"orders"}})
	if err != nil {
		return err
	}
	defer q.Close()
	if err := q.Enqueue(ctx, natsjobs.Job{Queue: "orders", ID: "A-1", Payload: []byte("cancel if unpaid")}); err != nil {
		return err
	}
	done := make(chan string)
	work, stop := context.WithCancel(ctx)
	defer stop()
	go q.Work(work, "orders", func(_ context.Context, r natsjobs.Run) error {
		done <- fmt.Sprintf("job %s: %s", r.ID, r.Payload)
		return nil
	}, natsjobs.WorkOptions{})
	select {
	case s := <-done:
		fmt.Println(s)
	case <-ctx.Done():
		return fmt.Errorf("job A-1 did not run: %w", ctx.Err())
	}
	return nil
}
