package compat

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	gz "github.com/zeromicro/go-zero/core/collection"
	"github.com/zeromicro/go-zero/core/logx"

	"github.com/ttlkit/ttlkit/cache"
	"github.com/ttlkit/ttlkit/collection"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// cacheImpl runs a scenario on one implementation's Cache, inside a
// synctest bubble so that TTLs pass on the bubble's clock.
type cacheImpl struct {
	name string
	// run calls f in a bubble; newCache builds a cache for it.
	run func(t *testing.T, f func(t *testing.T, newCache func(ttl time.Duration, opts ...string) cacheAPI))
}

var (
	goZeroCache = cacheImpl{"gozero", func(t *testing.T, f func(*testing.T, func(time.Duration, ...string) cacheAPI)) {
		// go-zero's Cache cannot be stopped, so its bubble ends with
		// goroutines blocked (TestDiff_CacheLeaksGoroutinesInGoZero).
		inLeakyBubble(t, func(t *testing.T) {
			f(t, func(ttl time.Duration, opts ...string) cacheAPI {
				c, err := gz.NewCache(ttl, gz.WithLimit(limitOpt(opts)))
				if err != nil {
					t.Fatalf("go-zero NewCache(%v): %v", ttl, err)
				}
				return c
			})
		})
	}}
	ourCache = cacheImpl{"ttlkit", func(t *testing.T, f func(*testing.T, func(time.Duration, ...string) cacheAPI)) {
		synctest.Test(t, func(t *testing.T) {
			f(t, func(ttl time.Duration, opts ...string) cacheAPI {
				c, err := collection.NewCache(ttl, collection.WithLimit(limitOpt(opts)))
				if err != nil {
					t.Fatalf("ours NewCache(%v): %v", ttl, err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			})
		})
	}}
	cacheImpls = []cacheImpl{goZeroCache, ourCache}
)

// limitOpt reads "limit=N" from opts (0 if absent); it keeps the scenario
// signatures free of either package's CacheOption type.
func limitOpt(opts []string) int {
	for _, o := range opts {
		if n, ok := strings.CutPrefix(o, "limit="); ok {
			var v int
			for _, d := range n {
				v = v*10 + int(d-'0')
			}
			return v
		}
	}
	return 0
}

// TestDiff_CacheNonPositiveTTL: go-zero accepts a TTL <= 0, in NewCache and
// in SetWithExpire, and the wheel then refuses the timer (an ignored
// ErrArgument), so such entries never expire. Ours refuses NewCache with
// ErrOptions, and SetWithExpire with a TTL <= 0 stores nothing and deletes
// the key.
func TestDiff_CacheNonPositiveTTL(t *testing.T) {
	goZeroCache.run(t, func(t *testing.T, _ func(time.Duration, ...string) cacheAPI) {
		c, err := gz.NewCache(0)
		if err != nil {
			t.Fatalf("go-zero NewCache(0): %v, want it accepted", err)
		}
		c.Set("zero", 1)
		c.SetWithExpire("negative", 2, -time.Second)
		time.Sleep(10 * time.Hour) // 120 rotations of its 300 s wheel
		for _, k := range []string{"zero", "negative"} {
			if _, ok := c.Get(k); !ok {
				t.Errorf("go-zero: %s TTL entry gone after 10h, want it kept forever", k)
			}
		}
	})
	if _, err := collection.NewCache(0); !errors.Is(err, cache.ErrOptions) {
		t.Errorf("ours NewCache(0): got %v, want ErrOptions", err)
	}
	ourCache.run(t, func(t *testing.T, newCache func(time.Duration, ...string) cacheAPI) {
		c := newCache(time.Minute)
		c.Set("k", 1)
		c.SetWithExpire("k", 2, 0)
		c.SetWithExpire("negative", 3, -time.Second)
		for _, k := range []string{"k", "negative"} {
			if v, ok := c.Get(k); ok {
				t.Errorf("ours: Get(%s) after SetWithExpire(<= 0) = %v, want a miss", k, v)
			}
		}
	})
}

// TestDiff_CacheEntryRemovedEarlyInGoZero: go-zero's Cache expires entries
// on a 1 s wheel that rounds delays down and counts from the last tick, so
// an entry set 0.9 s into a tick with a TTL of 2.5 s (±5%) is removed 1.1 s
// later. Ours keeps it for its whole TTL and no longer.
func TestDiff_CacheEntryRemovedEarlyInGoZero(t *testing.T) {
	for _, c := range []struct {
		impl               cacheImpl
		at1200ms, at2700ms bool // present 1.2 s and 2.7 s after Set
	}{
		{goZeroCache, false, false},
		{ourCache, true, false},
	} {
		c.impl.run(t, func(t *testing.T, newCache func(time.Duration, ...string) cacheAPI) {
			cc := newCache(2500 * time.Millisecond)
			time.Sleep(900 * time.Millisecond)
			cc.Set("k", 1)
			time.Sleep(1200 * time.Millisecond)
			synctest.Wait()
			_, at1200ms := cc.Get("k")
			time.Sleep(1500 * time.Millisecond)
			synctest.Wait()
			_, at2700ms := cc.Get("k")
			if at1200ms != c.at1200ms || at2700ms != c.at2700ms {
				t.Errorf("%s: present 1.2s / 2.7s after Set = %v / %v, want %v / %v",
					c.impl.name, at1200ms, at2700ms, c.at1200ms, c.at2700ms)
			}
		})
	}
}

// setPayload stores a fresh payload under key and returns a weak pointer
// to it.
func setPayload(c cacheAPI, key string) weak.Pointer[payload] {
	p := new(payload)
	c.Set(key, p)
	return weak.Make(p)
}

// TestDiff_CacheValuesPinnedInGoZero: go-zero's wheel keeps the value a key
// was first set with for as long as later Sets keep moving its timer, and a
// deleted entry's timer (with its value) until the wheel's cursor reaches
// it, up to the TTL. Ours releases an overwritten or deleted value at once.
func TestDiff_CacheValuesPinnedInGoZero(t *testing.T) {
	for _, c := range []struct {
		name string
		drop func(c cacheAPI) weak.Pointer[payload] // returns the value that is no longer the key's
	}{
		{"overwritten", func(c cacheAPI) weak.Pointer[payload] {
			first := setPayload(c, "k")
			c.Set("k", "second")
			return first
		}},
		{"deleted", func(c cacheAPI) weak.Pointer[payload] {
			wp := setPayload(c, "k")
			c.Del("k")
			return wp
		}},
	} {
		for _, impl := range cacheImpls {
			impl.run(t, func(t *testing.T, newCache func(time.Duration, ...string) cacheAPI) {
				cc := newCache(time.Minute)
				wp := c.drop(cc)
				synctest.Wait()
				atOnce := released(wp)
				time.Sleep(2 * time.Minute)
				synctest.Wait()
				later := released(wp)
				wantAtOnce := impl.name != goZeroCache.name
				if atOnce != wantAtOnce || !later {
					t.Errorf("%s, %s value: released at once %v, after 2 TTLs %v; want %v, true",
						impl.name, c.name, atOnce, later, wantAtOnce)
				}
				runtime.KeepAlive(cc)
			})
		}
	}
}

// TestDiff_CacheLeaksGoroutinesInGoZero: each go-zero Cache starts a timing
// wheel goroutine and a stats goroutine that nothing can stop (it has no
// Close), so a synctest bubble that creates one ends in a deadlock report.
// Ours stops both of its goroutines on Close, and its bubble ends cleanly
// (synctest.Test would fail otherwise).
func TestDiff_CacheLeaksGoroutinesInGoZero(t *testing.T) {
	var stacks string
	report := inLeakyBubble(t, func(t *testing.T) {
		c, err := gz.NewCache(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		c.Set("k", 1)
		synctest.Wait()
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
	})
	if report == "" {
		t.Error("go-zero: the bubble ended cleanly, want its Cache's goroutines left behind")
	}
	for _, fn := range []string{"(*cacheStat).statLoop", "(*TimingWheel).run"} {
		if !strings.Contains(stacks, "go-zero/core/collection."+fn) {
			t.Errorf("go-zero: no goroutine in %s while the Cache is alive", fn)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		c, err := collection.NewCache(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		c.Set("k", 1)
		if err := c.Close(); err != nil {
			t.Errorf("ours: Close: %v", err)
		}
	})
}

// TestDiff_CacheTakePanicInGoZero: when fetch panics, go-zero's
// single-flight hands the Takes waiting for it nil, nil, as if nil had
// been loaded. Ours gives them a *timingwheel.PanicError; in both, the panic goes
// on in the goroutine that ran fetch.
func TestDiff_CacheTakePanicInGoZero(t *testing.T) {
	for _, impl := range cacheImpls {
		impl.run(t, func(t *testing.T, newCache func(time.Duration, ...string) cacheAPI) {
			c := newCache(time.Minute)
			release := make(chan struct{})
			loaderPanic := make(chan any, 1)
			go func() {
				defer func() { loaderPanic <- recover() }()
				c.Take("k", func() (any, error) { <-release; panic("boom") })
			}()
			synctest.Wait() // the loader is in fetch
			type result struct {
				v   any
				err error
			}
			waiter := make(chan result, 1)
			go func() {
				v, err := c.Take("k", func() (any, error) { return "unused", nil })
				waiter <- result{v, err}
			}()
			synctest.Wait() // the waiter waits for the loader
			close(release)
			if p := <-loaderPanic; p == nil {
				t.Errorf("%s: the loader did not panic", impl.name)
			}
			w := <-waiter
			var pe *timingwheel.PanicError
			switch impl.name {
			case goZeroCache.name:
				if w.v != nil || w.err != nil {
					t.Errorf("go-zero: waiter got %v, %v; want nil, nil", w.v, w.err)
				}
			default:
				if !errors.As(w.err, &pe) {
					t.Errorf("ours: waiter got %v, %v; want a *timingwheel.PanicError", w.v, w.err)
				}
			}
		})
	}
}

// TestDiff_CacheLimitIsTinyLFUNotLRU: go-zero's limit is a strict LRU over
// reads and writes; ours is W-TinyLFU (cache's package doc), per shard, one
// shard under a limit of 128: a key used once does not displace a key
// used more often. Here a is read twice, then b is written: LRU evicts a,
// the least recently used; ours evicts b, used once.
func TestDiff_CacheLimitIsTinyLFUNotLRU(t *testing.T) {
	for _, c := range []struct {
		impl cacheImpl
		kept string
	}{{goZeroCache, "b c"}, {ourCache, "a c"}} {
		c.impl.run(t, func(t *testing.T, newCache func(time.Duration, ...string) cacheAPI) {
			cc := newCache(time.Hour, "limit=2")
			cc.Set("a", 1)
			cc.Get("a")
			cc.Get("a")
			cc.Set("b", 2)
			cc.Set("c", 3)
			var kept []string
			for _, k := range []string{"a", "b", "c"} {
				if _, ok := cc.Get(k); ok {
					kept = append(kept, k)
				}
			}
			if got := strings.Join(kept, " "); got != c.kept {
				t.Errorf("%s: kept %q, want %q", c.impl.name, got, c.kept)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestDiff_CacheStatsLoggedInGoZero: go-zero's Cache writes its hit ratio
// to the global logx logger every minute, under its name. Ours logs
// nothing; its counters are read with Stats.
func TestDiff_CacheStatsLoggedInGoZero(t *testing.T) {
	var logged syncBuffer
	prev := logx.Reset()
	logx.SetWriter(logx.NewWriter(&logged))
	defer logx.SetWriter(prev)
	inLeakyBubble(t, func(t *testing.T) {
		c, err := gz.NewCache(time.Hour, gz.WithName("users"))
		if err != nil {
			t.Fatal(err)
		}
		c.Get("missing")
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
	})
	if !strings.Contains(logged.String(), "cache(users)") {
		t.Errorf("go-zero: logged %q, want a line for cache(users)", logged.String())
	}
	synctest.Test(t, func(t *testing.T) {
		c, err := collection.NewCache(time.Hour, collection.WithName("users"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Get("missing")
		if st := c.Stats(); st.Misses != 1 {
			t.Errorf("ours: Stats().Misses = %d, want 1", st.Misses)
		}
	})
}

// TestDiff_CacheTakeOvertakenByWriteInGoZero: go-zero's Take stores what
// fetch loaded even if the key was written or deleted while fetch ran, so
// the older value wins. Ours returns the loaded value to the Take but keeps
// the later write (or the deletion).
func TestDiff_CacheTakeOvertakenByWriteInGoZero(t *testing.T) {
	for _, c := range []struct {
		name         string
		write        func(c cacheAPI)
		gozero, ours string // Get after the Take
	}{
		{"Set during fetch", func(c cacheAPI) { c.Set("k", "written") }, "loaded true", "written true"},
		{"Del during fetch", func(c cacheAPI) { c.Del("k") }, "loaded true", "<nil> false"},
	} {
		for _, impl := range cacheImpls {
			impl.run(t, func(t *testing.T, newCache func(time.Duration, ...string) cacheAPI) {
				cc := newCache(time.Hour)
				release := make(chan struct{})
				taken := make(chan any, 1)
				go func() {
					v, _ := cc.Take("k", func() (any, error) { <-release; return "loaded", nil })
					taken <- v
				}()
				synctest.Wait() // the Take is in fetch
				c.write(cc)
				close(release)
				if v := <-taken; v != "loaded" {
					t.Errorf("%s, %s: Take returned %v, want loaded", impl.name, c.name, v)
				}
				want := c.ours
				if impl.name == goZeroCache.name {
					want = c.gozero
				}
				v, ok := cc.Get("k")
				if got := fmt.Sprintf("%v %v", v, ok); got != want {
					t.Errorf("%s, %s: Get after the Take = %s, want %s", impl.name, c.name, got, want)
				}
			})
		}
	}
}
