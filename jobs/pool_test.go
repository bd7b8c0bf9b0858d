package jobs

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// TestPoolBurstReachesEveryWorker: a burst of blocking tasks pushed at once
// runs on every worker at the same time (wake-ups chain from worker to
// worker), and never on more.
func TestPoolBurstReachesEveryWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers = 8
		release := make(chan struct{})
		var running, peak atomic.Int32
		p := newPool(workers, 100, func(task, *execution) (task, bool) {
			n := running.Add(1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			<-release
			running.Add(-1)
			return task{}, false
		})
		for range 3 * workers {
			if !p.push(task{}) {
				t.Fatal("push refused")
			}
		}
		synctest.Wait()
		if got := peak.Load(); got != workers {
			t.Fatalf("%d tasks ran at once, want %d", got, workers)
		}
		close(release)
		synctest.Wait()
		if q := p.queued(); q != 0 {
			t.Fatalf("%d tasks left queued, want 0", q)
		}
		p.close()
		p.wg.Wait()
	})
}

// TestPoolConcurrentPushes: tasks pushed from several goroutines, between
// which workers go idle and wake again, all run exactly once.
func TestPoolConcurrentPushes(t *testing.T) {
	var ran atomic.Int64
	p := newPool(4, 1<<20, func(task, *execution) (task, bool) { ran.Add(1); return task{}, false })
	var wg sync.WaitGroup
	const each = 20_000
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for !p.push(task{}) {
				}
			}
		}()
	}
	wg.Wait()
	for ran.Load() != 4*each {
		runtime.Gosched()
	}
	p.close()
	p.wg.Wait()
	if p.workers > 4 {
		t.Fatalf("%d workers started, want at most 4", p.workers)
	}
}
