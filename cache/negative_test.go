package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestNotFoundRemembered: a not-found answer is remembered for
// NotFoundTTL: Loads in that time return ErrNotFound without a load and
// count in NotFoundHits; Get, Len and All never see it; then the loader is
// asked again.
func TestNotFoundRemembered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		c := newCache(t, Options[string, string]{TTL: time.Minute, NotFoundTTL: 5 * time.Second,
			Loader: countingLoader(&calls, "gone")})
		for range 3 {
			if _, err := c.Load(context.Background(), "gone"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Load(gone): err = %v, want ErrNotFound", err)
			}
		}
		if calls.Load() != 1 {
			t.Errorf("loader calls = %d, want 1", calls.Load())
		}
		wantGet(t, c, "gone", "", false)
		if n := c.Len(); n != 0 {
			t.Errorf("Len = %d, want 0 (not-found answers are not entries)", n)
		}
		for k := range c.Keys() {
			t.Errorf("All yielded %q", k)
		}
		st := c.Stats()
		if st.LoadsNotFound != 1 || st.NotFoundHits != 2 || st.Hits != 2 || st.Misses != 2 {
			t.Errorf("Stats %+v; want 1 load not found, 2 not-found hits, 2 hits, 2 misses (one of them Get)", st)
		}
		time.Sleep(5*time.Second - 1)
		c.Load(context.Background(), "gone")
		if calls.Load() != 1 {
			t.Errorf("loader asked again before NotFoundTTL")
		}
		time.Sleep(1)
		c.Load(context.Background(), "gone")
		if calls.Load() != 2 {
			t.Errorf("loader calls after NotFoundTTL = %d, want 2", calls.Load())
		}
	})
}

// TestNotFoundForgottenByWrites: a Set, Delete, GetOrSet or Compute Store
// of the key forgets its not-found answer, so a later Load (once the
// value is gone) asks the loader.
func TestNotFoundForgottenByWrites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(c *Cache[string, string])
	}{
		{"Set then Delete", func(c *Cache[string, string]) { c.Set("gone", "x"); c.Delete("gone") }},
		{"Delete", func(c *Cache[string, string]) { c.Delete("gone") }},
		{"GetOrSet then Delete", func(c *Cache[string, string]) { c.GetOrSet("gone", "x"); c.Delete("gone") }},
		{"Compute Store then Remove", func(c *Cache[string, string]) {
			c.Compute("gone", func(string, bool) (string, Action) { return "x", Store })
			c.Compute("gone", func(string, bool) (string, Action) { return "", Remove })
		}},
		{"Clear", func(c *Cache[string, string]) { c.Clear() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			c := newCache(t, Options[string, string]{TTL: time.Minute, NotFoundTTL: time.Hour,
				Loader: countingLoader(&calls, "gone")})
			c.Load(context.Background(), "gone")
			tc.write(c)
			c.Load(context.Background(), "gone")
			if calls.Load() != 2 {
				t.Errorf("loader calls = %d, want 2 (the answer forgotten)", calls.Load())
			}
		})
	}
}

// TestNotFoundTTLFromLoader: Loaded.TTL overrides NotFoundTTL for a
// not-found answer; a negative one is not remembered; without
// NotFoundTTL nothing is.
func TestNotFoundTTLFromLoader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		ttls := map[string]time.Duration{"long": time.Minute, "never": -1, "default": 0}
		load := func(_ context.Context, k string) (Loaded[string], error) {
			calls.Add(1)
			return Loaded[string]{NotFound: true, TTL: ttls[k]}, nil
		}
		c := newCache(t, Options[string, string]{TTL: time.Hour, NotFoundTTL: time.Second, Loader: load})
		for k := range ttls {
			c.Load(context.Background(), k)
		}
		time.Sleep(time.Second)
		calls.Store(0)
		for k := range ttls {
			c.Load(context.Background(), k)
		}
		if calls.Load() != 2 { // never and default
			t.Errorf("loader calls a second later = %d, want 2 (only long remembered)", calls.Load())
		}
		plain := newCache(t, Options[string, string]{TTL: time.Hour, Loader: load})
		calls.Store(0)
		plain.Load(context.Background(), "long")
		plain.Load(context.Background(), "long")
		if calls.Load() != 2 {
			t.Errorf("without NotFoundTTL: loader calls = %d, want 2", calls.Load())
		}
	})
}

// TestNotFoundSharedWithWaiters: callers waiting on a load that finds
// nothing get ErrNotFound, as hits.
func TestNotFoundSharedWithWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		c := newCache(t, Options[string, string]{TTL: time.Minute, NotFoundTTL: time.Second, Loader: g.load})
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() { _, errs[i] = c.Load(context.Background(), "k") })
		}
		synctest.Wait()
		g.answers <- Loaded[string]{NotFound: true}
		wg.Wait()
		for i, err := range errs {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("caller %d: err = %v, want ErrNotFound", i, err)
			}
		}
		if st := c.Stats(); st.Misses != 1 || st.Hits != 2 || st.Waits != 2 {
			t.Errorf("Stats %+v; want 1 miss, 2 hits, 2 waits", st)
		}
	})
}

// TestNotFoundLoadOvertakenBySet: a Set during a load that finds nothing
// wins: the answer is not remembered.
func TestNotFoundLoadOvertakenBySet(t *testing.T) {
	c := newCache(t, Options[string, string]{TTL: time.Minute, NotFoundTTL: time.Hour})
	c.c.loader = func(_ context.Context, key string) (Loaded[string], error) {
		c.Set(key, "set")
		return Loaded[string]{NotFound: true}, nil
	}
	if _, err := c.Load(context.Background(), "k"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load = %v, want ErrNotFound (its own answer)", err)
	}
	if c.c.notFound("k") {
		t.Error("the overtaken not-found answer was remembered")
	}
}

// TestNotFoundCloseStopsBoth: Close stops the not-found cache too; a
// synctest bubble would report its goroutine otherwise.
func TestNotFoundCloseStopsBoth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := New(Options[string, string]{TTL: time.Minute, NotFoundTTL: time.Second,
			Loader: func(context.Context, string) (Loaded[string], error) { return Loaded[string]{NotFound: true}, nil }})
		if err != nil {
			t.Fatal(err)
		}
		c.Load(context.Background(), "k")
		c.Close()
		if _, err := c.Load(context.Background(), "k"); !errors.Is(err, ErrClosed) {
			t.Errorf("Load after Close: err = %v, want ErrClosed", err)
		}
		var ke KeyErrors[string]
		if _, err := c.LoadAll(context.Background(), []string{"k"}); !errors.As(err, &ke) || !errors.Is(ke["k"], ErrClosed) {
			t.Errorf("LoadAll after Close: err = %v, want KeyErrors{k: ErrClosed}", err)
		}
		if _, ok := c.Compute("k", func(string, bool) (string, Action) { return "", Store }); ok {
			t.Error("Compute after Close = true")
		}
	})
}
