package cache

import (
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// year is 365 days: a multiple of 8 ns, so a clock advanced by whole years
// keeps deadlines on whole ticks.
const year = 365 * 24 * time.Hour

// horizon is the first deadline a stamp cannot hold, since the cache was
// made (see maxDeadline).
const horizon = time.Duration(1 << 59)

// liveUntil checks, inside a bubble, that c returns want for key until
// left from now and not at left, and that rec got no event before then.
func liveUntil(t *testing.T, c *Cache[string, int], rec *recorder[string, int], key string, want int, left time.Duration) {
	t.Helper()
	time.Sleep(left - time.Nanosecond)
	if v, ok := c.Get(key); !ok || v != want {
		t.Errorf("Get(%s) 1ns before its deadline = %d, %v; want %d, true", key, v, ok, want)
	}
	synctest.Wait()
	if ev := rec.peek(); len(ev) != 0 {
		t.Errorf("events before the deadline of %s = %v, want none", key, ev)
	}
	time.Sleep(time.Nanosecond)
	if v, ok := c.Get(key); ok {
		t.Errorf("Get(%s) at its deadline = %d, true; want 0, false", key, v)
	}
}

// TestHorizonNumbers pins what the docs state: the horizon is 2^59 ns,
// about 18.27 years, and the TTL cap 2^57 ns, about 4.57 years.
func TestHorizonNumbers(t *testing.T) {
	if got, want := time.Duration(maxDeadline), horizon-8; got != want {
		t.Errorf("maxDeadline = %d, want %d (one tick before 2^59 ns)", got, want)
	}
	if got, want := maxTTL, time.Duration(1<<57); got != want {
		t.Errorf("maxTTL = %d, want %d", got, want)
	}
	const julian = 365.25 * 24 * float64(time.Hour)
	for _, tt := range []struct {
		name string
		d    time.Duration
		want float64 // years, as the docs round them
	}{
		{"horizon", horizon, 18.27},
		{"maxTTL", maxTTL, 4.57},
		{"horizon-maxTTL", horizon - maxTTL, 13.70},
	} {
		if got := math.Round(float64(tt.d)/julian*100) / 100; got != tt.want {
			t.Errorf("%s = %.2f years, want %.2f", tt.name, got, tt.want)
		}
	}
}

// TestCacheOlderThanOldHorizon: a stamp held the deadline in whole
// nanoseconds in 56 bits, so a cache more than 2^56 ns (about 2.28 years)
// past its origin saturated every deadline to a time already past: every
// entry expired on arrival, and the cache stopped caching. Now it still
// stores entries, returns them until their deadline, and expires them on
// time.
func TestCacheOlderThanOldHorizon(t *testing.T) {
	for _, tt := range []struct {
		name string
		age  time.Duration
	}{
		{"just past the old horizon", time.Duration(1<<56) + time.Hour},
		{"five years", 5 * year},
		{"thirteen years, maxTTL still fits", 13 * year},
	} {
		age := tt.age
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl, res = time.Minute, 10 * time.Millisecond
				var rec recorder[string, int]
				c := newCache(t, Options[string, int]{TTL: ttl, Resolution: res, OnEvict: rec.on})
				time.Sleep(age)
				c.Set("k", 1)
				if v, ok := c.Get("k"); !ok || v != 1 {
					t.Fatalf("Get(k) right after Set, %v after New = %d, %v; want 1, true", age, v, ok)
				}
				if left, ok := c.Remaining("k"); !ok || left != ttl {
					t.Errorf("Remaining(k) = %v, %v; want %v, true", left, ok, ttl)
				}
				c.SetWithExpire("long", 2, math.MaxInt64)
				if left, ok := c.Remaining("long"); !ok || left != maxTTL {
					t.Errorf("Remaining(long) = %v, %v; want %v (maxTTL), true", left, ok, maxTTL)
				}
				liveUntil(t, c, &rec, "k", 1, ttl)
				time.Sleep(res)
				synctest.Wait()
				if got, want := rec.take(), []Event[string, int]{{"k", 1, Expired}}; !slices.Equal(got, want) {
					t.Errorf("events one Resolution after the deadline = %v, want %v", got, want)
				}
				if got := c.Len(); got != 1 {
					t.Errorf("Len() = %d, want 1 (long)", got)
				}
			})
		})
	}
}

// TestDeadlineSaturatesAtHorizon: as Options.TTL says, a deadline past the
// horizon (2^59 ns after New) is cut to its last tick, 8 ns before it, so
// the entry expires early, never late; once the cache is that old, every
// entry expires on arrival, reported Expired, and the cache keeps nothing.
func TestDeadlineSaturatesAtHorizon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const res = 10 * time.Millisecond
		var rec recorder[string, int]
		c := newCache(t, Options[string, int]{TTL: 2 * time.Hour, Resolution: res, OnEvict: rec.on})
		time.Sleep(horizon - time.Hour)
		c.Set("cut", 1) // deadline horizon+1h, cut to horizon-8ns
		c.SetWithExpire("fits", 2, time.Hour-8*time.Nanosecond)
		for _, k := range []string{"cut", "fits"} {
			if left, ok := c.Remaining(k); !ok || left != time.Hour-8 {
				t.Errorf("Remaining(%s) = %v, %v; want %v, true", k, left, ok, time.Hour-8)
			}
		}
		time.Sleep(time.Hour - 9)
		if v, ok := c.Get("cut"); !ok || v != 1 {
			t.Errorf("Get(cut) 9ns before the horizon = %d, %v; want 1, true", v, ok)
		}
		time.Sleep(1)
		for _, k := range []string{"cut", "fits"} {
			if v, ok := c.Get(k); ok {
				t.Errorf("Get(%s) 8ns before the horizon = %d, true; want 0, false", k, v)
			}
		}
		time.Sleep(res)
		synctest.Wait()
		want := []Event[string, int]{{"cut", 1, Expired}, {"fits", 2, Expired}}
		got := rec.take()
		slices.SortFunc(got, func(a, b Event[string, int]) int { return a.Value - b.Value })
		if !slices.Equal(got, want) {
			t.Errorf("events at the horizon = %v, want %v", got, want)
		}

		// Past the horizon: stored, expired on arrival, reclaimed.
		time.Sleep(year)
		c.Set("late", 3)
		if v, ok := c.Get("late"); ok {
			t.Errorf("Get(late) past the horizon = %d, true; want 0, false", v)
		}
		if ok := c.Touch("late"); ok {
			t.Error("Touch(late) past the horizon = true, want false")
		}
		time.Sleep(res)
		synctest.Wait()
		if got, want := rec.take(), []Event[string, int]{{"late", 3, Expired}}; !slices.Equal(got, want) {
			t.Errorf("events past the horizon = %v, want %v", got, want)
		}
		if got := c.Len(); got != 0 {
			t.Errorf("Len() past the horizon = %d, want 0", got)
		}
		if got := c.c.sched.Len(); got != 0 {
			t.Errorf("wheel holds %d timers past the horizon, want 0", got)
		}
	})
}

// TestArmSchedulesStampDeadline: the wheel is armed for the deadline the
// stamp holds, rounded down to a tick of 8 ns, not for the nanosecond the
// TTL ends: with the clock 1 ns past a tick, a TTL of one Resolution ends
// 1 ns after a wheel tick; the stamp's deadline is that tick, and the wheel
// reclaims the entry at it, not one Resolution later. One Schedule does it:
// arm's recheck of the stamp finds the deadline it sent (a raw deadline
// would make it send a second, for the earlier, rounded one). Before the
// deadline the entry is returned and not reported; at it, never returned.
func TestArmSchedulesStampDeadline(t *testing.T) {
	const res = time.Millisecond
	tests := []struct {
		name  string
		ttl   time.Duration               // Options.TTL
		setup func(c *Cache[string, int]) // at 0
		write func(c *Cache[string, int]) // at 1ns, deadline res+1ns, kept as res
	}{
		{
			name:  "new key",
			ttl:   time.Hour,
			write: func(c *Cache[string, int]) { c.SetWithExpire("k", 1, res) },
		},
		{
			name:  "earlier deadline replaces the node",
			ttl:   time.Hour,
			setup: func(c *Cache[string, int]) { c.Set("k", 0) },
			write: func(c *Cache[string, int]) { c.SetWithExpire("k", 1, res) },
		},
		{
			name:  "earlier deadline by Touch",
			ttl:   res,
			setup: func(c *Cache[string, int]) { c.SetWithExpire("k", 1, time.Hour) },
			write: func(c *Cache[string, int]) { c.Touch("k") },
		},
		{
			name:  "GetOrSet",
			ttl:   res,
			write: func(c *Cache[string, int]) { c.GetOrSet("k", 1) },
		},
		{
			name: "Compute",
			ttl:  res,
			write: func(c *Cache[string, int]) {
				c.Compute("k", func(int, bool) (int, Action) { return 1, Store })
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec recorder[string, int]
				c := newCache(t, Options[string, int]{TTL: tt.ttl, Resolution: res, OnEvict: rec.on})
				if tt.setup != nil {
					tt.setup(c)
				}
				var schedules atomic.Int32
				c.c.beforeArm = func() { schedules.Add(1) }
				time.Sleep(time.Nanosecond)
				tt.write(c)
				if got := schedules.Load(); got != 1 {
					t.Errorf("%d Schedules for the write, want 1", got)
				}
				synctest.Wait()
				rec.take() // the setup's Replaced, if any
				if left, ok := c.Remaining("k"); !ok || left != res-time.Nanosecond {
					t.Errorf("Remaining(k) = %v, %v; want %v, true (the deadline rounded down to %v)", left, ok, res-time.Nanosecond, res)
				}
				liveUntil(t, c, &rec, "k", 1, res-time.Nanosecond) // the stamp's deadline
				synctest.Wait()
				if got, want := rec.take(), []Event[string, int]{{"k", 1, Expired}}; !slices.Equal(got, want) {
					t.Errorf("events at the stamp's deadline (the wheel's tick) = %v, want %v", got, want)
				}
				if got := c.c.sched.Len(); got != 0 {
					t.Errorf("wheel holds %d timers after the deadline, want 0", got)
				}
				checkInvariants(t, c, 0, true)
			})
		})
	}
}
