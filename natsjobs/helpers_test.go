package natsjobs

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// open opens a client for one test, closed when it ends: with neither
// URL nor Server, on an ephemeral embedded server; an embedded.Server
// without StoreDir is made Ephemeral.
func open(t testing.TB, cfg Config) *Client {
	t.Helper()
	if cfg.URL == "" && cfg.Server == nil {
		cfg.Server = embedded.Server{}
	}
	if s, ok := cfg.Server.(embedded.Server); ok && s.StoreDir == "" {
		s.Ephemeral = true
		cfg.Server = s
	}
	if len(cfg.Queues) == 0 {
		cfg.Queues = []string{"q"}
	}
	c, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// work runs Work in the background until the test ends; it returns a
// function that stops it and waits.
func work(t testing.TB, c *Client, queue string, fn Func, opts WorkOptions) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Work(ctx, queue, fn, opts) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Work: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// recv waits for a value; the deadline only stops a hung test (longer
// at full size, where the server fires tens of thousands of schedules at
// once).
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	limit := time.Duration(size(30, 300)) * time.Second
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("no %s within %v", what, limit)
		panic("unreachable")
	}
}

// statsSettle asks for the queue's Stats until they equal want (the
// server fires schedules, takes deliveries back, in its own time) or 30 s
// have passed, and returns the last answer. The deadline only stops a
// hung test.
func statsSettle(t testing.TB, c *Client, want Stats) Stats {
	t.Helper()
	var st Stats
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		var err error
		if st, err = c.Stats(context.Background(), "q"); err != nil {
			t.Fatal(err)
		}
		if st == want {
			break
		}
	}
	return st
}
