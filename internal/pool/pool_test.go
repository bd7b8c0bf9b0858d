package pool

import (
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// recorder collects what ran and what was reported.
type recorder struct {
	mu      sync.Mutex
	ran     []int
	reports map[int]any
}

func (r *recorder) add(i int) {
	r.mu.Lock()
	r.ran = append(r.ran, i)
	r.mu.Unlock()
}

func (r *recorder) report(i int, v any, stack []byte) {
	r.mu.Lock()
	if r.reports == nil {
		r.reports = map[int]any{}
	}
	r.reports[i] = v
	r.mu.Unlock()
	if len(stack) == 0 {
		panic("empty stack")
	}
}

// TestRunsEveryItem: every pushed item runs once, on at most Workers
// goroutines, and the workers leave once the queue is empty.
func TestRunsEveryItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		var mu sync.Mutex
		running, most := 0, 0
		gate := make(chan struct{})
		p := New(Config[int, struct{}]{Workers: 3, Run: func(i int, _ *struct{}) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			<-gate
			rec.add(i)
			mu.Lock()
			running--
			mu.Unlock()
		}})
		for i := range 10 {
			if !p.Push(i) {
				t.Fatalf("Push(%d) = false on an unbounded pool", i)
			}
		}
		synctest.Wait() // the chain has started every worker
		close(gate)
		p.Drain()
		<-p.Idle()
		synctest.Wait()
		slices.Sort(rec.ran)
		if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(rec.ran, want) {
			t.Fatalf("ran %v, want %v", rec.ran, want)
		}
		if most != 3 {
			t.Errorf("at most %d running at once, want 3", most)
		}
		if p.workers != 0 {
			t.Errorf("after Drain: %d workers, want 0", p.workers)
		}
	})
}

// TestBoundedQueue: Push refuses an item beyond Limit; PushAll and Resume
// do not.
func TestBoundedQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var rec recorder
		p := New(Config[int, struct{}]{Workers: 1, Limit: 2, Run: func(i int, _ *struct{}) { <-gate; rec.add(i) }})
		p.Push(0)
		synctest.Wait() // the worker holds 0
		for i, want := range []bool{true, true, false} {
			if got := p.Push(i + 1); got != want {
				t.Errorf("Push(%d) with %d queued = %v, want %v", i+1, i, got, want)
			}
		}
		if !p.Resume(9) || !p.PushAll([]int{4}) {
			t.Fatal("Resume or PushAll refused on a full queue")
		}
		if got := p.Queued(); got != 4 {
			t.Errorf("Queued = %d, want 4", got)
		}
		close(gate)
		p.Drain()
		<-p.Idle()
		if want := []int{0, 9, 1, 2, 4}; !slices.Equal(rec.ran, want) {
			t.Fatalf("ran %v, want %v (Resume first)", rec.ran, want)
		}
	})
}

// TestPanicAndGoexit: an item that panics or calls runtime.Goexit is
// reported, with ErrGoexit for a Goexit, and the queue goes on with the
// same number of workers.
func TestPanicAndGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		p := New(Config[int, struct{}]{Workers: 1, Run: func(i int, _ *struct{}) {
			switch i % 3 {
			case 1:
				panic(i)
			case 2:
				runtime.Goexit()
			}
			rec.add(i)
		}, Panic: rec.report})
		for i := range 9 {
			p.Push(i)
		}
		p.Drain()
		<-p.Idle()
		synctest.Wait()
		if want := []int{0, 3, 6}; !slices.Equal(rec.ran, want) {
			t.Errorf("ran %v, want %v", rec.ran, want)
		}
		for i := range 9 {
			want := any(nil)
			switch i % 3 {
			case 1:
				want = i
			case 2:
				want = ErrGoexit
			}
			if got := rec.reports[i]; got != want {
				t.Errorf("report for %d: %v, want %v", i, got, want)
			}
		}
		if p.workers != 0 {
			t.Errorf("workers = %d after Drain, want 0", p.workers)
		}
	})
}

// TestGoexitWithoutHandler: with no Panic handler a Goexit still replaces
// the worker, and Resume hands what it was doing to the next one first.
func TestGoexitWithoutHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		var p *Pool[int, struct{}]
		p = New(Config[int, struct{}]{Workers: 1, Run: func(i int, _ *struct{}) {
			if i == 1 {
				defer p.Resume(100)
				runtime.Goexit()
			}
			rec.add(i)
		}})
		p.PushAll([]int{0, 1, 2})
		synctest.Wait() // Resume runs before Drain
		p.Drain()
		<-p.Idle()
		if want := []int{0, 100, 2}; !slices.Equal(rec.ran, want) {
			t.Errorf("ran %v, want %v", rec.ran, want)
		}
	})
}

// TestResumeAfterDrain: an item whose worker exits while Drain waits for
// it hands its continuation on, and Drain runs it. Resume refused it after
// Drain, so the cache's OnEvict delivery lost the events after one that
// called runtime.Goexit during Close.
func TestResumeAfterDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		gate := make(chan struct{})
		var p *Pool[int, struct{}]
		p = New(Config[int, struct{}]{Workers: 1, Run: func(i int, _ *struct{}) {
			if i == 1 {
				<-gate
				defer p.Resume(100)
				runtime.Goexit()
			}
			rec.add(i)
		}})
		p.PushAll([]int{0, 1, 2})
		synctest.Wait() // item 1 waits at the gate
		p.Drain()
		close(gate)
		<-p.Idle()
		if want := []int{0, 100, 2}; !slices.Equal(rec.ran, want) {
			t.Errorf("ran %v, want %v", rec.ran, want)
		}
	})
}

// TestWorkerValue: each worker keeps its W from one item to the next.
func TestWorkerValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []int
		p := New(Config[int, int]{Workers: 1, Run: func(i int, w *int) { *w++; seen = append(seen, *w) }})
		p.PushAll([]int{0, 0, 0})
		p.Drain()
		<-p.Idle()
		if want := []int{1, 2, 3}; !slices.Equal(seen, want) {
			t.Errorf("worker's counts %v, want %v", seen, want)
		}
	})
}

// TestClose: Close returns what is queued, in order, which never runs;
// later pushes are refused and the workers leave.
func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var rec recorder
		p := New(Config[int, struct{}]{Workers: 1, Run: func(i int, _ *struct{}) { <-gate; rec.add(i) }})
		p.PushAll([]int{0, 1, 2})
		synctest.Wait()
		if got, want := p.Close(), []int{1, 2}; !slices.Equal(got, want) {
			t.Errorf("Close = %v, want %v", got, want)
		}
		if p.Push(3) || p.PushAll([]int{4}) || p.Resume(5) {
			t.Error("a push after Close was taken")
		}
		close(gate)
		<-p.Idle()
		if want := []int{0}; !slices.Equal(rec.ran, want) {
			t.Errorf("ran %v, want %v", rec.ran, want)
		}
	})
}

// TestQueueStaysBounded: a queue that never runs empty does not keep
// everything that passed through it: the ring holds what is pending.
func TestQueueStaysBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		step := make(chan struct{})
		p := New(Config[int, struct{}]{Workers: 1, Run: func(int, *struct{}) { <-step }})
		batch := make([]int, 10)
		p.PushAll(batch)
		for range 1000 {
			p.PushAll(batch)
			for range 10 {
				step <- struct{}{}
			}
		}
		synctest.Wait()
		p.mu.Lock()
		pending, size := p.n, len(p.ring)
		p.mu.Unlock()
		if size > 8*pending+64 {
			t.Errorf("ring of %d for %d pending items", size, pending)
		}
		for range pending + 1 {
			step <- struct{}{}
		}
		p.Drain()
		<-p.Idle()
	})
}

// TestPushNoAllocs: pushing onto a ring that has room allocates nothing.
func TestPushNoAllocs(t *testing.T) {
	gate := make(chan struct{})
	p := New(Config[int, struct{}]{Workers: 1, Run: func(int, *struct{}) { <-gate }})
	p.Push(0)
	p.Push(0)
	allocs := testing.AllocsPerRun(100, func() { p.Push(1) })
	close(gate)
	p.Drain()
	<-p.Idle()
	if allocs != 0 {
		t.Errorf("Push allocates %v times, want 0", allocs)
	}
}

// TestConcurrentPushes: items pushed from several goroutines, between
// which workers leave and start again, all run exactly once, on at most
// Workers goroutines.
func TestConcurrentPushes(t *testing.T) {
	var mu sync.Mutex
	ran, running, most := 0, 0, 0
	p := New(Config[int, struct{}]{Workers: 4, Limit: 1 << 20, Run: func(int, *struct{}) {
		mu.Lock()
		ran++
		running++
		most = max(most, running)
		mu.Unlock()
		runtime.Gosched()
		mu.Lock()
		running--
		mu.Unlock()
	}})
	var wg sync.WaitGroup
	const each = 20_000
	for range 4 {
		wg.Go(func() {
			for i := range each {
				for !p.Push(i) {
				}
			}
		})
	}
	wg.Wait()
	p.Drain()
	<-p.Idle()
	mu.Lock()
	defer mu.Unlock()
	if ran != 4*each || most > 4 {
		t.Fatalf("%d items ran, at most %d at once; want %d, at most 4", ran, most, 4*each)
	}
}

// TestParkedWorkersWake: workers wait while the queue is empty; a later
// push wakes one of them rather than starting another goroutine, and
// Drain runs what is queued before they leave.
func TestParkedWorkersWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		gate := make(chan struct{}, 10)
		p := New(Config[int, struct{}]{Workers: 2, Run: func(i int, _ *struct{}) { <-gate; rec.add(i) }})
		p.PushAll([]int{0, 1})
		gate <- struct{}{}
		gate <- struct{}{}
		synctest.Wait()
		if p.workers != 2 || p.parked != 2 {
			t.Fatalf("queue empty: %d workers, %d parked; want 2, 2", p.workers, p.parked)
		}
		p.Push(2)
		p.Push(3)
		synctest.Wait()
		if p.workers != 2 || p.parked != 0 {
			t.Fatalf("two pushed: %d workers, %d parked; want 2, 0", p.workers, p.parked)
		}
		p.Push(4)
		p.Drain()
		for range 3 {
			gate <- struct{}{}
		}
		<-p.Idle()
		slices.Sort(rec.ran)
		if want := []int{0, 1, 2, 3, 4}; !slices.Equal(rec.ran, want) {
			t.Fatalf("ran %v, want %v", rec.ran, want)
		}
	})
}

// TestExitWhenIdle: with ExitWhenIdle, the workers run every item and
// leave as soon as the queue is empty, without Close or Drain, and a later
// push starts a worker again; at most Workers run at once throughout.
func TestExitWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		var mu sync.Mutex
		running, most := 0, 0
		gate := make(chan struct{})
		p := New(Config[int, struct{}]{Workers: 2, ExitWhenIdle: true, Run: func(i int, _ *struct{}) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			<-gate
			rec.add(i)
			mu.Lock()
			running--
			mu.Unlock()
		}})
		for i := range 5 {
			p.Push(i)
		}
		synctest.Wait()
		if got := workers(); got != 2 {
			t.Fatalf("%d workers for 5 items, want 2", got)
		}
		close(gate)
		<-p.Idle() // no Close or Drain: they leave on their own
		synctest.Wait()
		if got := workers(); got != 0 {
			t.Fatalf("%d workers after the queue emptied, want 0", got)
		}
		p.Push(5) // starts a worker again
		<-p.Idle()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		slices.Sort(rec.ran)
		if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(rec.ran, want) || most != 2 {
			t.Errorf("ran %v with at most %d at once, want %v with 2", rec.ran, most, want)
		}
	})
}

// workers counts the goroutines in a Pool's worker loop, in the whole
// process. (runtime.NumGoroutine also counts goroutines outside the test,
// such as the previous test's runner on its way out, which made
// TestExitWhenIdle fail under qemu: "4 goroutines after the queue emptied,
// want 5".)
func workers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "internal/pool.(*Pool[...]).work(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestRecurringBurstKeepsItsRing: when the queue empties, the ring a
// burst grew is let go, held by a weak pointer only; the next burst takes
// the same ring back up unless the garbage collector ran in between, which
// frees it. (The pool dropped every ring of more than 4096 places whenever
// a worker parked, so jobs grew a new one for every second's cron burst:
// CPU per run of 10,000 jobs due together was 1.35x what it had been
// before the pool.) Rings of 4096 places or fewer are kept, and a drained
// pool keeps none.
func TestRecurringBurstKeepsItsRing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // only the test's runtime.GC collects
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		p := New(Config[int, struct{}]{Workers: 2, Run: func(int, *struct{}) { <-gate }})
		defer func() { p.Drain(); <-p.Idle() }() // workers parked at a failure leave
		burst := func(n int) {
			for i := range n {
				p.Push(i)
			}
			for range n {
				gate <- struct{}{}
			}
			synctest.Wait() // both workers parked: the pool is idle
		}
		// ring returns the ring in use and the spare one, by their first
		// places.
		ring := func() (inUse, spare *int, size int) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if len(p.ring) > 0 {
				inUse, size = &p.ring[0], len(p.ring)
			}
			if s := p.spare.Value(); s != nil {
				spare = &(*s)[0]
			}
			return inUse, spare, size
		}
		burst(10_000)
		inUse, first, _ := ring()
		if inUse != nil || first == nil {
			t.Fatalf("idle after a burst of 10000: ring in use %p, spare %p; want none in use and a spare", inUse, first)
		}
		p.Push(0) // the next burst starts on the spare ring
		p.mu.Lock()
		taken := &p.ring[0]
		p.mu.Unlock()
		if taken != first {
			t.Errorf("the next burst's ring is at %p, want the spare at %p", taken, first)
		}
		gate <- struct{}{}
		burst(10_000)
		if _, spare, _ := ring(); spare != first {
			t.Errorf("after the same burst again: spare %p, want the first ring %p", spare, first)
		}
		runtime.GC()
		if _, spare, _ := ring(); spare != nil {
			t.Errorf("after a collection: spare %p, want it freed", spare)
		}
		burst(3000) // grows a ring of 4096, which is kept
		if inUse, _, size := ring(); inUse == nil || size != 4096 {
			t.Errorf("idle after a burst of 3000: ring in use %p of %d places, want 4096 kept", inUse, size)
		}
		p.Drain()
		<-p.Idle()
		if inUse, _, _ := ring(); inUse != nil {
			t.Errorf("drained pool: ring in use %p, want none", inUse)
		}
	})
}

// TestRingLetGoWhileAWorkerRuns: a long item on one worker does not keep
// a burst's ring in use: the worker that finds the queue empty lets it go.
func TestRingLetGoWhileAWorkerRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		long := make(chan struct{})
		p := New(Config[int, struct{}]{Workers: 2, Run: func(i int, _ *struct{}) {
			if i < 0 {
				<-long
			}
		}})
		defer func() { close(long); p.Drain(); <-p.Idle() }()
		items := make([]int, 10_000)
		items[0] = -1
		p.PushAll(items)
		synctest.Wait() // one worker in the long item, the other parked
		p.mu.Lock()
		size, spare := len(p.ring), p.spare.Value()
		p.mu.Unlock()
		if size != 0 || spare == nil {
			t.Errorf("queue empty, one worker busy: ring of %d places in use, spare %v; want none in use and a spare", size, spare != nil)
		}
	})
}

// BenchmarkRecurringBurst pushes bursts of 10,000 items, each run once the
// pool is idle again, as a scheduler's jobs all due at the same second
// arrive.
func BenchmarkRecurringBurst(b *testing.B) {
	var wg sync.WaitGroup
	p := New(Config[[8]int64, struct{}]{Workers: 2, Run: func([8]int64, *struct{}) { wg.Done() }})
	var item [8]int64
	for b.Loop() {
		wg.Add(10_000)
		for range 10_000 {
			p.Push(item)
		}
		wg.Wait()
		for { // until both workers park
			p.mu.Lock()
			idle := p.parked == p.workers
			p.mu.Unlock()
			if idle {
				break
			}
			runtime.Gosched()
		}
	}
	p.Drain()
	<-p.Idle()
}
