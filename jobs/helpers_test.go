package jobs

import (
	"context"
	"sync"
	"testing"
	"time"
)

// recorder collects hook events and dead letters.
type recorder struct {
	mu     sync.Mutex
	starts []Event
	ends   []Event
	skips  []Event
	cancel []Event
	dead   []DeadLetter
}

func (r *recorder) hooks() Hooks {
	add := func(to *[]Event) func(Event) {
		return func(e Event) {
			r.mu.Lock()
			*to = append(*to, e)
			r.mu.Unlock()
		}
	}
	return Hooks{OnStart: add(&r.starts), OnFinish: add(&r.ends), OnSkip: add(&r.skips), OnCancel: add(&r.cancel)}
}

func (r *recorder) deadLetter(d DeadLetter) {
	r.mu.Lock()
	r.dead = append(r.dead, d)
	r.mu.Unlock()
}

// finished returns a copy of the OnFinish events.
func (r *recorder) finished() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.ends...)
}

func (r *recorder) started() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.starts...)
}

func (r *recorder) skipped() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.skips...)
}

func (r *recorder) letters() []DeadLetter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]DeadLetter(nil), r.dead...)
}

// newScheduler returns a Scheduler whose hooks and default dead-letter
// callback feed a recorder.
func newScheduler(t *testing.T, o Options) (*Scheduler, *recorder) {
	t.Helper()
	r := &recorder{}
	o.Hooks = r.hooks()
	if o.Defaults.DeadLetter == nil {
		o.Defaults.DeadLetter = r.deadLetter
	}
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s, r
}

func shutdown(t *testing.T, s *Scheduler) {
	t.Helper()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func mustAdd(t *testing.T, s *Scheduler, id string, when Schedule, fn Func, o ...JobOptions) {
	t.Helper()
	if err := s.Add(id, when, fn, o...); err != nil {
		t.Fatalf("Add(%q): %v", id, err)
	}
}

func noop(context.Context, Run) error { return nil }

// offsets returns each time's distance from base.
func offsets(base time.Time, ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(base)
	}
	return out
}

func startTimes(es []Event) []time.Time {
	out := make([]time.Time, len(es))
	for i, e := range es {
		out[i] = e.Started
	}
	return out
}
