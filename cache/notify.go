package cache

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// ErrGoexit is the Recovered value of the Panic reported for an OnEvict
// call that called runtime.Goexit (as t.FailNow does). It is
// timingwheel.ErrGoexit, the module's one such value.
var ErrGoexit = timingwheel.ErrGoexit

// Panic describes an OnEvict call (or an OnRefreshError call) that
// panicked or exited its goroutine. The cache recovers a panic and goes on
// as if the callback had returned; Options.OnPanic receives this report,
// and Err turns it into the module's one panic report type.
type Panic[K comparable, V any] struct {
	Event     Event[K, V] // the event OnEvict was called with
	Recovered any         // the value passed to panic, or ErrGoexit
	Stack     []byte      // the stack of the goroutine that ran OnEvict
}

// String returns the reason, the key and the panic value.
func (p Panic[K, V]) String() string {
	return fmt.Sprintf("cache: OnEvict(%v %v) panicked: %v", p.Event.Reason, p.Event.Key, p.Recovered)
}

// Err returns p as the module's one panic report: a
// *timingwheel.PanicError whose Key is the event's key, with the same
// value (Recovered) and stack.
func (p Panic[K, V]) Err() *timingwheel.PanicError {
	return &timingwheel.PanicError{Key: p.Event.Key, Value: p.Recovered, Stack: p.Stack}
}

// evict calls OnEvict with e, recovering a panic and handing it to
// OnPanic. A runtime.Goexit in OnEvict is reported too (as ErrGoexit) but
// not stopped: it ends the calling goroutine (see notifier for the
// delivery goroutine).
func (c *cache[K, V]) evict(e Event[K, V]) {
	returned := false
	defer func() {
		if returned {
			return
		}
		r := recover()
		if r == nil {
			r = ErrGoexit // a panic always has a value (panic(nil) too, since Go 1.21)
		}
		c.onPanic(Panic[K, V]{Event: e, Recovered: r, Stack: debug.Stack()})
	}()
	c.onEvict(e)
	returned = true
}

// logPanic is the default OnPanic.
func (c *cache[K, V]) logPanic(p Panic[K, V]) {
	slog.Error("cache: OnEvict panicked", "cache", c.name, "key", p.Event.Key, "reason", p.Event.Reason,
		"panic", p.Recovered, "stack", string(p.Stack))
}

// notifier delivers Expired events to OnEvict from its own goroutine, so
// that the wheel's owner goroutine, which produces them, never runs user
// code. Events are delivered one at a time in the order they were pushed.
// The queue is unbounded: a slow OnEvict costs memory, not expiry latency.
//
// fn never panics (see cache.evict) but may call runtime.Goexit, as
// t.FailNow does. The delivering goroutine then ends, and on its way out
// starts another that goes on with the next event: one goroutine delivers
// at a time, and no event is lost or delivered twice.
type notifier[K comparable, V any] struct {
	fn func(Event[K, V])

	mu    sync.Mutex
	queue []Event[K, V] // guarded by mu

	// Owned by the delivering goroutine: the events taken from queue,
	// and the index of the next one to deliver.
	batch []Event[K, V]
	next  int

	wake chan struct{} // capacity 1: "the queue may be non-empty"
	quit chan struct{} // closed by stop
	done chan struct{} // closed when the last delivering goroutine exits
}

func newNotifier[K comparable, V any](fn func(Event[K, V])) *notifier[K, V] {
	n := &notifier[K, V]{
		fn:   fn,
		wake: make(chan struct{}, 1),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	go n.run()
	return n
}

// push queues e and wakes the goroutine. It never blocks for long: the
// lock is held only to append.
func (n *notifier[K, V]) push(e Event[K, V]) {
	n.mu.Lock()
	n.queue = append(n.queue, e)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *notifier[K, V]) run() {
	returned := false
	defer func() {
		if !returned {
			// fn called runtime.Goexit: its event counts as delivered,
			// and a new goroutine takes over from the next one.
			n.batch[n.next] = Event[K, V]{}
			n.next++
			go n.run()
		}
	}()
	for {
		n.deliver()
		select {
		case <-n.wake:
		case <-n.quit:
			n.deliver()
			returned = true
			close(n.done)
			return
		}
	}
}

// deliver calls fn for every event of the batch from next on, then for
// every queued event, until the queue is empty.
func (n *notifier[K, V]) deliver() {
	for {
		for n.next < len(n.batch) {
			n.fn(n.batch[n.next])
			n.batch[n.next] = Event[K, V]{} // release key and value
			n.next++
		}
		n.mu.Lock()
		n.batch, n.queue, n.next = n.queue, n.batch[:0], 0
		n.mu.Unlock()
		if len(n.batch) == 0 {
			return
		}
	}
}

// stop makes the goroutine deliver what is queued and exit; with wait, it
// waits for that. The caller guarantees that push is not called
// concurrently or after.
func (n *notifier[K, V]) stop(wait bool) {
	close(n.quit)
	if wait {
		<-n.done
	}
}
