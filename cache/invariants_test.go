package cache

import (
	"testing"
	"time"
)

// checkInvariants verifies the cache's structure: for every shard, the map
// and the LRU ring hold exactly the same live nodes, the ring's links are
// consistent, the shard respects its limit, and the limits add up to the
// cache's. With quiet set (every goroutine that uses the cache is blocked,
// as after synctest.Wait) it also checks the expiry engine: every live node
// is scheduled (the wheel holds at least as many timers as there are live
// nodes), and no live node is overdue by more than one Resolution.
func checkInvariants[K comparable, V any](t testing.TB, c *Cache[K, V], limit int, quiet bool) {
	t.Helper()
	in := c.c
	total, limits := 0, 0
	now := in.now()
	for i := range in.shards {
		s := &in.shards[i]
		s.mu.Lock()
		limits += s.limit
		if s.closed {
			if len(s.m) != 0 || s.lru.next != &s.lru {
				t.Errorf("shard %d: closed but holds %d map entries", i, len(s.m))
			}
			s.mu.Unlock()
			continue
		}
		n := 0
		prev := &s.lru
		for e := s.lru.next; e != &s.lru; e = e.next {
			n++
			if e.prev != prev {
				t.Errorf("shard %d: node %v: prev link broken", i, e.key)
			}
			if got := s.m[e.key]; got != e {
				t.Errorf("shard %d: LRU node %v: map holds %p, want %p", i, e.key, got, e)
			}
			if e.stamp.Load()&deadBit != 0 {
				t.Errorf("shard %d: live node %v has the dead bit", i, e.key)
			}
			if e.timer.Value != e {
				t.Errorf("shard %d: node %v: timer back pointer %p, want %p", i, e.key, e.timer.Value, e)
			}
			if got := in.shardOf(e.key); got != s || e.sh != s {
				t.Errorf("node %v: in shard %d, but hashes elsewhere or points elsewhere", e.key, i)
			}
			if quiet && e.deadline()+int64(in.res) <= now {
				t.Errorf("shard %d: node %v: deadline %v, overdue at %v by more than resolution %v",
					i, e.key, time.Duration(e.deadline()), time.Duration(now), in.res)
			}
			prev = e
			if n > len(s.m)+1 {
				t.Errorf("shard %d: LRU ring longer than the map (%d)", i, len(s.m))
				break
			}
		}
		if s.lru.prev != prev {
			t.Errorf("shard %d: sentinel prev link broken", i)
		}
		if n != len(s.m) {
			t.Errorf("shard %d: LRU length %d, map length %d", i, n, len(s.m))
		}
		if s.limit > 0 && n > s.limit {
			t.Errorf("shard %d: %d entries, limit %d", i, n, s.limit)
		}
		total += n
		s.mu.Unlock()
	}
	if limits != limit {
		t.Errorf("shard limits sum to %d, want %d", limits, limit)
	}
	if got := c.Len(); got != total {
		t.Errorf("Len() = %d, want %d (nodes in the shards)", got, total)
	}
	if limit > 0 && total > limit {
		t.Errorf("%d entries, want <= Limit %d", total, limit)
	}
	if quiet {
		if got := in.sched.Len(); got < total {
			t.Errorf("wheel holds %d timers, want >= %d live entries", got, total)
		}
	}
}
