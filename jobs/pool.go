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
	closed  bool
	wg      sync.WaitGroup // one per worker
	exec    func(task) (task, bool)
}

func newPool(workers, limit int, exec func(task) (task, bool)) *pool {
	p := &pool{limit: limit, max: workers, exec: exec}
	p.cond.L = &p.mu
	return p
}

// push queues t and reports whether there was room. It never blocks: it
// wakes an idle worker or starts a new one.
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
	start := false
	if p.idle > 0 {
		p.cond.Signal()
	} else if p.workers < p.max {
		p.workers++
		p.wg.Add(1)
		start = true
	}
	p.mu.Unlock()
	if start {
		go p.work()
	}
	return true
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
// the pool is closed. Locked.
func (p *pool) pop() (task, bool) {
	for p.n == 0 && !p.closed {
		p.idle++
		p.cond.Wait()
		p.idle--
	}
	if p.closed {
		return task{}, false
	}
	t := p.ring[p.head]
	p.ring[p.head] = task{}
	p.head = (p.head + 1) % len(p.ring)
	p.n--
	return t, true
}

func (p *pool) work() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		t, ok := p.pop()
		p.mu.Unlock()
		if !ok {
			return
		}
		// A finished occurrence may hand over the one queued behind it
		// (OverlapQueue), which runs here without another trip through
		// the queue.
		for ok {
			t, ok = p.exec(t)
		}
	}
}

// queued returns the number of tasks waiting.
func (p *pool) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// close drops the queued tasks, returning how many there were, and makes
// the workers exit once their current task is done.
func (p *pool) close() int {
	p.mu.Lock()
	dropped := p.n
	p.ring, p.head, p.n = nil, 0, 0
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	return dropped
}
