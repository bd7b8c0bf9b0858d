package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// countingLoader returns a Loader that answers "v-KEY", counting its
// calls; keys in missing are not found.
func countingLoader(calls *atomic.Int32, missing ...string) func(context.Context, string) (Loaded[string], error) {
	return func(_ context.Context, key string) (Loaded[string], error) {
		calls.Add(1)
		if slices.Contains(missing, key) {
			return Loaded[string]{NotFound: true}, nil
		}
		return Loaded[string]{Value: "v-" + key}, nil
	}
}

// TestLoadWithoutLoader: Load and LoadAll need a loader.
func TestLoadWithoutLoader(t *testing.T) {
	c := newCache(t, Options[string, string]{TTL: time.Minute})
	if _, err := c.Load(context.Background(), "k"); !errors.Is(err, ErrNoLoader) {
		t.Errorf("Load without a loader: err = %v, want ErrNoLoader", err)
	}
	if _, err := c.LoadAll(context.Background(), []string{"k"}); !errors.Is(err, ErrNoLoader) {
		t.Errorf("LoadAll without a loader: err = %v, want ErrNoLoader", err)
	}
	if c.Refresh("k") {
		t.Error("Refresh without a loader = true, want false")
	}
}

// TestLoadOncePerKeyAndHitRatio: 50 concurrent Loads of one cold key run
// the loader once; the loading caller is the one miss and the 49 that
// waited count as hits (and Waits), so HitRatio reads 0.98, not 0.
func TestLoadOncePerKeyAndHitRatio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		release := make(chan struct{})
		c := newCache(t, Options[string, string]{TTL: time.Minute,
			Loader: func(ctx context.Context, key string) (Loaded[string], error) {
				calls.Add(1)
				<-release
				return Loaded[string]{Value: "v-" + key}, nil
			}})
		var wg sync.WaitGroup
		got := make([]string, 50)
		for i := range got {
			wg.Go(func() {
				v, err := c.Load(context.Background(), "k")
				if err != nil {
					t.Errorf("Load: %v", err)
				}
				got[i] = v
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		for i, v := range got {
			if v != "v-k" {
				t.Fatalf("caller %d got %q, want v-k", i, v)
			}
		}
		st := c.Stats()
		if calls.Load() != 1 || st.Loads != 1 || st.Misses != 1 || st.Hits != 49 || st.Waits != 49 {
			t.Errorf("loader calls %d, Stats %+v; want 1 call, 1 load, 1 miss, 49 hits, 49 waits", calls.Load(), st)
		}
		if r := st.HitRatio(); r != 0.98 {
			t.Errorf("HitRatio = %v, want 0.98", r)
		}
	})
}

// TestLoadWaiterOfFailedLoadIsAMiss: callers that shared a failed load
// got no value: each counts as a miss.
func TestLoadWaiterOfFailedLoadIsAMiss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		release := make(chan struct{})
		c := newCache(t, Options[string, string]{TTL: time.Minute,
			Loader: func(context.Context, string) (Loaded[string], error) {
				<-release
				return Loaded[string]{}, boom
			}})
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				if _, err := c.Load(context.Background(), "k"); !errors.Is(err, boom) {
					t.Errorf("Load: err = %v, want boom", err)
				}
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if st := c.Stats(); st.Misses != 5 || st.Hits != 0 || st.Waits != 4 || st.LoadErrors != 1 {
			t.Errorf("Stats %+v; want 5 misses, 0 hits, 4 waits, 1 load error", st)
		}
		if _, ok := c.Get("k"); ok {
			t.Error("a failed load was cached")
		}
	})
}

// TestLoadTTLFromValue: the loader's Loaded.TTL sets each entry's expiry;
// 0 means Options.TTL, negative means returned but not kept.
func TestLoadTTLFromValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ttls := map[string]time.Duration{"short": 10 * time.Second, "default": 0, "unkept": -1}
		c := newCache(t, Options[string, string]{TTL: time.Minute,
			Loader: func(_ context.Context, key string) (Loaded[string], error) {
				return Loaded[string]{Value: key, TTL: ttls[key]}, nil
			}})
		for key := range ttls {
			if v, err := c.Load(context.Background(), key); v != key || err != nil {
				t.Fatalf("Load(%q) = %q, %v", key, v, err)
			}
		}
		for _, tc := range []struct {
			key  string
			want time.Duration // Remaining right after the load; 0: not kept
		}{{"short", 10 * time.Second}, {"default", time.Minute}, {"unkept", 0}} {
			left, ok := c.Remaining(tc.key)
			if left != tc.want || ok != (tc.want > 0) {
				t.Errorf("Remaining(%q) = %v, %v; want %v", tc.key, left, ok, tc.want)
			}
		}
		time.Sleep(10 * time.Second)
		wantGet(t, c, "short", "", false)
		wantGet(t, c, "default", "default", true)
	})
}

// TestLoadPanicReachesWaiters: a panicking loader reaches every waiter as
// a *timingwheel.PanicError, the loading caller re-panics, and the key is released.
func TestLoadPanicReachesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var calls atomic.Int32
		c := newCache(t, Options[string, string]{TTL: time.Minute,
			Loader: func(context.Context, string) (Loaded[string], error) {
				if calls.Add(1) == 1 {
					<-release
					panic("boom")
				}
				return Loaded[string]{Value: "ok"}, nil
			}})
		var recovered any
		var wg sync.WaitGroup
		wg.Go(func() {
			defer func() { recovered = recover() }()
			c.Load(context.Background(), "k")
		})
		synctest.Wait()
		var waitErr error
		wg.Go(func() { _, waitErr = c.Load(context.Background(), "k") })
		synctest.Wait()
		close(release)
		wg.Wait()
		var pe *timingwheel.PanicError
		if p, ok := recovered.(*timingwheel.PanicError); !ok || p.Value != "boom" {
			t.Errorf("loading caller recovered %v, want *timingwheel.PanicError(boom)", recovered)
		}
		if !errors.As(waitErr, &pe) || pe.Value != "boom" {
			t.Errorf("waiter got %v, want *timingwheel.PanicError(boom)", waitErr)
		}
		if v, err := c.Load(context.Background(), "k"); v != "ok" || err != nil {
			t.Errorf("Load after the panic = %q, %v; want ok, nil (key released)", v, err)
		}
	})
}

// TestLoadGoexitReleasesWaiters: a loader that calls runtime.Goexit ends
// its caller's goroutine; waiters get an error, not a hang.
func TestLoadGoexitReleasesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		c := newCache(t, Options[string, string]{TTL: time.Minute,
			Loader: func(context.Context, string) (Loaded[string], error) {
				<-release
				runtime.Goexit()
				return Loaded[string]{}, nil
			}})
		var wg sync.WaitGroup
		wg.Go(func() { c.Load(context.Background(), "k") })
		synctest.Wait()
		var err error
		wg.Go(func() { _, err = c.Load(context.Background(), "k") })
		synctest.Wait()
		close(release)
		wg.Wait()
		if !errors.Is(err, timingwheel.ErrGoexit) {
			t.Errorf("waiter got %v, want timingwheel.ErrGoexit", err)
		}
	})
}

// TestLoadOvertakenBySet: a Set during the load wins; the loaded value is
// returned to the loader's callers but not stored.
func TestLoadOvertakenBySet(t *testing.T) {
	c := newCache(t, Options[string, string]{TTL: time.Minute})
	c.c.loader = func(_ context.Context, key string) (Loaded[string], error) {
		c.Set(key, "set")
		return Loaded[string]{Value: "loaded"}, nil
	}
	if v, err := c.Load(context.Background(), "k"); v != "loaded" || err != nil {
		t.Errorf("Load = %q, %v; want loaded, nil", v, err)
	}
	wantGet(t, c, "k", "set", true)
}

// TestLoadWaiterContext: a waiter gives up on its own context; the load
// goes on for the others.
func TestLoadWaiterContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		c := newCache(t, Options[string, string]{TTL: time.Minute,
			Loader: func(context.Context, string) (Loaded[string], error) {
				<-release
				return Loaded[string]{Value: "v"}, nil
			}})
		var wg sync.WaitGroup
		wg.Go(func() { c.Load(context.Background(), "k") })
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		var err error
		wg.Go(func() { _, err = c.Load(ctx, "k") })
		synctest.Wait()
		cancel()
		synctest.Wait()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("waiter whose ctx ended got %v, want context.Canceled", err)
		}
		close(release)
		wg.Wait()
		wantGet(t, c, "k", "v", true)
	})
}

// TestLoadAllOneBulkCall: LoadAll returns the live keys from the cache
// and loads the others in one BulkLoader call; keys left out are not
// found, Loaded.Err fails one key, duplicates count once.
func TestLoadAllOneBulkCall(t *testing.T) {
	var batches [][]string
	c := newCache(t, Options[string, string]{TTL: time.Minute,
		BulkLoader: func(_ context.Context, keys []string) (map[string]Loaded[string], error) {
			batches = append(batches, slices.Clone(keys))
			m := map[string]Loaded[string]{}
			for _, k := range keys {
				switch k {
				case "gone": // left out: not found
				case "bad":
					m[k] = Loaded[string]{Err: errors.New("bad row")}
				default:
					m[k] = Loaded[string]{Value: "v-" + k}
				}
			}
			return m, nil
		}})
	c.Set("cached", "c")
	got, err := c.LoadAll(context.Background(), []string{"cached", "a", "gone", "bad", "a", "b"})
	want := map[string]string{"cached": "c", "a": "v-a", "b": "v-b"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("LoadAll values = %v, want %v", got, want)
	}
	var ke KeyErrors[string]
	if !errors.As(err, &ke) || len(ke) != 1 || ke["bad"] == nil || ke["bad"].Error() != "bad row" {
		t.Errorf("LoadAll error = %v, want KeyErrors{bad: bad row}", err)
	}
	if fmt.Sprint(batches) != "[[a gone bad b]]" {
		t.Errorf("BulkLoader calls = %v, want one call [[a gone bad b]]", batches)
	}
	st := c.Stats()
	if st.BulkLoads != 1 || st.Loads != 4 || st.LoadErrors != 1 || st.LoadsNotFound != 1 || st.LoadTime.Count != 1 {
		t.Errorf("Stats %+v; want 1 bulk load of 4 keys, 1 error, 1 not found, LoadTime.Count 1", st)
	}
	if st.Hits != 1 || st.Misses != 4 {
		t.Errorf("Stats hits %d, misses %d; want 1, 4", st.Hits, st.Misses)
	}
	// Now all but gone and bad are cached: no call at all.
	got, err = c.LoadAll(context.Background(), []string{"a", "b"})
	if len(got) != 2 || err != nil || len(batches) != 1 {
		t.Errorf("second LoadAll = %v, %v after %d calls; want 2 values, nil, no new call", got, err, len(batches))
	}
}

// TestLoadAllBatchError: a BulkLoader error fails every key it did not
// return; keys it returned succeed.
func TestLoadAllBatchError(t *testing.T) {
	down := errors.New("down")
	c := newCache(t, Options[string, string]{TTL: time.Minute,
		BulkLoader: func(_ context.Context, keys []string) (map[string]Loaded[string], error) {
			return map[string]Loaded[string]{"a": {Value: "v-a"}}, down
		}})
	got, err := c.LoadAll(context.Background(), []string{"a", "b", "c"})
	var ke KeyErrors[string]
	if len(got) != 1 || got["a"] != "v-a" || !errors.As(err, &ke) || len(ke) != 2 || !errors.Is(err, down) {
		t.Errorf("LoadAll = %v, %v; want {a: v-a} and KeyErrors for b and c wrapping down", got, err)
	}
	if want := "cache: 2 keys failed to load: b: down; c: down"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

// TestLoadAllWithLoaderOnly: without a BulkLoader, LoadAll calls Loader
// once per missing key.
func TestLoadAllWithLoaderOnly(t *testing.T) {
	var calls atomic.Int32
	c := newCache(t, Options[string, string]{TTL: time.Minute, Loader: countingLoader(&calls, "gone")})
	got, err := c.LoadAll(context.Background(), []string{"a", "b", "gone"})
	if fmt.Sprint(got) != "map[a:v-a b:v-b]" || err != nil || calls.Load() != 3 {
		t.Errorf("LoadAll = %v, %v after %d calls; want map[a:v-a b:v-b], nil, 3 calls", got, err, calls.Load())
	}
	if st := c.Stats(); st.LoadTime.Count != 3 || st.BulkLoads != 0 {
		t.Errorf("Stats %+v; want LoadTime.Count 3, no bulk loads", st)
	}
}

// TestLoadAllOverlapLoadsEachKeyOnce: overlapping LoadAlls and Loads load
// each key once: a key in flight is waited for, not loaded again.
func TestLoadAllOverlapLoadsEachKeyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var mu sync.Mutex
		loaded := map[string]int{}
		c := newCache(t, Options[string, string]{TTL: time.Minute,
			BulkLoader: func(_ context.Context, keys []string) (map[string]Loaded[string], error) {
				mu.Lock()
				for _, k := range keys {
					loaded[k]++
				}
				mu.Unlock()
				<-release
				m := map[string]Loaded[string]{}
				for _, k := range keys {
					m[k] = Loaded[string]{Value: "v-" + k}
				}
				return m, nil
			}})
		var wg sync.WaitGroup
		results := make([]map[string]string, 3)
		for i, keys := range [][]string{{"a", "b"}, {"b", "c"}, {"a", "c", "d"}} {
			wg.Go(func() {
				var err error
				results[i], err = c.LoadAll(context.Background(), keys)
				if err != nil {
					t.Errorf("LoadAll(%v): %v", keys, err)
				}
			})
			synctest.Wait() // in order: the first claims a and b, ...
		}
		var single string
		wg.Go(func() { single, _ = c.Load(context.Background(), "d") })
		synctest.Wait()
		close(release)
		wg.Wait()
		if fmt.Sprint(loaded) != "map[a:1 b:1 c:1 d:1]" {
			t.Errorf("keys loaded %v, want each once", loaded)
		}
		want := []string{"map[a:v-a b:v-b]", "map[b:v-b c:v-c]", "map[a:v-a c:v-c d:v-d]"}
		for i := range results {
			if fmt.Sprint(results[i]) != want[i] {
				t.Errorf("LoadAll %d = %v, want %v", i, results[i], want[i])
			}
		}
		if single != "v-d" {
			t.Errorf("Load(d) = %q, want v-d", single)
		}
		if st := c.Stats(); st.BulkLoads != 3 || st.Loads != 4 || st.Waits != 4 {
			t.Errorf("Stats %+v; want 3 bulk loads of 4 keys in all, 4 waits", st)
		}
	})
}

// TestLoadAllPanicReachesWaiters: a panicking BulkLoader fails each of its
// keys with a *timingwheel.PanicError for their waiters, and LoadAll re-panics.
func TestLoadAllPanicReachesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		c := newCache(t, Options[string, string]{TTL: time.Minute,
			BulkLoader: func(context.Context, []string) (map[string]Loaded[string], error) {
				<-release
				panic("boom")
			}})
		var recovered any
		var wg sync.WaitGroup
		wg.Go(func() {
			defer func() { recovered = recover() }()
			c.LoadAll(context.Background(), []string{"a", "b"})
		})
		synctest.Wait()
		var err error
		wg.Go(func() { _, err = c.Load(context.Background(), "b") })
		synctest.Wait()
		close(release)
		wg.Wait()
		var pe *timingwheel.PanicError
		if _, ok := recovered.(*timingwheel.PanicError); !ok {
			t.Errorf("LoadAll recovered %v, want a *timingwheel.PanicError", recovered)
		}
		if !errors.As(err, &pe) {
			t.Errorf("waiter got %v, want *timingwheel.PanicError", err)
		}
	})
}

// TestTakeJoinsLoad: a Take and a Load of one key share one load.
func TestTakeJoinsLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		c := newCache(t, Options[string, string]{TTL: time.Minute,
			Loader: func(context.Context, string) (Loaded[string], error) {
				<-release
				return Loaded[string]{Value: "loaded"}, nil
			}})
		var wg sync.WaitGroup
		wg.Go(func() { c.Load(context.Background(), "k") })
		synctest.Wait()
		var v string
		wg.Go(func() {
			v, _ = c.Take("k", func() (string, error) { return "", errors.New("must not run") })
		})
		synctest.Wait()
		close(release)
		wg.Wait()
		if v != "loaded" {
			t.Errorf("Take joined to Load got %q, want loaded", v)
		}
	})
}

// TestLoadRacingOncePerKey races LoadAlls of random key sets, Loads,
// Takes, Gets and Refreshes of a few keys. The reference is the loader's
// own bookkeeping: at most one load of a key runs at a time, and every
// value returned is the key's (the loader answers "v-KEY", or "t-KEY" for
// Take's fetch). Writes are left out: a Set or Delete during a load lets
// the next caller start a new one beside it, by design (the overtaken
// load's result is not stored).
func TestLoadRacingOncePerKey(t *testing.T) {
	const keys, workers, ops = 6, 8, 200
	var inFlight [keys]atomic.Int32
	enter := func(k int) {
		if n := inFlight[k].Add(1); n != 1 {
			t.Errorf("key %d: %d loads at once, want 1", k, n)
		}
	}
	leave := func(k int) { inFlight[k].Add(-1) }
	c := newCache(t, Options[int, string]{TTL: time.Millisecond, NotFoundTTL: time.Millisecond,
		BulkLoader: func(_ context.Context, ks []int) (map[int]Loaded[string], error) {
			for _, k := range ks {
				enter(k)
			}
			runtime.Gosched()
			m := map[int]Loaded[string]{}
			for _, k := range ks {
				leave(k)
				if k != 0 { // key 0 is not found
					m[k] = Loaded[string]{Value: fmt.Sprint("v-", k)}
				}
			}
			return m, nil
		}})
	check := func(k int, v string) {
		if v != fmt.Sprint("v-", k) && v != fmt.Sprint("t-", k) {
			t.Errorf("key %d: got %q", k, v)
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 3))
			for range ops {
				k := r.IntN(keys)
				switch r.IntN(5) {
				case 0:
					set := []int{k, r.IntN(keys), r.IntN(keys)}
					got, err := c.LoadAll(context.Background(), set)
					if err != nil {
						t.Errorf("LoadAll(%v): %v", set, err)
					}
					for k, v := range got {
						check(k, v)
					}
				case 1:
					// Key 0 is not found, unless a Take's fetch stored it.
					v, err := c.Load(context.Background(), k)
					switch {
					case err == nil:
						check(k, v)
					case k != 0 || !errors.Is(err, ErrNotFound):
						t.Errorf("Load(%d) = %q, %v", k, v, err)
					}
				case 2:
					v, err := c.Take(k, func() (string, error) {
						enter(k)
						defer leave(k)
						return fmt.Sprint("t-", k), nil
					})
					if err == nil {
						check(k, v)
					} else if !errors.Is(err, ErrNotFound) {
						t.Errorf("Take(%d): %v", k, err)
					}
				case 3:
					if v, ok := c.Get(k); ok {
						check(k, v)
					}
				case 4:
					c.Refresh(k)
				}
			}
		})
	}
	wg.Wait()
	c.c.refr.wg.Wait()
	st := c.Stats()
	if st.Hits+st.Misses == 0 || st.Loads == 0 {
		t.Errorf("Stats %+v: nothing counted", st)
	}
}
