package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// startTakes starts n goroutines calling take and returns a function that
// waits for them and returns their results.
func startTakes(n int, take func() (int, error)) func() ([]int, []error) {
	vals := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { vals[i], errs[i] = take() })
	}
	return func() ([]int, []error) {
		wg.Wait()
		return vals, errs
	}
}

func TestTakeRunsFetchOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Minute})
		var calls atomic.Int32
		release := make(chan struct{})
		fetch := func() (int, error) {
			calls.Add(1)
			<-release
			return 42, nil
		}
		wait := startTakes(10, func() (int, error) { return c.Take("k", fetch) })
		synctest.Wait() // all ten are in Take: one fetching, nine waiting
		close(release)
		vals, errs := wait()
		for i := range vals {
			if vals[i] != 42 || errs[i] != nil {
				t.Errorf("caller %d: got %d, %v; want 42, nil", i, vals[i], errs[i])
			}
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("fetch ran %d times, want 1", n)
		}
		wantGet(t, c, "k", 42, true)
		if v, err := c.Take("k", func() (int, error) { return 0, errors.New("must not run") }); v != 42 || err != nil {
			t.Errorf("Take of a cached key = %d, %v; want 42, nil", v, err)
		}
		// The loading Take is the one miss; the nine that waited for it
		// are hits (and Waits), as are the Get and the last Take.
		if st := c.Stats(); st.Loads != 1 || st.Misses != 1 || st.Hits != 11 || st.Waits != 9 {
			t.Errorf("Stats() = %+v, want 1 load, 1 miss, 11 hits, 9 waits", st)
		}
	})
}

func TestTakeErrorReachesEveryWaiterAndIsNotCached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Minute})
		boom := errors.New("boom")
		release := make(chan struct{})
		wait := startTakes(5, func() (int, error) {
			return c.Take("k", func() (int, error) { <-release; return 7, boom })
		})
		synctest.Wait()
		close(release)
		_, errs := wait()
		for i, err := range errs {
			if !errors.Is(err, boom) {
				t.Errorf("caller %d: err %v, want boom", i, err)
			}
		}
		wantGet(t, c, "k", 0, false)
		if v, err := c.Take("k", func() (int, error) { return 8, nil }); v != 8 || err != nil {
			t.Errorf("Take after a failed load = %d, %v; want 8, nil (error not cached)", v, err)
		}
		if st := c.Stats(); st.LoadErrors != 1 || st.Loads != 2 {
			t.Errorf("Stats() = %+v, want 2 loads, 1 error", st)
		}
	})
}

func TestTakePanicReachesEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Minute})
		release := make(chan struct{})
		started := make(chan struct{})
		leader := make(chan any, 1)
		go func() {
			defer func() { leader <- recover() }()
			c.Take("k", func() (int, error) {
				close(started)
				<-release
				panic("kaput")
			})
		}()
		<-started
		wait := startTakes(4, func() (int, error) {
			return c.Take("k", func() (int, error) { return 0, errors.New("waiter must not fetch") })
		})
		synctest.Wait()
		close(release)
		_, errs := wait()
		for i, err := range errs {
			var pe *timingwheel.PanicError
			if !errors.As(err, &pe) || pe.Value != "kaput" {
				t.Errorf("waiter %d: err %v, want *timingwheel.PanicError with kaput", i, err)
			}
		}
		r := <-leader
		if pe, ok := r.(*timingwheel.PanicError); !ok || pe.Value != "kaput" || len(pe.Stack) == 0 {
			t.Errorf("leader recovered %v, want *timingwheel.PanicError with kaput and a stack", r)
		}
		wantGet(t, c, "k", 0, false)
		if v, err := c.Take("k", func() (int, error) { return 1, nil }); v != 1 || err != nil {
			t.Errorf("Take after a panicked load = %d, %v; want 1, nil", v, err)
		}
		if st := c.Stats(); st.LoadErrors != 1 {
			t.Errorf("Stats().LoadErrors = %d, want 1", st.LoadErrors)
		}
	})
}

func TestTakePanicErrorUnwrap(t *testing.T) {
	inner := errors.New("inner")
	if pe := (&timingwheel.PanicError{Value: inner}); !errors.Is(pe, inner) {
		t.Errorf("errors.Is(timingwheel.PanicError{inner}, inner) = false, want true")
	}
	if pe := (&timingwheel.PanicError{Value: 3}); pe.Unwrap() != nil {
		t.Errorf("timingwheel.PanicError{3}.Unwrap() = %v, want nil", pe.Unwrap())
	}
}

func TestTakeGoexitReleasesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Minute})
		release := make(chan struct{})
		started := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.Take("k", func() (int, error) {
				close(started)
				<-release
				runtime.Goexit()
				return 0, nil
			})
		}()
		<-started
		wait := startTakes(3, func() (int, error) {
			return c.Take("k", func() (int, error) { return 0, nil })
		})
		synctest.Wait()
		close(release)
		<-done
		_, errs := wait()
		for i, err := range errs {
			if !errors.Is(err, timingwheel.ErrGoexit) {
				t.Errorf("waiter %d: err %v, want timingwheel.ErrGoexit", i, err)
			}
		}
	})
}

func TestTakeCtxWaiterStopsOnItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Minute})
		release := make(chan struct{})
		wait := startTakes(1, func() (int, error) {
			return c.TakeCtx(context.Background(), "k", func(context.Context) (int, error) { <-release; return 5, nil })
		})
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		waiter := startTakes(1, func() (int, error) {
			return c.TakeCtx(ctx, "k", func(context.Context) (int, error) { return 0, errors.New("must not run") })
		})
		synctest.Wait()
		cancel()
		if _, errs := waiter(); !errors.Is(errs[0], context.Canceled) {
			t.Errorf("canceled waiter: err %v, want context.Canceled", errs[0])
		}
		close(release)
		if vals, errs := wait(); vals[0] != 5 || errs[0] != nil {
			t.Errorf("leader: %d, %v; want 5, nil", vals[0], errs[0])
		}
		wantGet(t, c, "k", 5, true)
	})
}

func TestTakeCtxPassesContextToFetch(t *testing.T) {
	c := newCache(t, Options[string, int]{TTL: time.Minute})
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, 9)
	v, err := c.TakeCtx(ctx, "k", func(ctx context.Context) (int, error) { return ctx.Value(ctxKey{}).(int), nil })
	if v != 9 || err != nil {
		t.Errorf("TakeCtx = %d, %v; want 9, nil", v, err)
	}
}

func TestTakeWithExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Hour})
		tests := []struct {
			name   string
			ttl    time.Duration
			stored bool
		}{
			{"positive ttl stores", time.Second, true},
			{"zero ttl returns without storing", 0, false},
			{"negative ttl returns without storing", -time.Second, false},
		}
		for i, tt := range tests {
			key := fmt.Sprint(i)
			v, err := c.TakeWithExpire(key, tt.ttl, func() (int, error) { return i + 1, nil })
			if v != i+1 || err != nil {
				t.Errorf("%s: TakeWithExpire = %d, %v; want %d, nil", tt.name, v, err, i+1)
			}
			_, ok := c.Get(key)
			if ok != tt.stored {
				t.Errorf("%s: stored = %v, want %v", tt.name, ok, tt.stored)
			}
		}
		v, err := c.TakeCtxWithExpire(context.Background(), "ctx", time.Second, func(context.Context) (int, error) { return 3, nil })
		if v != 3 || err != nil {
			t.Errorf("TakeCtxWithExpire = %d, %v; want 3, nil", v, err)
		}
		time.Sleep(time.Second)
		wantGet(t, c, "0", 0, false)
		wantGet(t, c, "ctx", 0, false)
	})
}

func TestTakeOvertakenByWriteIsNotStored(t *testing.T) {
	tests := []struct {
		name  string
		write func(c *Cache[string, int])
		want  int
		ok    bool
	}{
		{"Delete", func(c *Cache[string, int]) { c.Delete("k") }, 0, false},
		{"Set", func(c *Cache[string, int]) { c.Set("k", 100) }, 100, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCache(t, Options[string, int]{TTL: time.Hour})
				release := make(chan struct{})
				wait := startTakes(1, func() (int, error) {
					return c.Take("k", func() (int, error) { <-release; return 1, nil })
				})
				synctest.Wait()
				tt.write(c)
				// A Take after the write starts its own load.
				if v, err := c.Take("k", func() (int, error) { return 2, nil }); err != nil || (tt.ok && v != 100) || (!tt.ok && v != 2) {
					t.Errorf("Take after %s = %d, %v", tt.name, v, err)
				}
				if !tt.ok {
					c.Delete("k")
				}
				close(release)
				if vals, errs := wait(); vals[0] != 1 || errs[0] != nil {
					t.Errorf("overtaken load returned %d, %v; want 1, nil", vals[0], errs[0])
				}
				wantGet(t, c, "k", tt.want, tt.ok)
			})
		})
	}
}

// TestLoadsInFlightMapShrinks: the map of loads in flight of a shard
// (Take's single flight) kept the size of its largest burst forever, since
// Go maps never shrink. It is dropped once a burst is over.
func TestLoadsInFlightMapShrinks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[int, int]{TTL: time.Minute, Limit: 100}) // one shard
		release := make(chan struct{})
		var wg sync.WaitGroup
		for k := range 1000 {
			wg.Go(func() {
				c.Take(k, func() (int, error) { <-release; return k, nil })
			})
		}
		synctest.Wait()
		s := c.c.shards[0].Load()
		s.mu.Lock()
		if n := len(s.calls); n != 1000 {
			t.Fatalf("%d loads in flight, want 1000", n)
		}
		s.mu.Unlock()
		close(release)
		wg.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.calls != nil {
			t.Errorf("after a burst of 1000 loads, the shard keeps a map of %d loads in flight (its storage sized for 1000); want it dropped", len(s.calls))
		}
	})
}
