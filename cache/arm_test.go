package cache

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// holdFirstArm makes the first Schedule of c wait until the returned
// function is called, so a test can order a racing write before it.
func holdFirstArm[K comparable, V any](c *Cache[K, V]) (release func()) {
	gate := make(chan struct{})
	var calls atomic.Int32
	c.c.beforeArm = func() {
		if calls.Add(1) == 1 {
			<-gate
		}
	}
	return func() { close(gate) }
}

// The wheel's Schedule also moves timers later, so Schedules for one node
// must arrive in the order they were decided. These tests hold the first
// sender between its unlock and its send, let a second write decide an
// earlier deadline (or remove the node) meanwhile, and check that the
// node is still reclaimed on time and no timer is left armed.
func TestArmRaces(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		first func(c *Cache[string, int])
		race  func(c *Cache[string, int])
		live  int // entries left after the earlier deadline
	}{
		{
			name:  "earlier deadline while the creator's Schedule waits",
			first: func(c *Cache[string, int]) { c.SetWithExpire("k", 1, 10*time.Second) },
			race:  func(c *Cache[string, int]) { c.SetWithExpire("k", 2, time.Second) },
		},
		{
			name:  "evicted by an insertion while its Schedule waits",
			limit: 1,
			first: func(c *Cache[string, int]) { c.SetWithExpire("a", 1, 10*time.Second) },
			race:  func(c *Cache[string, int]) { c.SetWithExpire("b", 2, time.Second) },
		},
		{
			name:  "deleted while its Schedule waits",
			first: func(c *Cache[string, int]) { c.SetWithExpire("k", 1, 10*time.Second) },
			race:  func(c *Cache[string, int]) { c.Delete("k") },
		},
		{
			name:  "later deadline while its Schedule waits",
			first: func(c *Cache[string, int]) { c.SetWithExpire("k", 1, 500*time.Millisecond) },
			race:  func(c *Cache[string, int]) { c.SetWithExpire("k", 2, 10*time.Second) },
			live:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				res := 10 * time.Millisecond
				c := newCache(t, Options[string, int]{TTL: time.Hour, Limit: tt.limit, Resolution: res})
				release := holdFirstArm(c)
				done := make(chan struct{})
				go func() {
					defer close(done)
					tt.first(c)
				}()
				synctest.Wait() // the first write is parked before its send
				tt.race(c)
				release()
				<-done
				synctest.Wait()
				checkInvariants(t, c, tt.limit, true)
				time.Sleep(time.Second + res)
				synctest.Wait()
				if got := c.Len(); got != tt.live {
					t.Errorf("Len() = %d one interval after the earlier deadline, want %d", got, tt.live)
				}
				if got := c.c.sched.Len(); got != tt.live {
					t.Errorf("wheel holds %d timers, want %d", got, tt.live)
				}
				checkInvariants(t, c, tt.limit, true)
			})
		})
	}
}

// TestEvictionArmsTheNewTimer: an insertion that evicts cancels the
// victim's timer and arms the new entry's own, whatever the two deadlines:
// the new entry expires on its own deadline, and the wheel is left with
// no timer of the victim's.
func TestEvictionArmsTheNewTimer(t *testing.T) {
	tests := []struct {
		name          string
		victim, entry time.Duration // TTLs
	}{
		{"later deadline", time.Second, 10 * time.Second},
		{"same deadline", time.Second, time.Second},
		{"earlier deadline", 10 * time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				res := 10 * time.Millisecond
				c := newCache(t, Options[string, int]{TTL: time.Hour, Limit: 1, Resolution: res})
				var schedules atomic.Int32
				c.c.beforeArm = func() { schedules.Add(1) }
				c.SetWithExpire("victim", 1, tt.victim)
				c.SetWithExpire("entry", 2, tt.entry)
				if got := schedules.Load(); got != 2 {
					t.Errorf("%d Schedules for the two insertions, want 2", got)
				}
				if _, ok := c.Get("victim"); ok {
					t.Fatal("victim still cached after the eviction")
				}
				synctest.Wait()
				if got := c.c.sched.Len(); got != 1 {
					t.Errorf("wheel holds %d timers after the eviction, want 1 (the entry's)", got)
				}
				time.Sleep(tt.entry - time.Millisecond)
				if v, ok := c.Get("entry"); !ok || v != 2 {
					t.Errorf("Get(entry) just before its deadline = %d, %v, want 2, true", v, ok)
				}
				time.Sleep(time.Millisecond + res)
				synctest.Wait()
				if got := c.Len(); got != 0 {
					t.Errorf("Len() = %d one interval after the entry's deadline, want 0", got)
				}
				if got := c.c.sched.Len(); got != 0 {
					t.Errorf("wheel holds %d timers after the entry expired, want 0", got)
				}
				checkInvariants(t, c, 1, true)
			})
		})
	}
}
