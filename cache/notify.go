package cache

import "sync"

// notifier delivers Expired events to OnEvict from its own goroutine, so
// that the wheel's owner goroutine, which produces them, never runs user
// code. Events are delivered one at a time in the order they were pushed.
// The queue is unbounded: a slow OnEvict costs memory, not expiry latency.
type notifier[K comparable, V any] struct {
	fn func(Event[K, V])

	mu    sync.Mutex
	queue []Event[K, V] // guarded by mu

	wake chan struct{} // capacity 1: "the queue may be non-empty"
	quit chan struct{} // closed by stop
	done chan struct{} // closed when the goroutine has exited
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
	defer close(n.done)
	var batch []Event[K, V]
	for {
		select {
		case <-n.wake:
		case <-n.quit:
			batch = n.deliver(batch)
			return
		}
		batch = n.deliver(batch)
	}
}

// deliver swaps the queue with the spare batch, calls fn for every queued
// event, and returns the emptied batch for reuse.
func (n *notifier[K, V]) deliver(batch []Event[K, V]) []Event[K, V] {
	n.mu.Lock()
	batch, n.queue = n.queue, batch[:0]
	n.mu.Unlock()
	for i := range batch {
		n.fn(batch[i])
		batch[i] = Event[K, V]{} // release key and value
	}
	return batch[:0]
}

// stop delivers what is queued, then ends the goroutine and waits for it.
// The caller guarantees that push is not called concurrently or after.
func (n *notifier[K, V]) stop() {
	close(n.quit)
	<-n.done
}
