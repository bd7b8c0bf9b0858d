package natsotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
	ttlotel "github.com/ttlkit/ttlkit/otel"
	"github.com/ttlkit/ttlkit/otel/natsotel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestRunIsChildOfEnqueuer enqueues a job from inside a span on an
// embedded NATS server and checks that the run's span, in the worker, has
// that span as its parent, in the same trace.
func TestRunIsChildOfEnqueuer(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	tel, err := ttlotel.NewJobs(ttlotel.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"orders"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	reqCtx, req := tp.Tracer("app").Start(ctx, "checkout")
	job := natsjobs.Job{Queue: "orders", ID: "unpaid-1", Payload: []byte("order 1")}
	natsotel.Inject(reqCtx, &job)
	if err := c.Enqueue(reqCtx, job); err != nil {
		t.Fatal(err)
	}
	req.End()

	ran := make(chan error, 1)
	work, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- c.Work(work, "orders", natsotel.Handler(tel, func(ctx context.Context, r natsjobs.Run) error {
			err := errors.New("card declined")
			ran <- err
			return jobs.Permanent(err)
		}), natsjobs.WorkOptions{})
	}()
	<-ran
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Work: %v", err)
	}

	var run sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == "job" {
			run = s
		}
	}
	if run == nil {
		t.Fatalf("no run span among %d ended spans", len(sr.Ended()))
	}
	if got, want := run.Parent().SpanID(), req.SpanContext().SpanID(); got != want {
		t.Errorf("run span's parent = %v, want the enqueuer's span %v", got, want)
	}
	if got, want := run.SpanContext().TraceID(), req.SpanContext().TraceID(); got != want {
		t.Errorf("run span's trace = %v, want %v", got, want)
	}
	if !run.Parent().IsRemote() {
		t.Error("run span's parent is not marked remote")
	}
	if run.Status().Code != codes.Error || len(run.Events()) != 1 {
		t.Errorf("run span: status %v, %d events; want Error and the recorded error", run.Status(), len(run.Events()))
	}
}

// TestHandlerWithoutTraceContext: a job enqueued without a span runs in a
// root span.
func TestHandlerWithoutTraceContext(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	tel, err := ttlotel.NewJobs(ttlotel.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	h := natsotel.Handler(tel, func(context.Context, natsjobs.Run) error { return nil })
	now := time.Now()
	if err := h(context.Background(), natsjobs.Run{Run: jobs.Run{ID: "x", Attempt: 1, Scheduled: now, Started: now}}); err != nil {
		t.Fatal(err)
	}
	ended := sr.Ended()
	if len(ended) != 1 || ended[0].Parent().IsValid() {
		t.Fatalf("ended = %v, want one root span", ended)
	}
}

// TestHandlerPanicEndsSpan: the span of a panicking handler ends with an
// error, and the panic reaches the caller.
func TestHandlerPanicEndsSpan(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	tel, err := ttlotel.NewJobs(ttlotel.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	h := natsotel.Handler(tel, func(context.Context, natsjobs.Run) error { panic("boom") })
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want boom", r)
			}
		}()
		h(context.Background(), natsjobs.Run{Run: jobs.Run{ID: "x", Attempt: 1}})
	}()
	if ended := sr.Ended(); len(ended) != 1 || ended[0].Status().Code != codes.Error {
		t.Fatalf("ended = %v, want one span with an Error status", ended)
	}
}
