package ttlotel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
	ttlotel "github.com/ttlkit/ttlkit/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// setup returns a Jobs recording into an in-memory span recorder and a
// manual metric reader.
func setup(t *testing.T) (*ttlotel.Jobs, *tracetest.SpanRecorder, *sdkmetric.ManualReader, trace.TracerProvider) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tel, err := ttlotel.NewJobs(ttlotel.Config{TracerProvider: tp, MeterProvider: mp, Scheduler: "main"})
	if err != nil {
		t.Fatal(err)
	}
	return tel, sr, reader, tp
}

func TestJobsSpansAndMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel, sr, reader, tp := setup(t)
		finished := 0
		s, err := jobs.New(tel.Instrument(jobs.Options{Hooks: jobs.Hooks{OnFinish: func(jobs.Event) { finished++ }}}))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown(context.Background())
		s.Add("ok", jobs.After(time.Second), func(ctx context.Context, r jobs.Run) error {
			_, child := tp.Tracer("app").Start(ctx, "query")
			time.Sleep(2 * time.Millisecond)
			child.End()
			return nil
		}, jobs.JobOptions{Name: "fine"})
		s.Add("bad", jobs.After(2*time.Second), func(context.Context, jobs.Run) error {
			return errors.New("down")
		}, jobs.JobOptions{Retry: jobs.Retry{Attempts: 2, Base: time.Second}})
		time.Sleep(time.Minute)
		synctest.Wait()

		if finished != 3 {
			t.Errorf("the user's OnFinish ran %d times, want 3", finished)
		}
		type span struct {
			name, id, outcome string
			attempt           int64
			status            codes.Code
			events            int
		}
		var got []span
		var fine, query sdktrace.ReadOnlySpan
		for _, s := range sr.Ended() {
			a := attrs(s.Attributes())
			got = append(got, span{s.Name(), a["ttlkit.job.id"].AsString(), a["ttlkit.job.outcome"].AsString(),
				a["ttlkit.job.attempt"].AsInt64(), s.Status().Code, len(s.Events())})
			switch s.Name() {
			case "fine":
				fine = s
				if d := s.EndTime().Sub(s.StartTime()); d != 2*time.Millisecond {
					t.Errorf("span fine lasted %v, want 2ms", d)
				}
				if a["ttlkit.scheduler"].AsString() != "main" {
					t.Errorf("span fine: ttlkit.scheduler = %q, want main", a["ttlkit.scheduler"].AsString())
				}
			case "query":
				query = s
			}
		}
		want := []span{
			{"query", "", "", 0, codes.Unset, 0},
			{"fine", "ok", "succeeded", 1, codes.Unset, 0},
			{"job", "bad", "retrying", 1, codes.Error, 1},
			{"job", "bad", "failed", 2, codes.Error, 1},
		}
		if len(got) != len(want) {
			t.Fatalf("spans = %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("span %d = %+v, want %+v", i, got[i], want[i])
			}
		}
		if fine == nil || query == nil || query.Parent().SpanID() != fine.SpanContext().SpanID() {
			t.Error("the Func's span is not a child of the run's span")
		}

		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		runs := map[string]int64{}
		counts := map[string]uint64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Sum[int64]:
					for _, p := range d.DataPoints {
						o, _ := p.Attributes.Value("ttlkit.job.outcome")
						runs[m.Name+" "+o.AsString()] += p.Value
					}
				case metricdata.Histogram[float64]:
					for _, p := range d.DataPoints {
						counts[m.Name] += p.Count
					}
				}
			}
		}
		wantRuns := map[string]int64{"ttlkit.jobs.runs succeeded": 1, "ttlkit.jobs.runs retrying": 1, "ttlkit.jobs.runs failed": 1}
		for k, v := range wantRuns {
			if runs[k] != v {
				t.Errorf("%s = %d, want %d (all: %v)", k, runs[k], v, runs)
			}
		}
		for _, name := range []string{"ttlkit.jobs.run.duration", "ttlkit.jobs.run.lateness"} {
			if counts[name] != 3 {
				t.Errorf("%s: %d measurements, want 3", name, counts[name])
			}
		}
	})
}

// TestJobsPanicEndsSpan: a panicking Func still gets its span ended, with
// the error recorded.
func TestJobsPanicEndsSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel, sr, _, _ := setup(t)
		s, err := jobs.New(tel.Instrument(jobs.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown(context.Background())
		s.Add("p", jobs.After(time.Second), func(context.Context, jobs.Run) error { panic("boom") })
		time.Sleep(time.Minute)
		synctest.Wait()
		ended := sr.Ended()
		if len(ended) != 1 || ended[0].Status().Code != codes.Error || attrs(ended[0].Attributes())["ttlkit.job.outcome"].AsString() != "failed" {
			t.Fatalf("ended spans = %v, want one failed span with an error status", ended)
		}
		if n := len(sr.Started()); n != 1 {
			t.Errorf("started %d spans, want 1", n)
		}
	})
}

func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// gate is a span processor that holds the start of the second span until
// release is closed, so that the first span is the first one the
// middleware files.
type gate struct {
	started atomic.Int32
	release chan struct{}
}

func (g *gate) OnStart(context.Context, sdktrace.ReadWriteSpan) {
	if g.started.Add(1) == 2 {
		<-g.release
	}
}
func (g *gate) OnEnd(sdktrace.ReadOnlySpan)      {}
func (g *gate) Shutdown(context.Context) error   { return nil }
func (g *gate) ForceFlush(context.Context) error { return nil }

// TestJobsEqualRunsKeepTheirSpans pins issue 20 item 7: spans were matched
// to their OnFinish by the Run's ID, attempt and times, first in, first
// out, so two attempts with equal Runs (two Triggers of an OverlapAllow
// job at one instant) swapped spans: the long failing run's span ended
// "succeeded, 0s" when the short one finished. Runs are now matched by
// their Seq, which tells attempts apart.
func TestJobsEqualRunsKeepTheirSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sr := tracetest.NewSpanRecorder()
		g := &gate{release: make(chan struct{})}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(g), sdktrace.WithSpanProcessor(sr))
		tel, err := ttlotel.NewJobs(ttlotel.Config{TracerProvider: tp, MeterProvider: sdkmetric.NewMeterProvider()})
		if err != nil {
			t.Fatal(err)
		}
		s, err := jobs.New(tel.Instrument(jobs.Options{Workers: 2}))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown(context.Background())
		var calls atomic.Int32
		var slow trace.SpanID // the span the failing attempt's ctx carries
		// The first attempt (the first span filed) runs 1s and fails; the
		// second, held until then, succeeds at once, and finishes first.
		err = s.Add("j", jobs.After(time.Hour), func(ctx context.Context, _ jobs.Run) error {
			if calls.Add(1) == 1 {
				slow = trace.SpanContextFromContext(ctx).SpanID()
				close(g.release)
				time.Sleep(time.Second)
				return errors.New("slow failure")
			}
			return nil
		}, jobs.JobOptions{Overlap: jobs.OverlapAllow})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := s.Trigger("j"); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Minute)
		synctest.Wait()

		ended := sr.Ended()
		if len(ended) != 2 {
			t.Fatalf("%d spans ended, want 2", len(ended))
		}
		for _, sp := range ended {
			outcome := attrs(sp.Attributes())["ttlkit.job.outcome"].AsString()
			d := sp.EndTime().Sub(sp.StartTime())
			if sp.SpanContext().SpanID() == slow {
				if outcome != "failed" || d != time.Second || sp.Status().Code != codes.Error {
					t.Errorf("the failing attempt's span: %s, %v, status %v; want failed, 1s, Error", outcome, d, sp.Status().Code)
				}
			} else if outcome != "succeeded" || d != 0 || sp.Status().Code != codes.Unset {
				t.Errorf("the succeeding attempt's span: %s, %v, status %v; want succeeded, 0s, Unset", outcome, d, sp.Status().Code)
			}
		}
	})
}
