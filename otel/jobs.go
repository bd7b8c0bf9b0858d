package ttlotel

import (
	"context"
	"sync"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of every tracer and meter here.
const scope = "github.com/ttlkit/ttlkit/otel"

// Config configures NewJobs. The zero value uses the global providers.
type Config struct {
	// TracerProvider makes the spans; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments; nil means
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Scheduler, if set, is added to every span and measurement as the
	// attribute ttlkit.scheduler, to tell several schedulers apart.
	Scheduler string
}

// Jobs traces and measures the runs of a jobs.Scheduler. Install it with
// Instrument; it is safe for concurrent use.
type Jobs struct {
	tracer   trace.Tracer
	runs     metric.Int64Counter
	duration metric.Float64Histogram
	lateness metric.Float64Histogram
	common   []attribute.KeyValue

	// open holds the spans of running attempts, from the middleware that
	// starts them to the OnFinish hook that ends them with the outcome.
	mu   sync.Mutex
	open map[runKey][]trace.Span
}

// runKey identifies an attempt in both the middleware and the hook: by
// its Seq, which a jobs.Scheduler gives each attempt, and the fields
// besides, for Runs made elsewhere (Seq 0), whose attempts with equal
// fields are matched first in, first out.
type runKey struct {
	seq                uint64
	id                 string
	attempt            int
	scheduled, started time.Time
}

func keyOf(r jobs.Run) runKey { return runKey{r.Seq, r.ID, r.Attempt, r.Scheduled, r.Started} }

// NewJobs makes the tracer and the instruments. It fails only if the
// meter provider refuses an instrument.
func NewJobs(cfg Config) (*Jobs, error) {
	tp, mp := cfg.TracerProvider, cfg.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(scope)
	j := &Jobs{tracer: tp.Tracer(scope), open: make(map[runKey][]trace.Span)}
	var err error
	if j.runs, err = m.Int64Counter("ttlkit.jobs.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Finished attempts, by outcome.")); err != nil {
		return nil, err
	}
	if j.duration, err = m.Float64Histogram("ttlkit.jobs.run.duration", metric.WithUnit("s"),
		metric.WithDescription("How long each attempt ran.")); err != nil {
		return nil, err
	}
	if j.lateness, err = m.Float64Histogram("ttlkit.jobs.run.lateness", metric.WithUnit("s"),
		metric.WithDescription("How long after its due time each attempt started.")); err != nil {
		return nil, err
	}
	if cfg.Scheduler != "" {
		j.common = []attribute.KeyValue{attribute.String("ttlkit.scheduler", cfg.Scheduler)}
	}
	return j, nil
}

// Instrument returns opts with j installed: j's middleware first in
// opts.Middleware (outermost, so the span covers the other middleware),
// and j's OnFinish hook called before opts.Hooks.OnFinish. Pass the
// result to jobs.New:
//
//	s, err := jobs.New(tel.Instrument(jobs.Options{Workers: 16}))
func (j *Jobs) Instrument(opts jobs.Options) jobs.Options {
	opts.Middleware = append([]func(jobs.Func) jobs.Func{j.middleware}, opts.Middleware...)
	if next := opts.Hooks.OnFinish; next != nil {
		opts.Hooks.OnFinish = func(e jobs.Event) { j.finish(e); next(e) }
	} else {
		opts.Hooks.OnFinish = j.finish
	}
	return opts
}

// middleware starts an attempt's span, which the Func's ctx carries, so
// that spans the Func starts are its children. finish ends it.
func (j *Jobs) middleware(fn jobs.Func) jobs.Func {
	return func(ctx context.Context, r jobs.Run) error {
		ctx, span := j.Start(ctx, r)
		k := keyOf(r)
		j.mu.Lock()
		j.open[k] = append(j.open[k], span)
		j.mu.Unlock()
		return fn(ctx, r)
	}
}

// Start opens the span of attempt r, a child of the span in ctx if any,
// and returns ctx carrying it. Instrument does this for a jobs.Scheduler;
// Start, End and Record serve other runners (see package natsotel). The
// span must be ended with End.
func (j *Jobs) Start(ctx context.Context, r jobs.Run) (context.Context, trace.Span) {
	name := r.Name
	if name == "" {
		name = "job"
	}
	attrs := append([]attribute.KeyValue{
		attribute.String("ttlkit.job.id", r.ID),
		attribute.Int("ttlkit.job.attempt", r.Attempt),
		attribute.Float64("ttlkit.job.lateness", r.Started.Sub(r.Scheduled).Seconds()),
	}, j.common...)
	return j.tracer.Start(ctx, name, trace.WithTimestamp(r.Started),
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// finish ends the attempt's span with its outcome and records the
// measurements.
func (j *Jobs) finish(e jobs.Event) {
	k := keyOf(e.Run)
	var span trace.Span
	j.mu.Lock()
	if q := j.open[k]; len(q) > 0 {
		span = q[0]
		if len(q) == 1 {
			delete(j.open, k)
		} else {
			j.open[k] = q[1:]
		}
	}
	j.mu.Unlock()
	if span != nil {
		j.End(span, e)
	}
	j.Record(e)
}

// End ends span, opened by Start, at e.Started + e.Duration: it records
// e.Err, if any, and sets the status to Error, and adds the outcome
// attribute unless e.Outcome is zero.
func (j *Jobs) End(span trace.Span, e jobs.Event) {
	if e.Outcome != 0 {
		span.SetAttributes(attribute.String("ttlkit.job.outcome", e.Outcome.String()))
	}
	if e.Err != nil {
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(e.Started.Add(e.Duration)))
}

// Record adds one finished attempt to the instruments. Instrument does
// this for a jobs.Scheduler; for natsjobs, use it as the Work call's
// Hooks.OnFinish.
func (j *Jobs) Record(e jobs.Event) {
	ctx := context.Background()
	outcome := metric.WithAttributes(append([]attribute.KeyValue{attribute.String("ttlkit.job.outcome", e.Outcome.String())}, j.common...)...)
	j.runs.Add(ctx, 1, outcome)
	j.duration.Record(ctx, e.Duration.Seconds(), outcome)
	j.lateness.Record(ctx, e.Lateness.Seconds(), metric.WithAttributes(j.common...))
}
