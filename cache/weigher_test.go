package cache

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// The Weigher's contract (Options.Weigher): called once per write, on the
// writing goroutine; a panic or runtime.Goexit in it reaches the writer
// and leaves the key usable.

// weigherWrites are the writes that weigh a value, each writing v for key
// 1, found absent, in a cache made by newWeigherCache (whose loaders load
// what src holds, which the harness sets to v).
var weigherWrites = []struct {
	name string
	bulk bool // the cache has a BulkLoader instead of a Loader
	// background: the write runs on a goroutine the cache owns (a
	// refresh), so a panic in the Weigher reaches OnRefreshError.
	background bool
	write      func(c *Cache[int, string], v string)
}{
	{"Set", false, false, func(c *Cache[int, string], v string) { c.Set(1, v) }},
	{"SetWithExpire", false, false, func(c *Cache[int, string], v string) { c.SetWithExpire(1, v, time.Minute) }},
	{"TrySet", false, false, func(c *Cache[int, string], v string) { c.TrySet(1, v) }},
	{"GetOrSet", false, false, func(c *Cache[int, string], v string) { c.GetOrSet(1, v) }},
	{"SetIfAbsent", false, false, func(c *Cache[int, string], v string) { c.SetIfAbsent(1, v) }},
	{"Take", false, false, func(c *Cache[int, string], v string) {
		c.Take(1, func() (string, error) { return v, nil })
	}},
	{"Load", false, false, func(c *Cache[int, string], _ string) { c.Load(context.Background(), 1) }},
	{"LoadAll with Loader", false, false, func(c *Cache[int, string], _ string) {
		c.LoadAll(context.Background(), []int{1})
	}},
	{"LoadAll with BulkLoader", true, false, func(c *Cache[int, string], _ string) {
		c.LoadAll(context.Background(), []int{1})
	}},
	{"Compute", false, false, func(c *Cache[int, string], v string) {
		c.Compute(1, func(string, bool) (string, Action) { return v, Store })
	}},
	{"Refresh", false, true, func(c *Cache[int, string], _ string) {
		c.Refresh(1)
		synctest.Wait() // the reload runs on a goroutine of its own
	}},
}

// newWeigherCache returns a cache with weigher, MaxWeight 1000, and a
// Loader (a BulkLoader with bulk set) that loads what src holds.
func newWeigherCache(t *testing.T, weigher func(int, string) int, bulk bool, src *atomic.Pointer[string], onRefreshError func(RefreshError[int, string])) *Cache[int, string] {
	t.Helper()
	opts := Options[int, string]{TTL: time.Hour, MaxWeight: 1000, Weigher: weigher, OnRefreshError: onRefreshError}
	if bulk {
		opts.BulkLoader = func(_ context.Context, keys []int) (map[int]Loaded[string], error) {
			m := make(map[int]Loaded[string])
			for _, k := range keys {
				m[k] = Loaded[string]{Value: *src.Load()}
			}
			return m, nil
		}
	} else {
		opts.Loader = func(context.Context, int) (Loaded[string], error) { return Loaded[string]{Value: *src.Load()}, nil }
	}
	return newCache(t, opts)
}

// afterWeigherFailure checks that key 1 of c, whose Weigher failed on a
// write, holds nothing and is usable: a load of it stores, as does a Set.
func afterWeigherFailure(t *testing.T, c *Cache[int, string], src *atomic.Pointer[string]) {
	t.Helper()
	if v, ok := c.Peek(1); ok {
		t.Errorf("Peek(1) = %q after the Weigher failed, want nothing stored", v)
	}
	loaded := "loaded"
	src.Store(&loaded)
	if v, err := c.LoadAll(context.Background(), []int{1}); err != nil || v[1] != "loaded" {
		t.Errorf("LoadAll(1) after the Weigher failed = %v, %v, want 1:%q, nil", v, err, "loaded")
	}
	c.Set(1, "set")
	if v, ok := c.Get(1); !ok || v != "set" {
		t.Errorf("Get(1) after Set = %q, %v, want %q, true", v, ok, "set")
	}
	checkInvariants(t, c, 1000, false)
}

// TestWeigherCalledOncePerWrite: every write that stores a value weighs it
// exactly once (TrySet weighed it twice: once to judge it, once more in
// Set), and a write that finds the key live, or stores nothing, does not
// weigh at all.
func TestWeigherCalledOncePerWrite(t *testing.T) {
	for _, tt := range weigherWrites {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int64
				var src atomic.Pointer[string]
				c := newWeigherCache(t, func(_ int, v string) int { calls.Add(1); return len(v) }, tt.bulk, &src, nil)
				v := "first"
				src.Store(&v)
				tt.write(c, v)
				if got := calls.Load(); got != 1 {
					t.Errorf("%s of a new key: %d Weigher calls, want 1", tt.name, got)
				}
				if got, ok := c.Peek(1); !ok || got != v {
					t.Errorf("Peek(1) = %q, %v after %s, want %q, true", got, ok, tt.name, v)
				}
			})
		})
	}
	t.Run("key not equal to itself", func(t *testing.T) {
		var calls atomic.Int64
		c := newCache(t, Options[float64, string]{TTL: time.Hour, MaxWeight: 10,
			Weigher: func(_ float64, v string) int { calls.Add(1); return len(v) }})
		nan := math.NaN()
		c.Set(nan, "a")
		if err := c.TrySet(nan, strings.Repeat("x", 11)); err != nil {
			t.Errorf("TrySet of a NaN key, too heavy: %v, want nil (dropped unweighed)", err)
		}
		c.GetOrSet(nan, "b")
		c.SetIfAbsent(nan, "c")
		c.Take(nan, func() (string, error) { return "d", nil })
		c.Compute(nan, func(string, bool) (string, Action) { return "e", Store })
		if got := calls.Load(); got != 0 {
			t.Errorf("writes of a NaN key: %d Weigher calls, want 0", got)
		}
	})
	t.Run("sequence", func(t *testing.T) {
		var calls atomic.Int64
		c := newCache(t, Options[int, string]{TTL: time.Hour, MaxWeight: 1000,
			Weigher: func(_ int, v string) int { calls.Add(1); return len(v) }})
		fetch := func(v string, err error) func() (string, error) {
			return func() (string, error) { return v, err }
		}
		steps := []struct {
			name  string
			write func()
			want  int64
		}{
			{"Set new", func() { c.Set(1, "a") }, 1},
			{"Set over it (replaces the node)", func() { c.Set(1, "b") }, 1},
			{"Set over it (in place)", func() { c.Set(1, "c") }, 1},
			{"Set heavier", func() { c.Set(1, "dd") }, 1},
			{"TrySet over it", func() { c.TrySet(1, "ee") }, 1},
			{"TrySet too heavy", func() { c.TrySet(1, strings.Repeat("x", 1001)) }, 1},
			{"Set too heavy", func() { c.Set(1, strings.Repeat("x", 1001)) }, 1},
			{"SetWithExpire, ttl 0", func() { c.SetWithExpire(1, "ff", 0) }, 0},
			{"Set again", func() { c.Set(1, "g") }, 1},
			{"GetOrSet of a live key", func() { c.GetOrSet(1, "hh") }, 0},
			{"SetIfAbsent of a live key", func() { c.SetIfAbsent(1, "ii") }, 0},
			{"Take of a live key", func() { c.Take(1, fetch("jj", nil)) }, 0},
			{"Take that fails", func() { c.Take(2, fetch("kk", errors.New("no"))) }, 0},
			{"TakeWithExpire, ttl 0 (not stored)", func() { c.TakeWithExpire(2, 0, fetch("ll", nil)) }, 0},
			{"Compute Keep", func() { c.Compute(1, func(string, bool) (string, Action) { return "mm", Keep }) }, 0},
			{"Compute Remove", func() { c.Compute(1, func(string, bool) (string, Action) { return "nn", Remove }) }, 0},
			{"Compute Store", func() { c.Compute(1, func(string, bool) (string, Action) { return "oo", Store }) }, 1},
		}
		for _, st := range steps {
			calls.Store(0)
			st.write()
			if got := calls.Load(); got != st.want {
				t.Errorf("%s: %d Weigher calls, want %d", st.name, got, st.want)
			}
		}
	})
}

// TestWeigherPanicReleasesTheKey: a Weigher that panics during a write
// reaches the writer (Set and the like: the panic itself; a load or
// Compute: a *timingwheel.PanicError, as a panic of the loader or of fn
// does; a refresh: OnRefreshError), stores nothing, and leaves the key
// usable. A loaded or computed value was weighed after the load or
// Compute had registered itself as the key's call in flight and before it
// released it, so a panicking Weigher left the call registered: every
// later load of the key waited for it forever (the bubble's deadlock),
// and in a refresh the panic crashed the program.
func TestWeigherPanicReleasesTheKey(t *testing.T) {
	for _, tt := range weigherWrites {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				refreshErrs := make(chan error, 1)
				var src atomic.Pointer[string]
				weigher := func(_ int, v string) int {
					if v == "boom" {
						panic("weigher boom")
					}
					return len(v)
				}
				c := newWeigherCache(t, weigher, tt.bulk, &src, func(e RefreshError[int, string]) { refreshErrs <- e.Err })
				v := "boom"
				src.Store(&v)
				r := func() (r any) {
					defer func() { r = recover() }()
					tt.write(c, v)
					return nil
				}()
				if tt.background {
					select {
					case err := <-refreshErrs:
						r = err
					default:
						t.Fatalf("%s: no OnRefreshError after the Weigher panicked", tt.name)
					}
				}
				if !isWeigherBoom(r) {
					t.Errorf("%s with a panicking Weigher: got %v, want the panic %q", tt.name, r, "weigher boom")
				}
				afterWeigherFailure(t, c, &src)
			})
		})
	}
}

// isWeigherBoom reports whether r is the Weigher's panic "weigher boom",
// raw or as the *timingwheel.PanicError of a load or Compute.
func isWeigherBoom(r any) bool {
	var pe *timingwheel.PanicError
	if err, ok := r.(error); ok && errors.As(err, &pe) {
		r = pe.Value
	}
	return r == "weigher boom"
}

// TestWeigherGoexitReleasesTheKey: a Weigher that calls runtime.Goexit
// (t.FailNow in a test's Weigher) ends the writer's goroutine and, like a
// panic, leaves the key usable.
func TestWeigherGoexitReleasesTheKey(t *testing.T) {
	for _, tt := range weigherWrites {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var src atomic.Pointer[string]
				weigher := func(_ int, v string) int {
					if v == "exit" {
						runtime.Goexit()
					}
					return len(v)
				}
				c := newWeigherCache(t, weigher, tt.bulk, &src, nil)
				v := "exit"
				src.Store(&v)
				returned := false
				done := make(chan struct{})
				go func() {
					defer close(done)
					tt.write(c, v)
					returned = true
				}()
				<-done
				synctest.Wait() // a refresh's goroutine
				if returned && !tt.background {
					t.Errorf("%s returned, want its goroutine ended by the Weigher's runtime.Goexit", tt.name)
				}
				afterWeigherFailure(t, c, &src)
			})
		})
	}
}
