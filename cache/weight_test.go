package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func weighLen(_ int, v string) int { return len(v) }

func newWeighed(t *testing.T, maxWeight int64, onEvict func(Event[int, string])) *Cache[int, string] {
	t.Helper()
	return newCache(t, Options[int, string]{TTL: time.Hour, MaxWeight: maxWeight, Weigher: weighLen, OnEvict: onEvict})
}

func TestWeightOptionsValidated(t *testing.T) {
	tests := []struct {
		name string
		opts Options[int, string]
		want string
	}{
		{"negative MaxWeight", Options[int, string]{TTL: time.Hour, MaxWeight: -1, Weigher: weighLen}, "MaxWeight -1"},
		{"MaxWeight without Weigher", Options[int, string]{TTL: time.Hour, MaxWeight: 10}, "without a Weigher"},
		{"Weigher without MaxWeight", Options[int, string]{TTL: time.Hour, Weigher: weighLen}, "Weigher without MaxWeight"},
		{"Limit and MaxWeight", Options[int, string]{TTL: time.Hour, Limit: 5, MaxWeight: 10, Weigher: weighLen}, "both Limit and MaxWeight"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if !errors.Is(err, ErrOptions) || !strings.Contains(fmt.Sprint(err), tt.want) {
				t.Errorf("New: %v, want ErrOptions saying %q", err, tt.want)
			}
		})
	}
}

// TestTooHeavyRefused: an entry heavier than one shard's share of
// MaxWeight is never stored; TrySet says why, Set drops it and removes the
// key's previous value (reported Deleted) so that Get never returns a
// value older than the write.
func TestTooHeavyRefused(t *testing.T) {
	rec := &recorder[int, string]{}
	c := newWeighed(t, 1600, rec.on)
	shards := int64(len(c.c.shards))
	most := 1600 / shards
	if err := c.TrySet(1, strings.Repeat("x", int(most))); err != nil {
		t.Fatalf("TrySet of weight %d (the most): %v", most, err)
	}
	err := c.TrySet(1, strings.Repeat("x", int(most)+1))
	if !errors.Is(err, ErrTooHeavy) {
		t.Fatalf("TrySet of weight %d: %v, want ErrTooHeavy", most+1, err)
	}
	want := fmt.Sprintf("key 1 weighs %d; one entry may weigh at most %d (MaxWeight 1600 split over %d shards)", most+1, most, shards)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to say %q", err, want)
	}
	if _, ok := c.Get(1); ok {
		t.Error("Get(1) hit after a refused write; want the old value gone")
	}
	if ev := rec.take(); len(ev) != 1 || ev[0].Reason != Deleted || len(ev[0].Value) != int(most) {
		t.Errorf("events %v, want the previous value Deleted", ev)
	}
	c.Set(2, "ok")
	c.Set(2, strings.Repeat("y", int(most)+1))
	if _, ok := c.Get(2); ok {
		t.Error("Get(2) hit after Set of a too heavy value")
	}
	if c.SetIfAbsent(3, strings.Repeat("z", 2000)) {
		t.Error("SetIfAbsent stored a too heavy value")
	}
	v, err := c.Take(4, func() (string, error) { return strings.Repeat("t", 2000), nil })
	if err != nil || len(v) != 2000 {
		t.Errorf("Take = %d bytes, %v; want the fetched 2000, nil", len(v), err)
	}
	if _, ok := c.Peek(4); ok {
		t.Error("Take stored a too heavy value")
	}
	checkInvariants(t, c, 1600, false)
	c.Close()
	if err := c.TrySet(5, "x"); !errors.Is(err, ErrClosed) {
		t.Errorf("TrySet after Close: %v, want ErrClosed", err)
	}
}

// TestWeightNeverExceeded: random weights, inserts and heavier or lighter
// overwrites; the weight held never exceeds MaxWeight, and the queues'
// weights add up (checkInvariants).
func TestWeightNeverExceeded(t *testing.T) {
	const maxWeight = 16 * 400
	c := newWeighed(t, maxWeight, nil)
	x := xorshift(7)
	for i := range 20_000 {
		k := int(x.next() % 2000)
		v := strings.Repeat("v", 1+int(x.next()%60))
		if _, ok := c.Get(k); !ok || i%3 == 0 {
			c.Set(k, v)
		}
		if i%1000 == 0 {
			checkInvariants(t, c, maxWeight, false)
			held := int64(0)
			for s := range c.c.made() {
				s.mu.Lock()
				held += s.total()
				s.mu.Unlock()
			}
			if held > maxWeight {
				t.Fatalf("weight %d held, MaxWeight %d", held, maxWeight)
			}
			var sum int64
			for _, v := range c.All() {
				sum += int64(len(v))
			}
			if sum > maxWeight {
				t.Fatalf("entries weigh %d in all, MaxWeight %d", sum, maxWeight)
			}
		}
	}
	checkInvariants(t, c, maxWeight, false)
}

// TestHeavierOverwriteMakesRoom: an overwrite with a heavier value evicts
// other entries until it fits; the overwritten key stays.
func TestHeavierOverwriteMakesRoom(t *testing.T) {
	c := newCache(t, Options[int, string]{TTL: time.Hour, MaxWeight: 100, Weigher: weighLen})
	// Keys of one shard, as many as it holds (MaxWeight 100 is one shard
	// of 100).
	s0 := table0(c)
	limit := int(s0.limit)
	var keys []int
	for k := 0; len(keys) < limit; k++ {
		if c.c.shardFor(c.c.hash(k)) == s0 {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		c.Set(k, "x") // weight 1 each: the shard is full
	}
	c.Set(keys[0], "xxxx") // 4: three others must go
	if _, ok := c.Peek(keys[0]); !ok {
		t.Errorf("the overwritten key was evicted")
	}
	s0.mu.Lock()
	total, n := s0.total(), s0.tab.Len()
	s0.mu.Unlock()
	if total > int64(limit) || n != limit-3 {
		t.Errorf("shard holds weight %d in %d entries, want at most %d in %d", total, n, limit, limit-3)
	}
	checkInvariants(t, c, 100, false)
}

func table0(c *Cache[int, string]) *shard[int, string] { return c.c.shardFor(c.c.hash(0)) }

// TestWeightedScanDoesNotFlushFrequentKeys: admission works by weight too:
// heavy entries used once do not displace light ones used often.
func TestWeightedScanDoesNotFlushFrequentKeys(t *testing.T) {
	const maxWeight = 16 * 100
	c := newWeighed(t, maxWeight, nil)
	for k := range 400 {
		c.Set(k, "aa")
	}
	for range 5 {
		for k := range 400 {
			c.Get(k)
		}
	}
	for k := 1000; k < 3000; k++ {
		if _, ok := c.Get(k); !ok {
			c.Set(k, strings.Repeat("b", 20))
		}
	}
	kept := 0
	for k := range 400 {
		if _, ok := c.Peek(k); ok {
			kept++
		}
	}
	if kept < 300 {
		t.Errorf("%d of 400 frequently read light keys survived a scan of heavy ones, want at least 300", kept)
	}
	checkInvariants(t, c, maxWeight, false)
}

// TestWeightedEvictionsKeepOneTimerPerEntry: an insertion that evicts
// several lighter entries hands the first one's timer to the newcomer and
// cancels the others'; expired entries met on the way go as Expired. After
// random weighted writes the wheel holds exactly one timer per live entry
// (checkInvariants with quiet set), and expired entries are reclaimed.
func TestWeightedEvictionsKeepOneTimerPerEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxWeight = 16 * 50
		c := newCache(t, Options[int, string]{TTL: time.Second, MaxWeight: maxWeight, Weigher: weighLen, Resolution: 10 * time.Millisecond})
		x := xorshift(3)
		for i := range 5000 {
			k := int(x.next() % 500)
			v := strings.Repeat("w", 1+int(x.next()%40))
			switch x.next() % 4 {
			case 0:
				c.SetWithExpire(k, v, time.Duration(1+x.next()%300)*time.Millisecond)
			default:
				c.Set(k, v)
			}
			if i%500 == 0 {
				time.Sleep(50 * time.Millisecond)
				synctest.Wait()
				checkInvariants(t, c, maxWeight, true)
			}
		}
		synctest.Wait()
		checkInvariants(t, c, maxWeight, true)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := c.Len(); n != 0 {
			t.Errorf("Len() = %d after every TTL passed, want 0", n)
		}
		checkInvariants(t, c, maxWeight, true)
	})
}

// TestTooHeavyFromLoaderAndCompute: a loaded value or a Compute result
// heavier than one entry may be is returned but not kept; a Compute that
// stores one removes the key's older value, as Set does.
func TestTooHeavyFromLoaderAndCompute(t *testing.T) {
	heavy := strings.Repeat("h", 2000)
	c := newCache(t, Options[int, string]{TTL: time.Hour, MaxWeight: 1600, Weigher: weighLen,
		Loader: func(_ context.Context, k int) (Loaded[string], error) { return Loaded[string]{Value: heavy}, nil }})
	v, err := c.Load(context.Background(), 1)
	if err != nil || v != heavy {
		t.Fatalf("Load = %d bytes, %v; want the loaded 2000, nil", len(v), err)
	}
	if _, ok := c.Peek(1); ok {
		t.Error("a too heavy loaded value was kept")
	}
	c.Set(2, "light")
	c.Compute(2, func(string, bool) (string, Action) { return heavy, Store })
	if _, ok := c.Peek(2); ok {
		t.Error("Compute stored a too heavy value, or kept the older one")
	}
	checkInvariants(t, c, 1600, false)
}

// TestSmallMaxWeightStoresEntries: MaxWeight is split across the shards as
// Limit is (under 128: one shard; otherwise at least 64 per shard), the
// shares add up to MaxWeight and none is 0, and one entry may weigh
// MaxWeight divided by the shards, at least min(MaxWeight, 64). A
// MaxWeight under the shard count used to give every shard 0: nothing
// could be stored at all.
func TestSmallMaxWeightStoresEntries(t *testing.T) {
	shards := int64(shardCount(runtime.GOMAXPROCS(0), 0))
	for _, maxWeight := range []int64{1, 2, 3, shards - 1, shards, shards + 1, 63, 64, 127, 128, 1000, 1 << 20} {
		t.Run(fmt.Sprint(maxWeight), func(t *testing.T) {
			c := newWeighed(t, maxWeight, nil)
			n := int64(len(c.c.shards))
			if maxWeight < 128 && n != 1 {
				t.Errorf("%d shards, want 1 for a MaxWeight under 128", n)
			}
			for i := range c.c.shards {
				if got := c.c.shardLimit(i); got < 1 || got > maxWeight {
					t.Errorf("shard %d of %d: limit %d, want 1 to %d", i, n, got, maxWeight)
				}
			}
			most := c.c.maxEntry
			if want := maxWeight / n; most != want || most < min(maxWeight, 64) {
				t.Errorf("one entry may weigh %d, want MaxWeight/shards = %d/%d = %d, at least %d",
					most, maxWeight, n, want, min(maxWeight, 64))
			}
			if err := c.TrySet(-1, strings.Repeat("m", int(most))); err != nil {
				t.Errorf("TrySet of the heaviest entry (%d): %v, want nil", most, err)
			}
			if err := c.TrySet(-1, strings.Repeat("m", int(most)+1)); !errors.Is(err, ErrTooHeavy) {
				t.Errorf("TrySet of weight %d: %v, want ErrTooHeavy", most+1, err)
			}
			// Entries of weight 1: a single shard fills up exactly; the
			// whole never weighs more than MaxWeight.
			keys := min(3*maxWeight, 3000)
			for k := range keys {
				c.Set(int(k), "x")
				if got := int64(c.Len()); got > maxWeight {
					t.Fatalf("after %d Sets of weight 1: %d entries, want at most MaxWeight %d", k+1, got, maxWeight)
				}
			}
			got := int64(c.Len())
			if n == 1 && got != maxWeight {
				t.Errorf("one shard: %d entries of weight 1 after %d Sets, want MaxWeight %d", got, keys, maxWeight)
			}
			if got < 1 {
				t.Errorf("%d entries after %d Sets of weight 1, want some", got, keys)
			}
			checkInvariants(t, c, int(maxWeight), false)
		})
	}
}

// TestTooHeavyValueNotStoredByGetOrSet: GetOrSet and SetIfAbsent, which
// cannot return an error, never store a value heavier than one entry may
// be: of a key without a live entry, GetOrSet returns the value and false
// but stores, removes and reports nothing (Stats: a miss, no Set),
// SetIfAbsent returns false; of a live key both leave the value as it
// was. A value of exactly the bound is stored.
func TestTooHeavyValueNotStoredByGetOrSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder[int, string]{}
		c := newWeighed(t, 100, rec.on) // one shard: one entry may weigh 100
		heavy := strings.Repeat("h", 101)
		c.Set(1, "live")
		c.SetWithExpire(2, "expired", time.Millisecond)
		time.Sleep(2 * time.Millisecond)
		before := c.Stats()
		steps := []struct {
			name       string
			key        int
			getOrSet   bool   // GetOrSet, else SetIfAbsent
			wantValue  string // GetOrSet's result
			wantLoaded bool   // GetOrSet: loaded; SetIfAbsent: stored
			wantPeek   string // "" for a miss
		}{
			{"GetOrSet, no entry", 3, true, heavy, false, ""},
			{"GetOrSet, expired entry", 2, true, heavy, false, ""},
			{"GetOrSet, live entry", 1, true, "live", true, "live"},
			{"SetIfAbsent, no entry", 4, false, "", false, ""},
			{"SetIfAbsent, live entry", 1, false, "", false, "live"},
		}
		for _, st := range steps {
			if st.getOrSet {
				v, loaded := c.GetOrSet(st.key, heavy)
				if v != st.wantValue || loaded != st.wantLoaded {
					t.Errorf("%s: GetOrSet = %d bytes, %v; want %d bytes, %v", st.name, len(v), loaded, len(st.wantValue), st.wantLoaded)
				}
			} else if stored := c.SetIfAbsent(st.key, heavy); stored != st.wantLoaded {
				t.Errorf("%s: SetIfAbsent = %v, want %v", st.name, stored, st.wantLoaded)
			}
			if v, _ := c.Peek(st.key); v != st.wantPeek {
				t.Errorf("%s: Peek(%d) = %d bytes, want %q", st.name, st.key, len(v), st.wantPeek)
			}
		}
		if ev := rec.take(); len(ev) != 0 {
			t.Errorf("events %v, want none", ev)
		}
		after := c.Stats()
		if sets, misses := after.Sets-before.Sets, after.Misses-before.Misses; sets != 0 || misses != 2 {
			t.Errorf("Stats: %d Sets, %d misses, want 0 Sets and the 2 misses of GetOrSet", sets, misses)
		}
		exact := strings.Repeat("e", 100)
		if v, loaded := c.GetOrSet(5, exact); v != exact || loaded {
			t.Errorf("GetOrSet of weight 100 = %d bytes, %v, want it stored", len(v), loaded)
		}
		checkInvariants(t, c, 100, false)
	})
}

// TestMaxEntryWeightCapped: however large MaxWeight, one entry may weigh
// at most 2^30-1 (Options.MaxWeight).
func TestMaxEntryWeightCapped(t *testing.T) {
	c := newCache(t, Options[int, int]{TTL: time.Hour, MaxWeight: 1 << 40,
		Weigher: func(_ int, v int) int { return v }})
	if err := c.TrySet(1, 1<<30-1); err != nil {
		t.Errorf("TrySet of weight 2^30-1: %v, want nil", err)
	}
	if err := c.TrySet(1, 1<<30); !errors.Is(err, ErrTooHeavy) {
		t.Errorf("TrySet of weight 2^30: %v, want ErrTooHeavy", err)
	}
	if _, ok := c.Peek(1); ok {
		t.Errorf("Peek(1) hit after a refused TrySet, want the older entry removed")
	}
}
