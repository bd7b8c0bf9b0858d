package cache

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Package benchmarks, for tuning; comparisons with other caches live in
// the bench module.

func benchCache(b *testing.B, limit int) *Cache[uint64, uint64] {
	b.Helper()
	c, err := New(Options[uint64, uint64]{TTL: time.Hour, Limit: limit})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// xorshift is a per-goroutine key generator cheap enough not to dominate.
type xorshift uint64

func (x *xorshift) next() uint64 {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return uint64(*x)
}

var seq atomic.Uint64

func newXorshift() xorshift { return xorshift(seq.Add(0x9E3779B97F4A7C15) | 1) }

func BenchmarkGet(b *testing.B) {
	// 4096 keys: the nodes and the map stay in cache, so this measures the
	// code path rather than DRAM latency.
	const keys = 1 << 12
	c := benchCache(b, 0)
	for k := range uint64(keys) {
		c.Set(k, k)
	}
	b.Run("Parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			x := newXorshift()
			for pb.Next() {
				c.Get(x.next() & (keys - 1))
			}
		})
	})
	b.Run("Single", func(b *testing.B) {
		b.ReportAllocs()
		x := newXorshift()
		for b.Loop() {
			c.Get(x.next() & (keys - 1))
		}
	})
	b.Run("Miss", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			x := newXorshift()
			for pb.Next() {
				c.Get(x.next() | 1<<40)
			}
		})
	})
}

func BenchmarkSet(b *testing.B) {
	const keys = 1 << 16
	b.Run("Overwrite", func(b *testing.B) {
		c := benchCache(b, 0)
		for k := range uint64(keys) {
			c.Set(k, k)
		}
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			x := newXorshift()
			for pb.Next() {
				k := x.next() & (keys - 1)
				c.Set(k, k)
			}
		})
	})
	b.Run("Insert", func(b *testing.B) {
		// New keys under a limit: an insertion, an eviction, and one
		// Schedule and one Cancel for the wheel each.
		c := benchCache(b, keys)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			x := newXorshift()
			for pb.Next() {
				k := x.next()
				c.Set(k, k)
			}
		})
	})
}

// BenchmarkGetOrSet is the bench module's main workload: Get, and Set on a
// miss, over 1M keys with a limit of 100k, uniform and Zipf.
func BenchmarkGetOrSet(b *testing.B) {
	const keys = 1 << 20
	for _, dist := range []string{"Uniform", "Zipf"} {
		b.Run(dist, func(b *testing.B) {
			c := benchCache(b, 100_000)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				x := newXorshift()
				r := rand.New(rand.NewPCG(x.next(), x.next()))
				z := rand.NewZipf(r, 1.01, 1, keys-1)
				for pb.Next() {
					var k uint64
					if dist == "Zipf" {
						k = z.Uint64()
					} else {
						k = x.next() & (keys - 1)
					}
					if _, ok := c.Get(k); !ok {
						c.Set(k, k)
					}
				}
			})
			st := c.Stats()
			b.ReportMetric(st.HitRatio()*100, "hit%")
		})
	}
}

// BenchmarkBytesPerEntry reports the heap held per entry of a cache of 1M
// uint64 keys and values with the default TTL (payload included: 16 bytes
// of it are the key and value themselves).
func BenchmarkBytesPerEntry(b *testing.B) {
	const n = 1 << 20
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c, err := New(Options[uint64, uint64]{TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		for k := range uint64(n) {
			c.Set(k, k)
		}
		c.c.sched.Len() // every Schedule applied
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/n, "bytes/entry")
		runtime.KeepAlive(c)
		c.Close()
	}
}

// BenchmarkMassExpiry fills 1M entries that expire within one wheel tick,
// then measures Get and Set latency on other keys from 100ms before the
// deadline until 500ms after it, while the wheel reclaims them, and
// reports the 99th and 99.9th percentiles and the maximum, and how long
// after the deadline the 1M were reclaimed. Run it with -benchtime 1x.
func BenchmarkMassExpiry(b *testing.B) {
	const n = 1 << 20
	for b.Loop() {
		b.StopTimer()
		ttl := 3 * time.Second
		c, err := New(Options[uint64, uint64]{TTL: ttl, Resolution: 10 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for k := range uint64(n) {
			c.SetWithExpire(k, k, ttl-time.Since(start)) // one deadline for all
		}
		if time.Since(start) > ttl-200*time.Millisecond {
			b.Skip("fill slower than the TTL")
		}
		time.Sleep(ttl - 100*time.Millisecond - time.Since(start))
		b.StartTimer()
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Go(func() {
				x := newXorshift()
				var mine []time.Duration
				for time.Since(start) < ttl+500*time.Millisecond {
					k := n + x.next()&0xffff
					t0 := time.Now()
					if g == 0 {
						c.Get(k)
					} else {
						c.Set(k, k)
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		b.StopTimer()
		// How long after the deadline the engine had reclaimed the 1M
		// (polled; the latency goroutines competed with it until +500ms).
		for c.Len() > 1<<16 && time.Since(start) < ttl+10*time.Second {
			time.Sleep(5 * time.Millisecond)
		}
		b.ReportMetric(float64((time.Since(start) - ttl).Milliseconds()), "reclaimed-ms")
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		b.ReportMetric(float64(lat[len(lat)*999/1000].Nanoseconds()), "p999-ns")
		b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds()), "max-ns")
		c.Close()
		b.StartTimer()
	}
}

// BenchmarkGetLoading is BenchmarkGet's Single and Parallel hits on caches
// with the loading features that act on reads: ExpireAfterAccess (a read
// moves the deadline at most once per Resolution) and RefreshAfter (no
// entry due: the check only).
func BenchmarkGetLoading(b *testing.B) {
	const keys = 1 << 12
	load := func(_ context.Context, k uint64) (Loaded[uint64], error) { return Loaded[uint64]{Value: k}, nil }
	for _, tc := range []struct {
		name string
		opts Options[uint64, uint64]
	}{
		{"Sliding", Options[uint64, uint64]{TTL: time.Hour, ExpireAfterAccess: true}},
		{"Refresh", Options[uint64, uint64]{TTL: time.Hour, RefreshAfter: 30 * time.Minute, Loader: load}},
	} {
		c, err := New(tc.opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		for k := range uint64(keys) {
			c.Set(k, k)
		}
		b.Run(tc.name+"/Parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				x := newXorshift()
				for pb.Next() {
					c.Get(x.next() & (keys - 1))
				}
			})
		})
		b.Run(tc.name+"/Single", func(b *testing.B) {
			b.ReportAllocs()
			x := newXorshift()
			for b.Loop() {
				c.Get(x.next() & (keys - 1))
			}
		})
	}
}
