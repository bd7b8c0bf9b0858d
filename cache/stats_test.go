package cache

import (
	"errors"
	"math"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// TestStatsSets: Sets counts every write that stored a value, and none
// that stored nothing.
func TestStatsSets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Hour})
		steps := []struct {
			name string
			do   func()
			sets uint64 // Sets after the step
		}{
			{"Set new key", func() { c.Set("a", 1) }, 1},
			{"Set overwrite", func() { c.Set("a", 2) }, 2},
			{"SetWithExpire ttl > 0", func() { c.SetWithExpire("b", 1, time.Minute) }, 3},
			{"SetWithExpire ttl <= 0", func() { c.SetWithExpire("b", 1, 0) }, 3},
			{"SetIfAbsent stores", func() { c.SetIfAbsent("c", 1) }, 4},
			{"SetIfAbsent finds", func() { c.SetIfAbsent("c", 2) }, 4},
			{"GetOrSet stores", func() { c.GetOrSet("d", 1) }, 5},
			{"GetOrSet finds", func() { c.GetOrSet("d", 2) }, 5},
			{"Touch", func() { c.Touch("d") }, 5},
			{"Take stores", func() { c.Take("e", func() (int, error) { return 1, nil }) }, 6},
			{"Take finds", func() { c.Take("e", func() (int, error) { return 2, nil }) }, 6},
			{"Take fails", func() { c.Take("f", func() (int, error) { return 0, errors.New("boom") }) }, 6},
			{"TakeWithExpire ttl <= 0", func() { c.TakeWithExpire("g", 0, func() (int, error) { return 1, nil }) }, 6},
			{"Take overtaken by Set", func() {
				c.Take("h", func() (int, error) { c.Set("h", 1); return 2, nil })
			}, 7},
			{"Close, then Set", func() { c.Close(); c.Set("i", 1) }, 7},
		}
		for _, s := range steps {
			s.do()
			if got := c.Stats().Sets; got != s.sets {
				t.Fatalf("after %s: Sets = %d, want %d", s.name, got, s.sets)
			}
		}

		nan := newCache(t, Options[float64, int]{TTL: time.Hour})
		nan.Set(math.NaN(), 1)
		nan.Set(1, 1)
		if got := nan.Stats().Sets; got != 1 {
			t.Fatalf("Set of NaN and of 1: Sets = %d, want 1 (a NaN key is never stored)", got)
		}
	})
}

// TestStatsLoadTime: LoadTime counts every fetch once, when it ends,
// however it ends, by how long it ran; waiters add nothing.
func TestStatsLoadTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Hour})
		sleep := func(d time.Duration, err error) func() (int, error) {
			return func() (int, error) { time.Sleep(d); return 1, err }
		}
		c.Take("short", sleep(50*time.Microsecond, nil))
		c.Take("ms", sleep(5*time.Millisecond, nil))
		c.Take("error", sleep(2*time.Second, errors.New("boom")))
		var wg sync.WaitGroup
		for range 3 { // one load, two waiters
			wg.Go(func() { c.Take("shared", sleep(100*time.Millisecond, nil)) })
		}
		wg.Wait()
		wg.Go(func() {
			defer func() { _ = recover() }()
			c.Take("panic", func() (int, error) { time.Sleep(20 * time.Second); panic("boom") })
		})
		wg.Wait()
		wg.Go(func() {
			c.Take("goexit", func() (int, error) { time.Sleep(30 * time.Millisecond); runtime.Goexit(); return 0, nil })
		})
		wg.Wait()
		c.Take("short", sleep(time.Hour, nil)) // a hit: no load

		st := c.Stats()
		want := timingwheel.Durations{
			Count: 6,
			Sum:   50*time.Microsecond + 5*time.Millisecond + 2*time.Second + 100*time.Millisecond + 20*time.Second + 30*time.Millisecond,
			Max:   20 * time.Second,
			// 50µs; 5ms; 30ms and 100ms (a bound: in its bucket); 2s; 20s.
			Buckets: [7]uint64{1, 0, 1, 2, 0, 1, 1},
		}
		if st.LoadTime != want || st.Loads != 6 || st.LoadErrors != 3 {
			t.Fatalf("LoadTime = %+v, Loads %d, LoadErrors %d; want %+v, 6, 3", st.LoadTime, st.Loads, st.LoadErrors, want)
		}
	})
}
