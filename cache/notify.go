package cache

import (
	"log/slog"
	"runtime/debug"
	"sync/atomic"

	"github.com/ttlkit/ttlkit/internal/pool"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// evict calls OnEvict with e, recovering a panic and handing it to
// OnPanic. A runtime.Goexit in OnEvict is reported too (Value
// timingwheel.ErrGoexit) but not stopped: it ends the calling goroutine
// (see notifier for the delivery goroutine).
func (c *cache[K, V]) evict(e Event[K, V]) {
	returned := false
	defer func() {
		if !returned {
			c.onPanic(e, recovered(e.Key, recover()))
		}
	}()
	c.onEvict(e)
	returned = true
}

// recovered builds the report for a callback that did not return: r is
// what recover returned, nil for a runtime.Goexit (a panic always has a
// value, panic(nil) too since Go 1.21).
func recovered(key, r any) *timingwheel.PanicError {
	if r == nil {
		r = timingwheel.ErrGoexit
	}
	return &timingwheel.PanicError{Key: key, Value: r, Stack: debug.Stack()}
}

// logPanic is the default OnPanic.
func (c *cache[K, V]) logPanic(e Event[K, V], p *timingwheel.PanicError) {
	slog.Error("cache: callback panicked", "cache", c.name, "key", e.Key, "reason", e.Reason,
		"panic", p.Value, "stack", string(p.Stack))
}

// notifier delivers Expired events to OnEvict on the module's worker pool
// with one worker, so that the wheel's owner goroutine, which produces
// them, never runs user code. Events are delivered one at a time in the
// order they were pushed. The queue is unbounded: a slow OnEvict costs
// memory, not expiry latency. No goroutine exists before the first event.
//
// fn never panics (see cache.evict) but may call runtime.Goexit, as
// t.FailNow does. The worker then ends and the pool starts another that
// goes on with the next event: one goroutine delivers at a time, and no
// event is lost or delivered twice.
type notifier[K comparable, V any] struct {
	p       *pool.Pool[Event[K, V], struct{}]
	stopped atomic.Bool
}

func newNotifier[K comparable, V any](fn func(Event[K, V])) *notifier[K, V] {
	return &notifier[K, V]{p: pool.New(pool.Config[Event[K, V], struct{}]{
		Workers: 1,
		Run:     func(e Event[K, V], _ *struct{}) { fn(e) },
	})}
}

// push queues e for delivery. It never blocks for long: the pool's lock
// is held only to append.
func (n *notifier[K, V]) push(e Event[K, V]) { n.p.Push(e) }

// stop makes the worker deliver what is queued and leave; with wait, it
// waits for that. The caller guarantees that push is not called
// concurrently or after.
func (n *notifier[K, V]) stop(wait bool) {
	n.p.Drain()
	n.stopped.Store(true)
	if wait {
		<-n.p.Idle()
	}
}

// done returns a channel closed once stop was called and the last event
// delivered; nil (never ready) before stop.
func (n *notifier[K, V]) done() <-chan struct{} {
	if !n.stopped.Load() {
		return nil
	}
	return n.p.Idle()
}
