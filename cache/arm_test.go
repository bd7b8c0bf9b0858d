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

// TestEvictionHandsOverArmedTimer: an insertion that evicts hands the
// victim's timer to the new entry. If the new deadline is no earlier than
// the victim's, the timer already fires in time: no wheel command is sent,
// and the expiry callback re-arms it for the remainder. An earlier deadline
// is scheduled. Either way the new entry expires on its own deadline.
func TestEvictionHandsOverArmedTimer(t *testing.T) {
	tests := []struct {
		name          string
		victim, entry time.Duration // TTLs
		schedules     int32         // wheel commands for both insertions
	}{
		{"later deadline: no command", time.Second, 10 * time.Second, 1},
		{"same deadline: no command", time.Second, time.Second, 1},
		{"earlier deadline: scheduled", 10 * time.Second, time.Second, 2},
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
				if got := schedules.Load(); got != tt.schedules {
					t.Errorf("%d Schedules for the two insertions, want %d", got, tt.schedules)
				}
				if _, ok := c.Get("victim"); ok {
					t.Fatal("victim still cached after the eviction")
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
