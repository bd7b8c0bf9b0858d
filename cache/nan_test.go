package cache

import (
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// nanKeyCase runs the NaN scenario for one key type: nan returns a fresh
// key not equal to itself, other(i) distinct ordinary keys.
func nanKeyCase[K comparable](t *testing.T, nan func() K, other func(i int) K) {
	for _, limit := range []int{0, 8, 1000} {
		synctest.Test(t, func(t *testing.T) {
			rec := &recorder[K, int]{}
			c := newCache(t, Options[K, int]{TTL: time.Minute, Limit: limit, OnEvict: rec.on})
			const others = 20
			for i := range others {
				c.Set(other(i), i)
			}
			loads := 0
			for i := range 100 {
				k := nan()
				c.Set(k, i)
				c.SetWithExpire(k, i, time.Hour)
				if c.Touch(k) {
					t.Fatalf("Touch(NaN key) = true, want false")
				}
				if _, ok := c.Get(k); ok {
					t.Fatalf("Get(NaN key) ok = true, want false")
				}
				v, err := c.Take(k, func() (int, error) { loads++; return -i, nil })
				if err != nil || v != -i {
					t.Fatalf("Take(NaN key) = %d, %v; want %d, nil", v, err, -i)
				}
				c.Delete(k)
			}
			if loads != 100 {
				t.Errorf("Take(NaN key) ran fetch %d times in 100 calls, want 100 (never stored)", loads)
			}
			want := others
			if limit > 0 {
				want = min(others, limit)
			}
			if got := c.Len(); got != want {
				t.Errorf("limit %d: Len() = %d after 100 NaN keys, want %d (NaN keys are not stored)", limit, got, want)
			}
			for k := range c.All() {
				if k != k {
					t.Errorf("All yielded a NaN key")
				}
			}
			synctest.Wait()
			checkInvariants(t, c, limit, true)
			for _, e := range rec.take() {
				if e.Key != e.Key {
					t.Errorf("OnEvict got a NaN key: %+v", e)
				}
			}
			time.Sleep(2 * time.Minute)
			synctest.Wait()
			if got := c.Len(); got != 0 {
				t.Errorf("Len() = %d after the TTL, want 0", got)
			}
			checkInvariants(t, c, limit, true)
			c.Set(other(0), 1) // the shards still work
			wantGet(t, c, other(0), 1, true)
		})
	}
}

// TestNaNKeysNeverStored: a key not equal to itself can never be found
// again. Stored, it broke the cache: removal never found its node, so
// expiry and eviction unlinked it but left it indexed (Limit 8 held 100
// entries), a later removal dereferenced its nil value with the shard lock
// held (every later call on the shard blocked), and with several shards the
// expiry callback re-hashed it to a random shard and unlinked it under the
// wrong lock. Now such keys are dropped by writes and loaded without
// sharing by Take; the expiry callback finds a node's shard in its expiry.
func TestNaNKeysNeverStored(t *testing.T) {
	nan := math.NaN
	t.Run("float64", func(t *testing.T) {
		nanKeyCase(t, nan, func(i int) float64 { return float64(i) })
	})
	t.Run("float32", func(t *testing.T) {
		nanKeyCase(t, func() float32 { return float32(nan()) }, func(i int) float32 { return float32(i) })
	})
	t.Run("complex128", func(t *testing.T) {
		nanKeyCase(t, func() complex128 { return complex(1, nan()) }, func(i int) complex128 { return complex(float64(i), 0) })
	})
	type pair struct {
		id int
		f  float64
	}
	t.Run("struct", func(t *testing.T) {
		nanKeyCase(t, func() pair { return pair{1, nan()} }, func(i int) pair { return pair{i, 0} })
	})
	t.Run("array", func(t *testing.T) {
		nanKeyCase(t, func() [2]float64 { return [2]float64{0, nan()} }, func(i int) [2]float64 { return [2]float64{float64(i)} })
	})
	t.Run("interface", func(t *testing.T) {
		nanKeyCase(t, func() any { return nan() }, func(i int) any { return i })
	})
	t.Run("interface holding a struct", func(t *testing.T) {
		nanKeyCase(t, func() any { return pair{2, nan()} }, func(i int) any { return pair{i, 1} })
	})
}
