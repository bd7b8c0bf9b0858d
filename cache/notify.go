package cache

import (
	"log/slog"
	"runtime/debug"
	"sync"
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
// (one worker), so that the wheel's owner goroutine, which produces them,
// never runs user code. Events are delivered one at a time in the order
// they were pushed. The queue is unbounded: a slow OnEvict costs memory,
// not expiry latency. No goroutine exists before the first event.
//
// The pool's item is a turn, not an event: push appends to queue and
// hands the pool a turn only when none is pending, and a turn delivers
// every queued event, taking the queue whole each time. So an expiry storm
// costs the owner an append per event, not a pool hand-off (measured: the
// per-event pool push was 2.5-4x slower in a burst).
//
// fn never panics (see cache.evict) but may call runtime.Goexit, as
// t.FailNow does. That ends the worker; its event counts as delivered, and
// the turn goes on from the next event on the worker the pool starts in
// its place (pool.Resume): one goroutine delivers at a time, and no event
// is lost or delivered twice.
type notifier[K comparable, V any] struct {
	fn func(Event[K, V])
	p  *pool.Pool[struct{}, struct{}]

	mu      sync.Mutex
	queue   []Event[K, V] // guarded by mu
	pending bool          // a turn is queued or running; guarded by mu

	// Owned by the delivering turn: the events taken from queue, and the
	// index of the next one to deliver.
	batch []Event[K, V]
	next  int

	stopped atomic.Bool
}

func newNotifier[K comparable, V any](fn func(Event[K, V])) *notifier[K, V] {
	n := &notifier[K, V]{fn: fn}
	n.p = pool.New(pool.Config[struct{}, struct{}]{Workers: 1, Run: n.turn})
	return n
}

// push queues e, and a turn if none is pending. It never blocks for long:
// the lock is held only to append.
func (n *notifier[K, V]) push(e Event[K, V]) {
	n.mu.Lock()
	n.queue = append(n.queue, e)
	start := !n.pending
	n.pending = true
	n.mu.Unlock()
	if start {
		n.p.Push(struct{}{})
	}
}

// turn calls fn for every event of the batch from next on, then for every
// queued event, until the queue is empty.
func (n *notifier[K, V]) turn(struct{}, *struct{}) {
	returned := false
	defer func() {
		if !returned { // fn called runtime.Goexit: go on from the next event
			n.batch[n.next] = Event[K, V]{}
			n.next++
			n.p.Resume(struct{}{})
		}
	}()
	for {
		for n.next < len(n.batch) {
			n.fn(n.batch[n.next])
			n.batch[n.next] = Event[K, V]{} // release key and value
			n.next++
		}
		n.mu.Lock()
		n.batch, n.queue, n.next = n.queue, n.batch[:0], 0
		if len(n.batch) == 0 {
			n.pending = false
			n.mu.Unlock()
			returned = true
			return
		}
		n.mu.Unlock()
	}
}

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
