// Package refcache holds the two reference points of the hit-ratio
// benchmarks: an exact LRU (what every recency-only policy approximates)
// and Belady's optimum (the most hits any policy can get on a trace, given
// the future). Neither is safe for concurrent use; both take uint64 keys and
// hold no values.
package refcache

import (
	"container/heap"
	"fmt"
)

// LRU is an exact least-recently-used set of at most Cap keys: a hit moves
// the key to the front, an insertion into a full LRU drops the key at the
// back. Get and Set are O(1).
type LRU struct {
	cap   int
	index map[uint64]int32 // key -> node
	nodes []lruNode        // nodes[0] is the sentinel; free nodes are never left
	free  []int32
}

type lruNode struct {
	key        uint64
	prev, next int32
}

// NewLRU returns an empty LRU holding at most capacity keys (capacity ≥ 1).
func NewLRU(capacity int) *LRU {
	if capacity < 1 {
		panic(fmt.Sprintf("refcache: capacity %d, want at least 1", capacity))
	}
	l := &LRU{cap: capacity, index: make(map[uint64]int32, capacity), nodes: make([]lruNode, 1, capacity+1)}
	return l
}

// Get reports whether k is held, and makes it the most recent if so.
func (l *LRU) Get(k uint64) bool {
	i, ok := l.index[k]
	if ok {
		l.unlink(i)
		l.pushFront(i)
	}
	return ok
}

// Set inserts k as the most recent key (or refreshes it if held), dropping
// the least recent key when the LRU is full.
func (l *LRU) Set(k uint64) {
	if l.Get(k) {
		return
	}
	var i int32
	if len(l.index) >= l.cap {
		i = l.nodes[0].prev // the back
		l.unlink(i)
		delete(l.index, l.nodes[i].key)
	} else {
		i = int32(len(l.nodes))
		l.nodes = append(l.nodes, lruNode{})
	}
	l.nodes[i].key = k
	l.index[k] = i
	l.pushFront(i)
}

// Len returns the number of keys held.
func (l *LRU) Len() int { return len(l.index) }

func (l *LRU) unlink(i int32) {
	n := &l.nodes[i]
	l.nodes[n.prev].next = n.next
	l.nodes[n.next].prev = n.prev
}

func (l *LRU) pushFront(i int32) {
	head := &l.nodes[0]
	l.nodes[i].prev, l.nodes[i].next = 0, head.next
	l.nodes[head.next].prev = i
	head.next = i
}

// Belady replays one known trace with Belady's optimal policy with bypass:
// on a miss in a full cache it drops, among the held keys and the missing
// one, the key whose next access is furthest in the future (or never
// comes), which may be the missing key itself (it is then not inserted).
// No policy that sees the same accesses gets more hits.
//
// It is driven like a read-through cache: for each access of the trace, in
// order, Get(key), and Set(key) after a miss. Get panics if the key is not
// the trace's next access.
type Belady struct {
	cap   int
	trace []uint64
	next  []int32 // next[i]: position of the next access of trace[i], or never(i)
	pos   int     // accesses replayed so far
	held  map[uint64]int32
	h     maxHeap // next uses of held keys; stale values are dropped lazily
}

// NewBelady prepares the optimal replay of trace with capacity keys
// (capacity ≥ 1). It is O(n) in time and memory.
func NewBelady(trace []uint64, capacity int) *Belady {
	if capacity < 1 {
		panic(fmt.Sprintf("refcache: capacity %d, want at least 1", capacity))
	}
	n := len(trace)
	next := make([]int32, n)
	last := make(map[uint64]int32)
	for i := n - 1; i >= 0; i-- {
		if j, ok := last[trace[i]]; ok {
			next[i] = j
		} else {
			next[i] = int32(n + i) // never: beyond every real position, still unique
		}
		last[trace[i]] = int32(i)
	}
	return &Belady{cap: capacity, trace: trace, next: next, held: make(map[uint64]int32, capacity)}
}

// keyOf returns the key whose next use is v.
func (b *Belady) keyOf(v int32) uint64 {
	if int(v) >= len(b.trace) {
		return b.trace[int(v)-len(b.trace)]
	}
	return b.trace[v]
}

// Get replays the next access, which must be k, and reports a hit.
func (b *Belady) Get(k uint64) bool {
	if b.pos >= len(b.trace) || b.trace[b.pos] != k {
		panic(fmt.Sprintf("refcache: Belady.Get(%d) is not access %d of its trace", k, b.pos))
	}
	nx := b.next[b.pos]
	b.pos++
	if _, ok := b.held[k]; !ok {
		return false
	}
	b.held[k] = nx
	heap.Push(&b.h, nx)
	return true
}

// Set admits the key just missed by Get, if the optimum keeps it.
func (b *Belady) Set(k uint64) {
	if b.pos == 0 || b.trace[b.pos-1] != k {
		panic(fmt.Sprintf("refcache: Belady.Set(%d) does not follow a Get of it", k))
	}
	if _, ok := b.held[k]; ok {
		return
	}
	nx := b.next[b.pos-1]
	if len(b.held) >= b.cap {
		for {
			top := b.h[0]
			if v, ok := b.held[b.keyOf(top)]; ok && v == top {
				break
			}
			heap.Pop(&b.h) // stale: the key was used again or dropped
		}
		if nx > b.h[0] {
			return // bypass: the missing key is needed last
		}
		delete(b.held, b.keyOf(heap.Pop(&b.h).(int32)))
	}
	b.held[k] = nx
	heap.Push(&b.h, nx)
}

// Len returns the number of keys held.
func (b *Belady) Len() int { return len(b.held) }

type maxHeap []int32

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(int32)) }
func (h *maxHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}
