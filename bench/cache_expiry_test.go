package bench

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Expiry accuracy (issue 3): 100k entries with a 200 ms TTL.
const (
	expEntries = 100_000
	expTTL     = 200 * time.Millisecond
	expSample  = 16 // the prober follows every 16th key
)

// BenchmarkCacheExpiry sets 100k keys (8Ki under -short) with a 200 ms TTL,
// in order, recording the time just before and just after each Set; an
// entry's deadline lies between those two times plus the TTL. Then:
//
//   - A prober follows every 16th key in deadline order, calling Get on it
//     until it misses. "late-hits" counts keys that returned a hit from a
//     Get that started after the latest possible deadline (must be 0);
//     "hit-late-max-ms" is how late the latest such hit started.
//     "early-misses" counts keys that hit and then missed in a Get that
//     ended before the earliest possible deadline (entries removed early);
//     "never-hit" counts keys whose first Get, ended before that deadline,
//     missed (writes the cache dropped: ristretto may). "miss-p50-ms" and
//     "miss-max-ms" are the end of the first missing Get minus the latest
//     possible deadline, over keys the prober saw hit first (so its own
//     lag is not counted); about 0 for a cache that checks deadlines on
//     read.
//   - "reclaim-ms": when the cache first holds no entry (Resident == 0,
//     polled every millisecond), relative to the last key's deadline. Not
//     reported for caches that cannot count their entries (ristretto).
//   - "heap-left%": once the prober is done and the cache holds no entry,
//     the heap in use (after a collection) above what it was before the
//     fill, as a percentage of what the fill added. Values, and nodes
//     nobody references, are gone; Go maps do not shrink, so an index
//     that is a map keeps its tables. Only for caches that count entries.
//
// "timeouts" counts waits that gave up: keys the prober still saw hit, or
// a cache still holding entries, 10 s after the last deadline (2 s under
// -short). One round per process; reports no ns/op.
func BenchmarkCacheExpiry(b *testing.B) {
	n, limit := expEntries, 10*time.Second
	if testing.Short() {
		n, limit = 1<<13, 2*time.Second
	}
	namesFor(n)
	for _, im := range cacheImpls {
		b.Run("impl="+im.name, func(b *testing.B) {
			reportOneShot(b, func() map[string]float64 { return measureExpiry(b, im, n, limit) })
		})
	}
}

func measureExpiry(b *testing.B, im cacheImpl, n int, limit time.Duration) map[string]float64 {
	c := mustCache(b, im, cacheConfig{capacity: 2 * n, ttl: expTTL, keys: n})
	defer closeCache(c)
	lo := make([]time.Duration, n) // since origin, just before Set
	hi := make([]time.Duration, n) // since origin, just after Set
	var missLate []time.Duration
	base := heapInuseNow()

	origin := time.Now()
	for k := range n {
		lo[k] = time.Since(origin)
		c.Set(uint64(k), uint64(k))
		hi[k] = time.Since(origin)
	}
	c.Sync()
	filled := heapInuseNow()
	lastDeadline := hi[n-1] + expTTL
	stopAt := lastDeadline + limit

	reclaimed := make(chan time.Duration, 1) // since origin; absent on timeout
	watcherDone := make(chan struct{})
	_, counts := c.Resident()
	if counts {
		go func() {
			defer close(watcherDone)
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for time.Since(origin) < stopAt {
				if r, _ := c.Resident(); r == 0 {
					reclaimed <- time.Since(origin)
					return
				}
				<-tick.C
			}
		}()
	} else {
		close(watcherDone)
	}

	var lateHits, earlyMisses, neverHit, timeouts int
	var hitLateMax time.Duration
	for k := 0; k < n && time.Since(origin) < stopAt; k += expSample {
		earliest, latest := lo[k]+expTTL, hi[k]+expTTL
		sawHit, late := false, false
		for {
			t0 := time.Since(origin)
			_, ok := c.Get(uint64(k))
			t1 := time.Since(origin)
			if ok {
				sawHit = true
				if t0 > latest {
					if !late {
						lateHits++
						late = true
					}
					hitLateMax = max(hitLateMax, t0-latest)
				}
				if t0 > stopAt {
					timeouts++
					break
				}
				continue
			}
			if t1 < earliest {
				if sawHit {
					earlyMisses++
				} else {
					neverHit++ // never stored (a dropped write)
				}
			}
			if sawHit {
				missLate = append(missLate, t1-latest)
			}
			break
		}
	}

	<-watcherDone
	m := map[string]float64{
		"late-hits":       float64(lateHits),
		"hit-late-max-ms": toMS(hitLateMax),
		"early-misses":    float64(earlyMisses),
		"never-hit":       float64(neverHit),
	}
	if len(missLate) > 0 {
		slices.Sort(missLate)
		m["miss-p50-ms"] = toMS(missLate[len(missLate)/2])
		m["miss-max-ms"] = toMS(missLate[len(missLate)-1])
	}
	if counts {
		select {
		case at := <-reclaimed:
			m["reclaim-ms"] = toMS(at - lastDeadline)
		default:
			timeouts++
		}
	}

	if counts {
		if grown := float64(filled) - float64(base); grown > 0 {
			m["heap-left%"] = 100 * (float64(heapInuseNow()) - float64(base)) / grown
		}
	}
	m["timeouts"] = float64(timeouts)
	runtime.KeepAlive(lo)
	runtime.KeepAlive(hi)
	return m
}

// Mass expiry (issue 3): 1M keys expire together while two goroutines call
// Get and Set on other keys.
type massShape struct {
	entries, work int
	// budget is the least time from the start of the fill to T, and the
	// TTL of caches without a per-entry TTL; maxBudget the most.
	budget, maxBudget time.Duration
	window, limit     time.Duration
}

func massShapeFor() massShape {
	if testing.Short() {
		return massShape{entries: 1 << 16, work: 1 << 12, budget: 600 * time.Millisecond, maxBudget: 3 * time.Second,
			window: 500 * time.Millisecond, limit: 2 * time.Second}
	}
	return massShape{entries: 1 << 20, work: 1 << 16, budget: 1500 * time.Millisecond, maxBudget: 12 * time.Second,
		window: 1500 * time.Millisecond, limit: 9 * time.Second}
}

// BenchmarkCacheMassExpiry fills 1M keys (64Ki under -short) whose
// deadlines are all the same instant T (each Set gets ttl = T - now). 64Ki
// other keys are set first with a TTL of an hour; their insert time,
// scaled to 1M, estimates the fill time, and T is four times that after the
// fill starts, at least 1.5 s (0.6 s under -short), at most 12 s ("T-s").
// The fill stops early if it gets within a tenth of that of T ("filled").
// golang-lru has no per-entry TTL: its cache TTL is 1.5 s, its deadlines
// spread over the fill, and its other keys are set after the fill so that
// they outlive it. From 50 ms before T, two goroutines alternate Get and Set
// of random other keys, timing each call; calls that start at or after T
// are recorded. The run ends 200 ms after the cache is back to the other
// keys only ("reclaim-ms" after T), but not before T + 1.5 s nor after
// T + 9 s (ristretto, which cannot count its entries, runs to T + 9 s: it
// reclaims in 5 s buckets).
//
// Reports p50/p99/p99.9 and max latency of those calls (all, and p99 of
// Get and Set apart), the number recorded ("calls") and "filled". The
// latencies include the time a goroutine waits for a core: the machine has
// two, shared with the cache's own goroutines. One round per process.
func BenchmarkCacheMassExpiry(b *testing.B) {
	sh := massShapeFor()
	namesFor(sh.entries + sh.work)
	for _, im := range cacheImpls {
		b.Run("impl="+im.name, func(b *testing.B) {
			reportOneShot(b, func() map[string]float64 { return measureMassExpiry(b, im, sh) })
		})
	}
}

func measureMassExpiry(b *testing.B, im cacheImpl, sh massShape) map[string]float64 {
	ttl := longTTL
	if !im.perEntryTTL {
		ttl = sh.budget
	}
	c := mustCache(b, im, cacheConfig{capacity: 2 * (sh.entries + sh.work), ttl: ttl, keys: sh.entries + sh.work})
	defer closeCache(c)

	setOthers := func() time.Duration {
		t0 := time.Now()
		for k := sh.entries; k < sh.entries+sh.work; k++ {
			c.SetTTL(uint64(k), uint64(k), longTTL)
		}
		return time.Since(t0)
	}
	budget := sh.budget
	if im.perEntryTTL {
		// The other keys first: their inserts, scaled to the fill, estimate
		// how long it takes. A large map inserts several times slower than
		// a small one (cache misses, growth, collections), so T leaves four
		// times that.
		estimate := setOthers() * time.Duration(sh.entries/sh.work)
		budget = min(max(budget, 4*estimate+sh.budget/4), sh.maxBudget)
	}
	start := time.Now()
	target := start.Add(budget)
	margin := budget / 10
	filled := sh.entries
	for k := range sh.entries {
		if im.perEntryTTL {
			d := time.Until(target)
			if d < margin {
				filled = k
				break
			}
			c.SetTTL(uint64(k), uint64(k), d)
		} else {
			if time.Since(start) > budget-margin {
				filled = k
				break
			}
			c.Set(uint64(k), uint64(k))
		}
	}
	if !im.perEntryTTL {
		setOthers() // after the fill, so that they outlive it
	}
	c.Sync()
	runtime.GC()
	time.Sleep(time.Until(target.Add(-50 * time.Millisecond)))

	var stop atomic.Bool
	var hists [2][2]latencyHist // [worker][0 = Get, 1 = Set]
	var wg sync.WaitGroup
	for w := range hists {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 11))
			h := &hists[w]
			for i := 0; !stop.Load(); i++ {
				k := uint64(sh.entries) + r.Uint64N(uint64(sh.work))
				t0 := time.Now()
				if i&1 == 0 {
					c.Get(k)
				} else {
					c.Set(k, k)
				}
				d := time.Since(t0)
				if !t0.Before(target) {
					h[i&1].record(d)
				}
			}
		})
	}

	_, counts := c.Resident()
	reclaim := time.Duration(-1)
	end := target.Add(sh.limit)
	for now := time.Now(); now.Before(end); now = time.Now() {
		if counts && reclaim < 0 && !now.Before(target) {
			// Resident may wait for a lock the expiry holds: read the
			// clock after it returns.
			if r, _ := c.Resident(); r <= sh.work {
				now = time.Now()
				reclaim = now.Sub(target)
			}
		}
		if reclaim >= 0 && now.Sub(target) >= max(sh.window, reclaim+200*time.Millisecond) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()

	var all, get, set latencyHist
	for w := range hists {
		get.merge(&hists[w][0])
		set.merge(&hists[w][1])
	}
	all.merge(&get)
	all.merge(&set)
	m := map[string]float64{
		"p50-us":     toUS(all.quantile(0.50)),
		"p99-us":     toUS(all.quantile(0.99)),
		"p99.9-us":   toUS(all.quantile(0.999)),
		"max-ms":     toMS(all.max),
		"get-p99-us": toUS(get.quantile(0.99)),
		"set-p99-us": toUS(set.quantile(0.99)),
		"calls":      float64(all.n),
		"filled":     float64(filled),
		"T-s":        budget.Seconds(),
	}
	if reclaim >= 0 {
		m["reclaim-ms"] = toMS(reclaim)
	}
	return m
}
