package cache

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The wheel's Schedule also moves timers later, so the Schedules of one
// node must reach the wheel in the order their writes decided them: a
// stale one arriving last would postpone the node's reclamation, and one
// arriving after its Cancel would leave a timer armed. They are queued in
// the lock hold that decides them (see queueLocked), so two writes of one
// node queue their changes in the order they took the shard's lock. Each
// case runs its two writes from two goroutines at once, 20 times, and
// checks that the node is reclaimed on time and no timer is left armed.
func TestArmRaces(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		first func(c *Cache[string, int])
		race  func(c *Cache[string, int])
		live  int // entries left after the earlier deadline
	}{
		{
			name:  "earlier deadline racing the creation",
			first: func(c *Cache[string, int]) { c.SetWithExpire("k", 1, 10*time.Second) },
			race:  func(c *Cache[string, int]) { c.SetWithExpire("k", 2, time.Second) },
		},
		{
			name:  "eviction racing an insertion",
			limit: 1,
			first: func(c *Cache[string, int]) { c.SetWithExpire("a", 1, 10*time.Second) },
			race:  func(c *Cache[string, int]) { c.SetWithExpire("b", 2, time.Second) },
			live:  0,
		},
		{
			name:  "deletion racing the creation",
			first: func(c *Cache[string, int]) { c.SetWithExpire("k", 1, 10*time.Second) },
			race:  func(c *Cache[string, int]) { c.Delete("k") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 20 {
				synctest.Test(t, func(t *testing.T) {
					res := 10 * time.Millisecond
					c := newCache(t, Options[string, int]{TTL: time.Hour, Limit: tt.limit, Resolution: res})
					var wg sync.WaitGroup
					wg.Go(func() { tt.first(c) })
					wg.Go(func() { tt.race(c) })
					wg.Wait()
					synctest.Wait()
					checkInvariants(t, c, tt.limit, true)
					if got, want := c.c.sched.Len(), c.Len(); got != want {
						t.Errorf("wheel holds %d timers for %d entries", got, want)
					}
					time.Sleep(10*time.Second + res)
					synctest.Wait()
					if got := c.Len(); got != tt.live {
						t.Errorf("Len() = %d one interval after the latest deadline, want %d", got, tt.live)
					}
					if got := c.c.sched.Len(); got != tt.live {
						t.Errorf("wheel holds %d timers, want %d", got, tt.live)
					}
					checkInvariants(t, c, tt.limit, true)
				})
			}
		})
	}
}

// TestEarlierDeadlineReclaimedOnTime: a write that moves a node's
// deadline earlier arms its timer for the new deadline, after the timer
// the creation armed: the node goes at the earlier deadline, and a write
// that moves it later again keeps it to that later deadline.
func TestEarlierDeadlineReclaimedOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := 10 * time.Millisecond
		c := newCache(t, Options[string, int]{TTL: time.Hour, Resolution: res})
		c.SetWithExpire("k", 1, 10*time.Second)
		c.SetWithExpire("k", 2, time.Second)
		time.Sleep(time.Second + res)
		synctest.Wait()
		if got := c.Len(); got != 0 {
			t.Errorf("Len() = %d one interval after the earlier deadline, want 0", got)
		}
		c.SetWithExpire("j", 1, 500*time.Millisecond)
		c.SetWithExpire("j", 2, 10*time.Second)
		time.Sleep(time.Second)
		synctest.Wait()
		if v, ok := c.Get("j"); !ok || v != 2 {
			t.Errorf("Get(j) after its first deadline = %d, %v; want 2, true (moved later)", v, ok)
		}
		if got := c.c.sched.Len(); got != 1 {
			t.Errorf("wheel holds %d timers, want 1", got)
		}
	})
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
