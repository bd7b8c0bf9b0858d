package cache

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestExpireAfterAccessSlides: each use moves the deadline to TTL after
// it; an entry read at t is alive at t+TTL-Resolution and gone at t+TTL.
func TestExpireAfterAccessSlides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl, res = 10 * time.Second, 100 * time.Millisecond
		c := newCache(t, Options[string, int]{TTL: ttl, Resolution: res, ExpireAfterAccess: true})
		c.Set("k", 1)
		for range 12 { // read every 5s for a minute: alive throughout
			time.Sleep(5 * time.Second)
			wantGet(t, c, "k", 1, true)
		}
		// Peek is not a use: it neither slides nor keeps the entry.
		time.Sleep(ttl - res)
		if _, ok := c.Peek("k"); !ok {
			t.Fatalf("Peek at last read + TTL - Resolution: gone, want alive")
		}
		time.Sleep(res)
		if _, ok := c.Peek("k"); ok {
			t.Fatalf("Peek at last read + TTL: alive, want gone")
		}
		wantGet(t, c, "k", 0, false)
	})
}

// TestExpireAfterAccessGranularity: a use moves the deadline only when it
// moves by at least Resolution, so a hot key's stamp is written about once
// per Resolution, not once per read; the entry still expires no later
// than TTL after its last use and no earlier than TTL-Resolution.
func TestExpireAfterAccessGranularity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl, res = 10 * time.Second, time.Second
		c := newCache(t, Options[string, int]{TTL: ttl, Resolution: res, ExpireAfterAccess: true})
		c.Set("k", 1)
		time.Sleep(res / 2)
		c.Get("k") // moves by res/2 < res: not recorded
		if left, _ := c.Remaining("k"); left != ttl-res/2 {
			t.Errorf("Remaining after a read %v in = %v, want %v (not moved)", res/2, left, ttl-res/2)
		}
		time.Sleep(res / 2)
		c.Get("k") // moves by res: recorded
		if left, _ := c.Remaining("k"); left != ttl {
			t.Errorf("Remaining after a read %v in = %v, want %v (moved)", res, left, ttl)
		}
	})
}

// TestExpireAfterAccessHitsOfLoads: Take and Load hits slide too; writes
// with their own ttl set the first deadline and reads extend by TTL.
func TestExpireAfterAccessHitsOfLoads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Minute, ExpireAfterAccess: true,
			Loader: func(context.Context, string) (Loaded[int], error) { return Loaded[int]{Value: 1}, nil }})
		c.SetWithExpire("k", 1, time.Second)
		c.Take("k", func() (int, error) { return 2, nil })
		if left, _ := c.Remaining("k"); left != time.Minute {
			t.Errorf("Remaining after a Take hit = %v, want %v", left, time.Minute)
		}
		time.Sleep(30 * time.Second)
		c.Load(context.Background(), "k")
		if left, _ := c.Remaining("k"); left != time.Minute {
			t.Errorf("Remaining after a Load hit = %v, want %v", left, time.Minute)
		}
	})
}

// TestExpireAfterAccessRacesWrites: reads sliding the deadline race with
// writers; no write is lost and every entry still expires TTL after its
// last use (the invariant checker runs at the end).
func TestExpireAfterAccessRacesWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[int, int]{TTL: time.Second, Resolution: time.Millisecond, ExpireAfterAccess: true})
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 2000 {
					k := i % 8
					if g%2 == 0 {
						c.Set(k, i)
					} else {
						c.Get(k)
					}
					if i%100 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		for k := range 8 {
			v, ok := c.Peek(k)
			if !ok || v != 2000-8+k {
				t.Errorf("Peek(%d) = %d, %v; want %d (the last Set), true", k, v, ok, 2000-8+k)
			}
		}
		synctest.Wait()
		checkInvariants(t, c, 0, true)
		time.Sleep(time.Second)
		synctest.Wait()
		if n := c.Len(); n != 0 {
			t.Errorf("Len a TTL after the last use = %d, want 0", n)
		}
	})
}

// TestExpireAfterAccessGetTakesNoLockNoAlloc: a sliding Get takes no lock
// (it returns while the test holds every shard lock) and allocates
// nothing.
func TestExpireAfterAccessGetTakesNoLockNoAlloc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[int, int]{TTL: time.Minute, Resolution: time.Millisecond, ExpireAfterAccess: true})
		c.Set(1, 1)
		time.Sleep(time.Second)
		for s := range c.c.made() {
			s.mu.Lock()
		}
		wantGet(t, c, 1, 1, true)
		for s := range c.c.made() {
			s.mu.Unlock()
		}
		if left, _ := c.Remaining(1); left != time.Minute {
			t.Errorf("Remaining after the locked-out Get = %v, want %v (slid)", left, time.Minute)
		}
	})
	c := newCache(t, Options[int, int]{TTL: time.Minute, ExpireAfterAccess: true})
	c.Set(1, 1)
	if n := testing.AllocsPerRun(1000, func() { c.Get(1) }); n != 0 {
		t.Errorf("sliding Get allocates %v times, want 0", n)
	}
}

// TestNewRejectsLoadingOptions: the loading options are validated.
func TestNewRejectsLoadingOptions(t *testing.T) {
	load := func(context.Context, string) (Loaded[int], error) { return Loaded[int]{}, nil }
	for _, tc := range []struct {
		name string
		opts Options[string, int]
	}{
		{"negative RefreshAfter", Options[string, int]{TTL: time.Minute, RefreshAfter: -1, Loader: load}},
		{"RefreshAfter = TTL", Options[string, int]{TTL: time.Minute, RefreshAfter: time.Minute, Loader: load}},
		{"RefreshAfter without a loader", Options[string, int]{TTL: time.Minute, RefreshAfter: time.Second}},
		{"RefreshAfter with ExpireAfterAccess", Options[string, int]{TTL: time.Minute, RefreshAfter: time.Second, Loader: load, ExpireAfterAccess: true}},
		{"negative NotFoundTTL", Options[string, int]{TTL: time.Minute, NotFoundTTL: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := New(tc.opts); err == nil {
				c.Close()
				t.Errorf("New accepted %s", tc.name)
			}
		})
	}
}
