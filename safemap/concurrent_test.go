package safemap

import (
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentUse runs writers that grow and shrink their own key ranges
// (so migrations start and run under contention), readers, and Ranges whose
// f writes, all at once; run it with -race. Each writer owns its keys, so it
// can check every Get against what it last wrote, and every value encodes
// its key, so any reader can check that a value belongs to its key.
func TestConcurrentUse(t *testing.T) {
	const (
		writers = 4
		keys    = 2000 // per writer
		rounds  = 3
	)
	m := New[int, int]()
	val := func(k, round int) int { return k*16 + round }
	keyOf := func(v int) int { return v / 16 }

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	report := func(format string, args ...any) {
		select {
		case errs <- fmt.Errorf(format, args...):
		default:
		}
	}
	stop := make(chan struct{})

	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo := w * keys
			for round := range rounds {
				for k := lo; k < lo+keys; k++ {
					m.Set(k, val(k, round))
				}
				for k := lo; k < lo+keys; k++ {
					if got, ok := m.Get(k); !ok || got != val(k, round) {
						report("writer %d: Get(%d) = %d, %v; want %d, true", w, k, got, ok, val(k, round))
						return
					}
				}
				// Keep one key in 50: enough to start migrations.
				for k := lo; k < lo+keys; k++ {
					if k%50 != 0 {
						if got, ok := m.LoadAndDelete(k); !ok || got != val(k, round) {
							report("writer %d: LoadAndDelete(%d) = %d, %v; want %d, true", w, k, got, ok, val(k, round))
							return
						}
					}
				}
			}
		}()
	}
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if r == 0 {
					k := i % (writers * keys)
					if v, ok := m.Get(k); ok && keyOf(v) != k {
						report("reader: Get(%d) = %d, which belongs to key %d", k, v, keyOf(v))
					}
					continue
				}
				seen := map[int]bool{}
				m.Range(func(k, v int) bool {
					if keyOf(v) != k {
						report("Range passed %d, %d; the value belongs to key %d", k, v, keyOf(v))
					}
					// Keys that are never deleted are passed at most once;
					// others may be deleted and added again during the
					// Range, and then may be passed twice.
					if seen[k] && k%50 == 0 {
						report("Range passed key %d twice", k)
					}
					seen[k] = true
					if k%50 == 0 {
						// Keys no writer owns, removed before the final check.
						m.Set(-1-k%7, val(-1-k%7, 0))
					}
					return len(seen) < 500
				})
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	for k := -7; k < 0; k++ {
		m.Delete(k)
	}
	want := map[int]int{}
	for k := range writers * keys {
		if k%50 == 0 {
			want[k] = val(k, rounds-1)
		}
	}
	// Deletes that overlapped a Range may have postponed a migration; one
	// more delete, with no Range running, must start it.
	m.Delete(-1)
	c := newChecker(t, m)
	c.check()
	c.equal(want, func(a, b int) bool { return a == b })
}
