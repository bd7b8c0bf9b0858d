package bench

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zeromicro/go-zero/core/collection"
)

// TestCacheAdapters checks that every cache adapter behaves like a cache:
// what was set is found with its value, Resident agrees, a bounded cache
// stays near its capacity, and Close works.
func TestCacheAdapters(t *testing.T) {
	const (
		capacity = 1_000
		small    = 100
		many     = 10 * capacity
	)
	for _, im := range cacheImpls {
		t.Run(im.name, func(t *testing.T) {
			c, err := im.new(cacheConfig{capacity: capacity, ttl: time.Hour, keys: many})
			if err != nil {
				t.Fatalf("new: %v", err)
			}
			defer c.Close()

			// ristretto may drop a Set under contention: loadAll retries.
			if got := loadAll(c, small); got != small {
				t.Fatalf("%d of %d keys present after loading, want all", got, small)
			}
			for k := range uint64(small) {
				if v, ok := c.Get(k); !ok || v != k {
					t.Errorf("Get(%d) = %d, %v; want %d, true", k, v, ok, k)
				}
			}
			if _, ok := c.Get(many + 1); ok {
				t.Errorf("Get of a key never set hit")
			}
			if n, ok := c.Resident(); ok && n != small {
				t.Errorf("Resident() = %d, want %d", n, small)
			}

			if im.perEntryTTL {
				c.SetTTL(small, 7, time.Hour)
				c.Sync()
				if v, ok := c.Get(small); !ok || v != 7 {
					t.Errorf("after SetTTL: Get(%d) = %d, %v; want 7, true", small, v, ok)
				}
			}

			for k := range uint64(many) {
				c.Set(k, k)
			}
			c.Sync()
			hits := 0
			for k := range uint64(many) {
				if _, ok := c.Get(k); ok {
					hits++
				}
			}
			// Sharded and sampled policies hold about the capacity, not
			// exactly; a quarter either way is "respected approximately".
			lo, hi := capacity/4, capacity*5/4
			if !im.bounded {
				lo, hi = many, many
			}
			if hits < lo || hits > hi {
				t.Errorf("%d of %d keys hit after setting them all with capacity %d, want %d..%d", hits, many, capacity, lo, hi)
			}
			if n, ok := c.Resident(); ok && (n < lo || n > hi) {
				t.Errorf("Resident() = %d after setting %d keys, want %d..%d", n, many, lo, hi)
			}
		})
	}
}

// TestCacheAdaptersExpire checks, in a synctest bubble (fake clock), that
// an entry is not returned after its TTL, so that each adapter really
// configures the TTL it is given. go-zero is left out (its Get does not
// check deadlines, and its statistics goroutine never exits), and so is
// go-cache (its janitor stops only from a finalizer, so the bubble could
// not end).
func TestCacheAdaptersExpire(t *testing.T) {
	const ttl = time.Minute
	for _, im := range cacheImpls {
		if im.name == "gozero" || im.name == "gocache" {
			continue
		}
		t.Run(im.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, err := im.new(cacheConfig{capacity: 100, ttl: ttl, keys: 10})
				if err != nil {
					t.Fatalf("new: %v", err)
				}
				defer c.Close()
				if got := loadAll(c, 1); got != 1 {
					t.Fatalf("key 0 not present after loading")
				}
				time.Sleep(ttl - time.Second)
				if _, ok := c.Get(0); !ok {
					t.Errorf("Get(0) missed 1s before its %v TTL ends, want a hit", ttl)
				}
				time.Sleep(2 * time.Second)
				if v, ok := c.Get(0); ok {
					t.Errorf("Get(0) = %d, true 1s after its %v TTL, want a miss", v, ttl)
				}
			})
		})
	}
}

func TestReleaseGoZeroCache(t *testing.T) {
	c, err := collection.NewCache(time.Hour, collection.WithLimit(10))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		c.Set(strconv.Itoa(i), i)
	}
	a := &gozeroCache{c: c, names: namesFor(20)}
	a.Sync()
	if n, _ := a.Resident(); n != 10 {
		t.Fatalf("Resident() = %d before release, want the limit 10", n)
	}
	releaseGoZeroCache(c)
	if n, _ := a.Resident(); n != 0 {
		t.Errorf("Resident() = %d after release, want 0", n)
	}
	if _, ok := c.Get("19"); ok {
		t.Errorf("Get of a key set before the release hit, want a miss")
	}
	if err := (*fieldAt[*collection.TimingWheel](c, "timingWheel")).SetTimer("k", 1, time.Second); err != collection.ErrClosed {
		t.Errorf("SetTimer on the released cache's wheel = %v, want ErrClosed", err)
	}
}

func TestFieldAtPanicsOnWrongType(t *testing.T) {
	c, err := collection.NewCache(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseGoZeroCache(c)
	for _, tt := range []struct {
		name string
		get  func()
	}{
		{"missing field", func() { fieldAt[int](c, "noSuchField") }},
		{"wrong type", func() { fieldAt[int](c, "data") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("fieldAt did not panic")
				}
			}()
			tt.get()
		})
	}
}

func TestKeyNames(t *testing.T) {
	names := makeKeyNames(1234)
	for _, k := range []uint64{0, 1, 9, 10, 99, 100, 1233, 1234, 1 << 40} {
		if got, want := names.name(k), strconv.FormatUint(k, 10); got != want {
			t.Errorf("name(%d) = %q, want %q", k, got, want)
		}
	}
	if got := testing.AllocsPerRun(100, func() { _ = names.name(777) }); got != 0 {
		t.Errorf("name of a key in the table allocates %v times, want 0", got)
	}
}

func TestMakeTrace(t *testing.T) {
	const keys, n = 1000, 100_000
	for _, dist := range []string{"zipf", "uniform"} {
		t.Run(dist, func(t *testing.T) {
			a := makeTrace(dist, keys, n, 1)
			if !slices.Equal(a, makeTrace(dist, keys, n, 1)) {
				t.Errorf("two traces with seed 1 differ, want equal")
			}
			if slices.Equal(a, makeTrace(dist, keys, n, 2)) {
				t.Errorf("traces with seeds 1 and 2 are equal, want different")
			}
			counts := make([]int, keys)
			for _, k := range a {
				if k >= keys {
					t.Fatalf("key %d out of [0, %d)", k, keys)
				}
				counts[k]++
			}
			top := slices.Max(counts)
			switch dist {
			case "zipf":
				// Rank 0 is the most frequent key, by far.
				if counts[0] != top || counts[0] < 10*n/keys {
					t.Errorf("key 0 drawn %d times (most frequent: %d), want the most frequent, at least %d", counts[0], top, 10*n/keys)
				}
			case "uniform":
				if top > 2*n/keys {
					t.Errorf("most frequent key drawn %d times, want at most %d", top, 2*n/keys)
				}
			}
		})
	}
}

func TestLatencyHist(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h latencyHist
	var ref []time.Duration
	for range 50_000 {
		// Log-uniform over 1 ns .. ~1 s.
		d := time.Duration(1 << r.IntN(30))
		d += time.Duration(r.Int64N(int64(d)))
		h.record(d)
		ref = append(ref, d)
	}
	slices.Sort(ref)
	if h.n != uint64(len(ref)) || h.max != ref[len(ref)-1] {
		t.Fatalf("n, max = %d, %v; want %d, %v", h.n, h.max, len(ref), ref[len(ref)-1])
	}
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999, 1} {
		rank := int(q*float64(len(ref))+0.999999) - 1
		want := ref[max(rank, 0)]
		got := h.quantile(q)
		if got < want || float64(got) > float64(want)*(1+1.0/histSub) {
			t.Errorf("quantile(%v) = %v, want %v to %v (+1/%d)", q, got, want, time.Duration(float64(want)*(1+1.0/histSub)), histSub)
		}
	}
	var empty latencyHist
	if got := empty.quantile(0.5); got != 0 {
		t.Errorf("quantile of an empty histogram = %v, want 0", got)
	}
}

func TestHistIndexIsMonotoneAndBounded(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 63, 64, 65, 127, 128, 1000, 1 << 20, 1<<20 + 1, 1 << 40, 1<<63 - 1, 1<<64 - 1} {
		i := histIndex(v)
		if i < prev {
			t.Errorf("histIndex(%d) = %d, below the index of a smaller value (%d)", v, i, prev)
		}
		if i >= 64*histSub {
			t.Fatalf("histIndex(%d) = %d, want < %d", v, i, 64*histSub)
		}
		if up := histUpper(i); up < v {
			t.Errorf("histUpper(histIndex(%d)) = %d, want >= %d", v, up, v)
		}
		prev = i
	}
}
