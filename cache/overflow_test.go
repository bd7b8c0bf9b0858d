package cache

import (
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// TestHugeTTLWithJitter: with jitter, a TTL near math.MaxInt64 times a
// factor above 1 overflowed the float conversion to a negative duration,
// clamped to 1ns: SetWithExpire(k, v, math.MaxInt64) with 5% jitter
// dropped about half its entries at once. Every way a duration enters the
// cache must saturate at "practically forever" instead.
func TestHugeTTLWithJitter(t *testing.T) {
	const forever = time.Duration(math.MaxInt64)
	tests := []struct {
		name  string
		opts  Options[int, int]
		write func(c *Cache[int, int], k int)
	}{
		{"TTL", Options[int, int]{TTL: forever, Jitter: DefaultJitter},
			func(c *Cache[int, int], k int) { c.Set(k, k) }},
		{"SetWithExpire", Options[int, int]{TTL: time.Second, Jitter: DefaultJitter},
			func(c *Cache[int, int], k int) { c.SetWithExpire(k, k, forever) }},
		{"TakeWithExpire", Options[int, int]{TTL: time.Second, Jitter: 0.5},
			func(c *Cache[int, int], k int) {
				c.TakeWithExpire(k, forever, func() (int, error) { return k, nil })
			}},
		{"Touch", Options[int, int]{TTL: forever, Jitter: 0.99},
			func(c *Cache[int, int], k int) { c.SetWithExpire(k, k, time.Second); c.Touch(k) }},
		{"Resolution", Options[int, int]{TTL: forever, Jitter: DefaultJitter, Resolution: forever},
			func(c *Cache[int, int], k int) { c.Set(k, k) }},
		{"Limit", Options[int, int]{TTL: forever, Jitter: DefaultJitter, Limit: 100},
			func(c *Cache[int, int], k int) { c.Set(k, k) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCache(t, tt.opts)
				const n = 200
				for k := range n {
					tt.write(c, k)
				}
				time.Sleep(24 * time.Hour)
				synctest.Wait()
				want := n
				if tt.opts.Limit > 0 {
					want = tt.opts.Limit
				}
				if got := c.Len(); got != want {
					t.Errorf("Len() = %d a day later, want %d", got, want)
				}
				live := 0
				for k := range n {
					if v, ok := c.Get(k); ok && v == k {
						live++
					}
				}
				if live != want {
					t.Errorf("%d of %d entries readable a day later, want %d", live, n, want)
				}
				checkInvariants(t, c, tt.opts.Limit, true)
			})
		})
	}
}
