package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// lines is an io.Writer that sends each write on a channel.
type lines chan string

func (l lines) Write(p []byte) (int, error) { l <- string(p); return len(p), nil }

// A job enqueued on one process's embedded server runs on the worker,
// which reaches it by URL and token.
func TestWorkerRunsJobByURL(t *testing.T) {
	ctx := context.Background()
	srv, err := natsjobs.Open(ctx, natsjobs.Config{
		Server: embedded.Server{Ephemeral: true, Listen: "127.0.0.1:0", Token: "s3cret"},
		Queues: []string{"orders"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Enqueue(ctx, natsjobs.Job{Queue: "orders", ID: "A-1", Payload: []byte("cancel if unpaid")}); err != nil {
		t.Fatal(err)
	}

	out := make(lines, 1)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(wctx, []string{"-url", srv.URL(), "-token", "s3cret"}, out) }()
	select {
	case l := <-out:
		if want := "ran A-1 (attempt 1): cancel if unpaid\n"; l != want {
			t.Errorf("worker printed %q, want %q", l, want)
		}
	case err := <-done:
		t.Fatalf("worker ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not run")
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("worker: %v", err)
	}
}

func TestWorkerWrongToken(t *testing.T) {
	ctx := context.Background()
	srv, err := natsjobs.Open(ctx, natsjobs.Config{
		Server: embedded.Server{Ephemeral: true, Listen: "127.0.0.1:0", Token: "s3cret"},
		Queues: []string{"orders"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	err = run(ctx, []string{"-url", srv.URL(), "-token", "guess"}, make(lines, 1))
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("worker with a wrong token: %v, want an authorization error", err)
	}
}
