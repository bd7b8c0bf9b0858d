// Package natsotel carries OpenTelemetry trace context through natsjobs,
// so that a job's run is traced as a child of the span that enqueued it,
// in whichever process runs it.
//
//	// Enqueuing side:
//	job := natsjobs.Job{Queue: "orders", ID: "unpaid-42", Payload: p}
//	natsotel.Inject(ctx, &job) // ctx carries the request's span
//	c.EnqueueAfter(ctx, job, 15*time.Minute)
//
//	// Working side:
//	tel, err := ttlotel.NewJobs(ttlotel.Config{Scheduler: "orders"})
//	c.Work(ctx, "orders", natsotel.Handler(tel, cancelUnpaid),
//		natsjobs.WorkOptions{Hooks: jobs.Hooks{OnFinish: tel.Record}})
//
// The trace context travels as the W3C headers traceparent and tracestate
// in the job's Header. Each run's span ends when the handler returns, with
// its error recorded; whether a failed run will be retried is decided
// afterwards by the server, so the run's outcome is in the metrics
// (tel.Record) rather than on the span.
//
// How it is built, and why: doc/design/exporters.md.
package natsotel

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs"
	ttlotel "github.com/ttlkit/ttlkit/otel"
	"go.opentelemetry.io/otel/propagation"
)

var errPanicked = errors.New("natsotel: handler panicked")

// w3c is the W3C Trace Context propagator: traceparent and tracestate.
var w3c = propagation.TraceContext{}

// Inject writes the trace context of ctx into job.Header, creating the map
// if it is nil. Without a span in ctx it writes nothing.
func Inject(ctx context.Context, job *natsjobs.Job) {
	if job.Header == nil {
		job.Header = make(map[string]string, 2)
	}
	w3c.Inject(ctx, propagation.MapCarrier(job.Header))
}

// Handler wraps fn so that each run has a span, opened by tel.Start as a
// child of the span whose context the job's headers carry (see Inject),
// or a root span when they carry none. fn's ctx carries the span. A panic
// in fn ends the span with the error "natsotel: handler panicked" and goes
// on, unrecovered, to natsjobs, which recovers it.
func Handler(tel *ttlotel.Jobs, fn natsjobs.Func) natsjobs.Func {
	return func(ctx context.Context, r natsjobs.Run) (err error) {
		ctx = w3c.Extract(ctx, header(r.Header))
		ctx, span := tel.Start(ctx, r.Run)
		returned := false
		defer func() {
			if !returned {
				err = errPanicked // the panic goes on, with its stack, to natsjobs
			}
			tel.End(span, jobs.Event{Run: r.Run, Err: err, Duration: time.Since(r.Started)})
		}()
		err = fn(ctx, r)
		returned = true
		return err
	}
}

// header reads a job's headers case-insensitively: a transport may change
// the case of header names.
type header map[string]string

func (h header) Get(key string) string {
	if v, ok := h[key]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

func (h header) Set(key, value string) { h[key] = value }

func (h header) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}
