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

// statsNow returns the queue's Stats, read once. Use it wherever the
// test has seen the last change land: an enqueue or Cancel returned (the
// counts read the stream), OnFinish ran (called once the server confirmed
// the acknowledgement, which removes the message before it answers), Work
// returned (its runners' outcomes were confirmed).
func statsNow(t testing.TB, c *Client) Stats {
	t.Helper()
	st, err := c.Stats(context.Background(), "q")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// statsSettle asks for the queue's Stats until they equal want, or 30 s
// have passed, and returns the last answer; the deadline only stops a
// hung test. It is for the counts that change with no event a test can
// wait on: a worker that finds its delivery withdrawn does not answer the
// server, or acknowledges a condemned copy without waiting for the answer
// (run), and the server drops such a delivery from the consumer's running
// count in its own time (once AckWait ran out, or when it reaches a
// worker again); a child process's answers arrive when they arrive. Between reads it waits 10 ms, doubling up to
// 200 ms, so that a long wait does not spin a core against the server.
// Where the test saw the last change land, use statsNow.
func statsSettle(t testing.TB, c *Client, want Stats) Stats {
	t.Helper()
	var st Stats
	wait := 10 * time.Millisecond
	for deadline := time.Now().Add(30 * time.Second); ; {
		if st = statsNow(t, c); st == want || time.Now().After(deadline) {
			return st
		}
		<-time.After(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
}
