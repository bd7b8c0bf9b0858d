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
