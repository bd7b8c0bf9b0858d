package jobs

import (
	"sync"
	"time"
)

// task is one unit of work for the pool: an attempt to run, or a skip to
// report.
type task struct {
	j       *job
	gen     uint32 // the job's generation when the task was made
	skip    bool   // report j's pending skip instead of running
	attempt int32
	due     time.Time // Run.Scheduled
	first   time.Time // the occurrence's first attempt's due time
}

// pool runs tasks on up to max worker goroutines, started when work
// arrives and kept until close. The queue is a ring of at most limit tasks.
//
// Wake-ups are chained, not broadcast: a push wakes (or starts) a worker
// only if none is already on its way to the queue (waking), and a worker
// that takes a task wakes the next one if tasks remain. A burst thus ramps
// up to every worker without waking more goroutines than there are tasks,
// and a steady trickle is served by the workers already awake.
//
// All fields are guarded by mu.
type pool struct {
	mu      sync.Mutex
	cond    sync.Cond // idle workers wait on it
	ring    []task
	head, n int
	limit   int
	workers int // started
	max     int
	idle    int // waiting on cond
	waking  int // signalled or just started, not yet at the queue
	closed  bool
	wg      sync.WaitGroup // one per worker
	// exec runs a task on a worker, which passes its own execution
	// record, and may return a task to run next on the same worker.
	exec func(task, *execution) (task, bool)
}

func newPool(workers, limit int, exec func(task, *execution) (task, bool)) *pool {
	p := &pool{limit: limit, max: workers, exec: exec}
	p.cond.L = &p.mu
	return p
}

// push queues t and reports whether there was room. It never blocks.
func (p *pool) push(t task) bool {
	p.mu.Lock()
	if p.closed || p.n == p.limit {
		p.mu.Unlock()
		return false
	}
	if p.n == len(p.ring) {
		p.grow()
	}
	p.ring[(p.head+p.n)%len(p.ring)] = t
	p.n++
	start := p.wakeLocked()
	p.mu.Unlock()
	if start {
		go p.work(task{}, false)
	}
	return true
}

// wakeLocked gets a worker on its way to the queue unless one already is:
// it signals an idle one, or reports that a new one must be started (and
// counts it). Locked.
func (p *pool) wakeLocked() (start bool) {
	switch {
	case p.waking > 0:
		return false
	case p.idle > 0:
		p.waking++
		p.cond.Signal()
		return false
	case p.workers < p.max:
		p.workers++
		p.waking++
		p.wg.Add(1)
		return true
	}
	return false
}

// grow doubles the ring, up to limit. Locked.
func (p *pool) grow() {
	ring := make([]task, min(max(2*len(p.ring), 64), p.limit))
	for i := range p.n {
		ring[i] = p.ring[(p.head+i)%len(p.ring)]
	}
	p.ring, p.head = ring, 0
}

// pop takes the oldest task, waiting while the queue is empty; false once
// the pool is closed. fresh is true for a worker's first call (its start
// counted it as waking). If tasks remain, it wakes the next worker, and
// start says that one must be started. Locked.
func (p *pool) pop(fresh bool) (t task, ok, start bool) {
	if fresh {
		p.waking--
	}
	for p.n == 0 && !p.closed {
		p.idle++
		p.cond.Wait()
		p.idle--
		if p.closed {
			break
		}
		p.waking-- // only Signal (with waking++) wakes a worker before close
	}
	if p.closed {
		return task{}, false, false
	}
	t = p.ring[p.head]
	p.ring[p.head] = task{}
	p.head = (p.head + 1) % len(p.ring)
	p.n--
	if p.n > 0 {
		start = p.wakeLocked()
	}
	return t, true, start
}

// work is a worker's loop. A worker started by respawn runs carry first
// (when ok), and was not counted as waking.
func (p *pool) work(carry task, ok bool) {
	defer p.wg.Done()
	x := new(execution)
	for fresh := !ok; ; fresh = false {
		// A finished occurrence may hand over the one queued behind it
		// (OverlapQueue), which runs here without another trip through
		// the queue.
		for ok {
			carry, ok = p.exec(carry, x)
		}
		p.mu.Lock()
		t, more, start := p.pop(fresh)
		p.mu.Unlock()
		if start {
			go p.work(task{}, false)
		}
		if !more {
			return
		}
		carry, ok = t, true
	}
}

// respawn replaces a worker whose task called runtime.Goexit: a new one
// takes its place and runs t first when carry is set; otherwise the worker
// is gone and another starts only if tasks wait.
func (p *pool) respawn(t task, carry bool) {
	p.mu.Lock()
	if carry && !p.closed {
		p.wg.Add(1)
		p.mu.Unlock()
		go p.work(t, true)
		return
	}
	p.workers--
	start := p.n > 0 && p.wakeLocked()
	p.mu.Unlock()
	if start {
		go p.work(task{}, false)
	}
}

// queued returns the number of tasks waiting.
func (p *pool) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// close drops the queued tasks, returning them, and makes the workers
// exit once their current task is done.
func (p *pool) close() []task {
	p.mu.Lock()
	dropped := make([]task, p.n)
	for i := range dropped {
		dropped[i] = p.ring[(p.head+i)%len(p.ring)]
	}
	p.ring, p.head, p.n = nil, 0, 0
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	return dropped
}
