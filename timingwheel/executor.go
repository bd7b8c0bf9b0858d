package timingwheel

import "sync"

// executor runs callbacks for fired timers on up to limit worker goroutines.
// The owner goroutine only appends to the queue, so a slow callback never
// stalls the wheel; workers start when work arrives and exit when the queue
// is empty.
type executor[E any] struct {
	mu      sync.Mutex
	queue   []E // guarded by mu; queue[head:] is pending
	head    int // guarded by mu
	running int // guarded by mu: workers alive
	// idle is closed when running drops to 0; made by idleChan, for
	// Shutdown. Guarded by mu.
	idle  chan struct{}
	limit int
	run   func(E) // runs one callback, recovering panics
}

// submit queues batch and starts workers up to the limit. The caller keeps
// batch.
func (e *executor[E]) submit(batch []E) {
	e.mu.Lock()
	if e.head > 0 && e.head >= len(e.queue)-e.head {
		// The consumed prefix is at least as long as what is pending:
		// move the pending part down, so a queue that never runs empty
		// does not grow with everything that ever passed through it.
		// Amortized O(1): each move is paid for by as many consumed items.
		n := copy(e.queue, e.queue[e.head:])
		clear(e.queue[n:]) // the moved items' old places
		e.queue = e.queue[:n]
		e.head = 0
	}
	e.queue = append(e.queue, batch...)
	start := min(e.limit-e.running, len(e.queue)-e.head)
	e.running += start
	e.mu.Unlock()
	for range start {
		go e.work()
	}
}

func (e *executor[E]) work() {
	var zero E
	goexit := true // until the loop returns: a callback called runtime.Goexit
	defer func() {
		if goexit {
			// This goroutine is ending anyway; a new worker takes its
			// place (and its count in running) so the queue goes on.
			go e.work()
		}
	}()
	for {
		e.mu.Lock()
		if e.head == len(e.queue) {
			goexit = false
			e.running--
			if e.running == 0 && e.idle != nil {
				close(e.idle)
				e.idle = nil
			}
			// Keep a modest buffer; give back what a burst grew.
			if cap(e.queue) > 4096 {
				e.queue = nil
			} else {
				e.queue = e.queue[:0]
			}
			e.head = 0
			e.mu.Unlock()
			return
		}
		item := e.queue[e.head]
		e.queue[e.head] = zero // release the key and value once run
		e.head++
		e.mu.Unlock()
		e.run(item)
	}
}

// idleChan returns a channel that is closed once no worker runs: at once if
// none does. Workers start only when the owner submits work, so after the
// owner has exited the channel stays closed for good.
func (e *executor[E]) idleChan() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running == 0 {
		done := make(chan struct{})
		close(done)
		return done
	}
	if e.idle == nil {
		e.idle = make(chan struct{})
	}
	return e.idle
}
