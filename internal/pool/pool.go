// Package pool is the module's one worker pool: it runs queued items on
// at most a fixed number of goroutines, recovers panics, replaces a
// goroutine ended by runtime.Goexit, bounds its queue if asked, and shuts
// down by dropping what is queued (Close) or running it first (Drain).
// timingwheel runs fired callbacks on it, jobs runs attempts on it,
// idletimeout closes reaped connections on it, natsjobs runs handlers on
// it, and the cache delivers Expired events to OnEvict on it.
//
// # Concepts
//
//   - The queue: a ring of items, unbounded or at most Limit long.
//   - Workers: goroutines started when work arrives, at most Workers of
//     them, waiting (parked) while the queue is empty, until Close or Drain;
//     or, with ExitWhenIdle, leaving as soon as they find it empty.
//   - The wake chain: a push wakes a parked worker, or starts one, only if
//     none is already on its way to the queue, and a worker that takes an
//     item while more wait wakes or starts the next one. A burst thus
//     ramps up to every worker without starting more goroutines than there
//     are items, and the pushing goroutine (a wheel's owner) starts at most
//     one per push.
//   - The spare ring: when a worker finds the queue empty, a ring of more
//     than 4096 places is let go, held only by a weak pointer: the garbage
//     collector frees it at its next cycle (as it would a dropped ring),
//     and a burst that comes first takes it back up. So a storm's memory
//     is given back, and a burst that recurs (every job of a cron spec due
//     at the same second) does not grow a new ring each time.
//   - Leaving user code: an item whose Run panics or calls runtime.Goexit
//     is reported to Panic (with ErrGoexit for a Goexit); a new goroutine
//     takes the worker's place and the queue goes on.
package pool

import (
	"errors"
	"runtime/debug"
	"sync"
	"weak"
)

// ErrGoexit is the recovered value reported for code that called
// runtime.Goexit (as t.FailNow and t.SkipNow do in a test) instead of
// returning. It is the module's one such value: timingwheel.ErrGoexit is
// this error.
var ErrGoexit = errors.New("ttlkit: user code called runtime.Goexit")

// Config describes a Pool. Workers must be positive.
type Config[T, W any] struct {
	Workers int // goroutines at most
	Limit   int // items queued at most; 0: unbounded
	// ExitWhenIdle makes a worker that finds the queue empty leave instead
	// of parking, so an idle pool holds no goroutine (for work that comes
	// in rare storms); the next push starts a worker again.
	ExitWhenIdle bool
	// Run runs one item on a worker; w is the worker's own value, kept
	// from one item to the next (a new worker starts with a zero W).
	Run func(item T, w *W)
	// Panic, if set, receives an item whose Run panicked (recovered is
	// the value passed to panic) or called runtime.Goexit (recovered is
	// ErrGoexit), with the stack, on the worker. If nil, panics are not
	// recovered: they crash the program as in any goroutine. A Goexit
	// ends the worker either way, and a new goroutine takes its place.
	Panic func(item T, recovered any, stack []byte)
}

// Pool runs items on worker goroutines. All fields are guarded by mu.
type Pool[T, W any] struct {
	mu      sync.Mutex
	cond    sync.Cond // parked workers wait on it
	cfg     Config[T, W]
	ring    []T
	head, n int
	workers int               // started and not yet left
	parked  int               // waiting on cond for work
	waking  int               // started or signalled, not yet at the queue
	spare   weak.Pointer[[]T] // the ring last let go (see releaseLocked)
	closed  bool              // Push refuses; workers leave once the queue is empty
	dropped bool              // Close was called: Resume refuses too
	idle    chan struct{}
}

// New returns an empty Pool; it starts no goroutine until work arrives.
func New[T, W any](cfg Config[T, W]) *Pool[T, W] {
	p := &Pool[T, W]{cfg: cfg}
	p.cond.L = &p.mu
	return p
}

// Push queues item and reports whether there was room (false once the
// queue holds Limit items, or after Close or Drain). It never blocks.
func (p *Pool[T, W]) Push(item T) bool {
	p.mu.Lock()
	if p.closed || (p.cfg.Limit > 0 && p.n >= p.cfg.Limit) {
		p.mu.Unlock()
		return false
	}
	p.putLocked(item)
	start := p.wakeLocked()
	p.mu.Unlock()
	if start {
		go p.work(true)
	}
	return true
}

// PushAll queues every item, beyond Limit if need be, and returns false
// (queuing nothing) after Close or Drain. The caller keeps items.
func (p *Pool[T, W]) PushAll(items []T) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	for _, it := range items {
		p.putLocked(it)
	}
	start := len(items) > 0 && p.wakeLocked()
	p.mu.Unlock()
	if start {
		go p.work(true)
	}
	return true
}

// Resume queues item first, beyond Limit: for an item that continues the
// one a worker was running when it called runtime.Goexit. After Drain it
// still queues item, which is part of what Drain runs; it returns false
// (queuing nothing) after Close.
func (p *Pool[T, W]) Resume(item T) bool {
	p.mu.Lock()
	if p.dropped {
		p.mu.Unlock()
		return false
	}
	if p.n == len(p.ring) {
		p.grow()
	}
	p.head = (p.head - 1 + len(p.ring)) % len(p.ring)
	p.ring[p.head] = item
	p.n++
	start := p.wakeLocked()
	p.mu.Unlock()
	if start {
		go p.work(true)
	}
	return true
}

// putLocked appends item to the ring. Locked.
func (p *Pool[T, W]) putLocked(item T) {
	if p.n == len(p.ring) {
		p.grow()
	}
	p.ring[(p.head+p.n)%len(p.ring)] = item
	p.n++
}

// grow doubles the ring (at least 64 places, at most Limit if bounded),
// or takes up the spare ring if it is still there and large enough.
// Locked.
func (p *Pool[T, W]) grow() {
	size := max(2*len(p.ring), 64)
	if p.cfg.Limit > 0 {
		size = max(min(size, p.cfg.Limit), p.n+1) // Resume may go one over
	}
	var ring []T
	if spare := p.spare.Value(); spare != nil && len(*spare) >= size {
		ring = *spare
		p.spare = weak.Pointer[[]T]{}
	} else {
		ring = make([]T, size)
	}
	for i := range p.n {
		ring[i] = p.ring[(p.head+i)%len(p.ring)]
	}
	p.ring, p.head = ring, 0
}

// wakeLocked gets a worker on its way to the queue unless one already is:
// it signals a parked one, or counts a new one and reports that the caller
// must start it. Locked.
func (p *Pool[T, W]) wakeLocked() bool {
	switch {
	case p.waking > 0:
	case p.parked > 0:
		p.waking++
		p.cond.Signal()
	case p.workers < p.cfg.Workers:
		p.workers++
		p.waking++
		return true
	}
	return false
}

// releaseLocked runs when a worker finds the queue empty, before it parks
// or leaves. It lets go of a ring of more than 4096 places, keeping only
// a weak pointer to it (see grow), and of any ring once the pool is
// closed. The ring holds no item: pop clears each place it takes. Locked.
func (p *Pool[T, W]) releaseLocked() {
	if len(p.ring) > 4096 && !p.closed {
		spare := new([]T)
		*spare = p.ring
		p.spare = weak.Make(spare)
	}
	if len(p.ring) > 4096 || p.closed {
		p.ring, p.head = nil, 0
	}
}

// pop takes the oldest item, parking while the queue is empty. fresh is
// true for a worker's first call. Once the pool is closed and the queue
// empty it counts the worker gone and returns ok false. When items remain
// it may ask the caller to start the next worker. Locked.
func (p *Pool[T, W]) pop(fresh bool) (item T, ok, start bool) {
	if fresh {
		p.waking--
	}
	for p.n == 0 && !p.closed && !p.cfg.ExitWhenIdle {
		p.releaseLocked()
		p.parked++
		p.cond.Wait()
		p.parked--
		if !p.closed {
			p.waking-- // before Close or Drain, only a Signal wakes a worker
		}
	}
	if p.n == 0 {
		p.releaseLocked()
		p.workers--
		if p.workers == 0 {
			if p.idle != nil {
				close(p.idle)
				p.idle = nil
			}
		}
		return item, false, false
	}
	item = p.ring[p.head]
	var zero T
	p.ring[p.head] = zero // release what the item holds once run
	p.head = (p.head + 1) % len(p.ring)
	p.n--
	if p.n > 0 {
		start = p.wakeLocked()
	}
	return item, true, start
}

// work is a worker's loop. One deferred call covers every item it runs:
// if Run does not return, the worker reports it and a new goroutine takes
// its place (and its count in workers).
func (p *Pool[T, W]) work(fresh bool) {
	w := new(W)
	var item, zero T
	returned := false
	defer func() {
		if returned {
			return
		}
		var r any
		if p.cfg.Panic != nil {
			r = recover() // nil for a Goexit (panic(nil) has a value since Go 1.21)
		}
		// Started first, so a report that itself exits loses no worker.
		go p.work(false)
		if p.cfg.Panic != nil {
			if r == nil {
				r = ErrGoexit
			}
			p.cfg.Panic(item, r, debug.Stack())
		}
	}()
	for {
		p.mu.Lock()
		next, ok, start := p.pop(fresh)
		p.mu.Unlock()
		fresh = false
		if start {
			go p.work(true)
		}
		if !ok {
			returned = true
			return
		}
		item = next
		p.cfg.Run(item, w)
		item = zero // a parked worker holds nothing of what it ran
	}
}

// Queued returns the number of items waiting for a worker.
func (p *Pool[T, W]) Queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Idle returns a channel closed once no worker is left: at once if none
// is. Workers leave only after Close or Drain, or, with ExitWhenIdle,
// whenever the queue is empty (a later push may start one again).
func (p *Pool[T, W]) Idle() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers == 0 {
		done := make(chan struct{})
		close(done)
		return done
	}
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	return p.idle
}

// Close refuses further pushes and returns the queued items, which will
// not run; the workers leave once their current item returns.
func (p *Pool[T, W]) Close() []T {
	p.mu.Lock()
	defer p.mu.Unlock()
	dropped := make([]T, p.n)
	for i := range dropped {
		dropped[i] = p.ring[(p.head+i)%len(p.ring)]
	}
	p.ring, p.head, p.n = nil, 0, 0
	p.closed, p.dropped = true, true
	p.cond.Broadcast()
	return dropped
}

// Drain refuses further pushes; the workers run what is queued, then
// leave. It does not wait (see Idle).
func (p *Pool[T, W]) Drain() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
}
