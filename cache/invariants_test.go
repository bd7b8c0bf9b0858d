package cache

import (
	"testing"
	"time"
)

// checkInvariants verifies the cache's structure: for every shard, the
// table and the policy's queues hold exactly the same live nodes, each
// queue's links are consistent, every node records the queue it is in, the
// queues' weights add up to what the shard counts (entries, without a
// Weigher), an unbounded shard has no queues and counts no reads, every
// node in the table is live, the table's size
// follows its population (no more than 16 slots per entry above its
// floor, so memory comes back after mass expiry), the shard respects its
// limit, and the limits add up to the cache's. With quiet set (every
// goroutine that uses the cache is blocked, as after synctest.Wait) it also
// checks the expiry engine: the wheel holds exactly one timer per live
// node (every live node's is scheduled, no dead node's is), and
// no live node is overdue by more than one Resolution.
func checkInvariants[K comparable, V any](t testing.TB, c *Cache[K, V], limit int, quiet bool) {
	t.Helper()
	in := c.c
	total, limits := 0, int64(0)
	now := in.now()
	for i := range in.shards {
		limits += in.shardLimit(i)
		s := in.shards[i].Load()
		if s == nil {
			continue // not made yet: no entry ever reached it
		}
		s.mu.Lock()
		if s.limit != in.shardLimit(i) {
			t.Errorf("shard %d: limit %d, want %d", i, s.limit, in.shardLimit(i))
		}
		if s.closed {
			if s.tab.Len() != 0 || s.total() != 0 {
				t.Errorf("shard %d: closed but holds %d table entries, weight %d", i, s.tab.Len(), s.total())
			}
			s.mu.Unlock()
			continue
		}
		n := 0
		var weight int64
		// checkNode checks one live node, in queue q of a bounded shard.
		checkNode := func(e *node[K, V], q int) {
			n++
			h := in.hash(e.key())
			if e.queue() != q {
				t.Errorf("shard %d: node %v in queue %d records queue %d", i, e.key(), q, e.queue())
			}
			if w := s.weightOf(e); w < 1 || w > s.limit && s.limit > 0 {
				t.Errorf("shard %d: node %v weighs %d, want 1 to the shard's limit %d", i, e.key(), w, s.limit)
			}
			if got := s.tab.Get(e.key(), h); got != e {
				t.Errorf("shard %d: node %v: table holds %p, want %p", i, e.key(), got, e)
			}
			if r := e.reads(); r > maxReads || s.limit == 0 && r != 0 {
				t.Errorf("shard %d (limit %d): node %v counts %d reads, want at most %d, none unbounded", i, s.limit, e.key(), r, maxReads)
			}
			if got := in.shardAt(h); got != s {
				t.Errorf("node %v: in shard %d, but hashes elsewhere", e.key(), i)
			}
			if quiet && e.deadline() <= now-int64(in.res) {
				t.Errorf("shard %d: node %v: deadline %v, overdue at %v by more than resolution %v",
					i, e.key(), time.Duration(e.deadline()), time.Duration(now), in.res)
			}
		}
		if s.limit == 0 {
			// No queues: the table is the only index.
			s.tab.All(func(e *node[K, V]) bool { checkNode(e, window); return true })
			for q := range s.q {
				if s.held[q] != 0 || s.q[q].next != &s.q[q].node {
					t.Errorf("shard %d: unbounded, but queue %d holds weight %d", i, q, s.held[q])
				}
			}
		}
		for q := range s.q {
			if s.limit == 0 {
				break
			}
			prev := &s.q[q].node
			var held int64
			for e := s.q[q].next; e != &s.q[q].node; e = e.links().next {
				checkNode(e, q)
				held += s.weightOf(e)
				if e.links().prev != prev {
					t.Errorf("shard %d: node %v: prev link broken", i, e.key())
				}
				prev = e
				if n > s.tab.Len()+1 {
					t.Errorf("shard %d: queues longer than the table (%d)", i, s.tab.Len())
					break
				}
			}
			if s.q[q].prev != prev {
				t.Errorf("shard %d: queue %d: sentinel prev link broken", i, q)
			}
			if held != s.held[q] {
				t.Errorf("shard %d: queue %d holds weight %d, counted %d", i, q, held, s.held[q])
			}
			weight += held
		}
		if n != s.tab.Len() {
			t.Errorf("shard %d: queues hold %d nodes, table %d", i, n, s.tab.Len())
		}
		if s.limit > 0 && weight > s.limit {
			t.Errorf("shard %d: weight %d, limit %d", i, weight, s.limit)
		}
		inTable := 0
		s.tab.All(func(e *node[K, V]) bool {
			inTable++
			if !e.live() {
				t.Errorf("shard %d: table holds dead node %v", i, e.key())
			}
			return true
		})
		if inTable != n {
			t.Errorf("shard %d: table iterates %d nodes, queues hold %d", i, inTable, n)
		}
		if slots := s.tab.Slots(); slots > 8 && slots > 16*n {
			t.Errorf("shard %d: table of %d slots for %d entries, want at most 16 per entry", i, slots, n)
		}
		total += n
		s.mu.Unlock()
	}
	if limits != int64(limit) {
		t.Errorf("shard limits sum to %d, want %d", limits, limit)
	}
	if got := c.Len(); got != total {
		t.Errorf("Len() = %d, want %d (nodes in the shards)", got, total)
	}
	if limit > 0 && total > limit {
		t.Errorf("%d entries, want <= Limit %d", total, limit)
	}
	if quiet {
		if got := in.sched.Len(); got != total {
			t.Errorf("wheel holds %d timers, want %d (the live entries, no dead ones)", got, total)
		}
	}
}
