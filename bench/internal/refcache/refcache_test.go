package refcache

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// lruModel is a trivially correct LRU: a slice, most recent first.
type lruModel struct {
	cap  int
	keys []uint64
}

func (m *lruModel) get(k uint64) bool {
	i := slices.Index(m.keys, k)
	if i < 0 {
		return false
	}
	m.keys = slices.Insert(slices.Delete(m.keys, i, i+1), 0, k)
	return true
}

func (m *lruModel) set(k uint64) {
	if m.get(k) {
		return
	}
	if len(m.keys) >= m.cap {
		m.keys = m.keys[:len(m.keys)-1]
	}
	m.keys = slices.Insert(m.keys, 0, k)
}

func TestLRUMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, capacity := range []int{1, 2, 3, 7, 32} {
		l, m := NewLRU(capacity), &lruModel{cap: capacity}
		for i := range 20_000 {
			k := r.Uint64N(uint64(3 * capacity))
			got, want := l.Get(k), m.get(k)
			if got != want {
				t.Fatalf("cap %d, op %d: Get(%d) = %v, want %v", capacity, i, k, got, want)
			}
			if !got && r.IntN(4) != 0 { // sometimes a miss is not filled
				l.Set(k)
				m.set(k)
			}
			if l.Len() != len(m.keys) || l.Len() > capacity {
				t.Fatalf("cap %d, op %d: Len = %d, want %d", capacity, i, l.Len(), len(m.keys))
			}
		}
	}
}

// optimalHits is the most hits any policy with bypass can get on trace with
// capacity keys, found by trying every choice on every miss.
func optimalHits(trace []uint64, capacity int, held []uint64) int {
	if len(trace) == 0 {
		return 0
	}
	k, rest := trace[0], trace[1:]
	if slices.Contains(held, k) {
		return 1 + optimalHits(rest, capacity, held)
	}
	best := optimalHits(rest, capacity, held) // bypass
	if len(held) < capacity {
		return max(best, optimalHits(rest, capacity, append(slices.Clone(held), k)))
	}
	for i := range held {
		h := slices.Clone(held)
		h[i] = k
		best = max(best, optimalHits(rest, capacity, h))
	}
	return best
}

func replay(c interface {
	Get(uint64) bool
	Set(uint64)
	Len() int
}, trace []uint64, capacity int, t *testing.T) int {
	hits := 0
	for _, k := range trace {
		if c.Get(k) {
			hits++
		} else {
			c.Set(k)
		}
		if c.Len() > capacity {
			t.Fatalf("holds %d keys, capacity %d", c.Len(), capacity)
		}
	}
	return hits
}

func TestBeladyIsOptimal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 400 {
		n := 1 + r.IntN(12)
		keys := 1 + r.IntN(5)
		capacity := 1 + r.IntN(3)
		trace := make([]uint64, n)
		for i := range trace {
			trace[i] = r.Uint64N(uint64(keys))
		}
		got := replay(NewBelady(trace, capacity), trace, capacity, t)
		if want := optimalHits(trace, capacity, nil); got != want {
			t.Fatalf("round %d: trace %v, capacity %d: %d hits, want %d", round, trace, capacity, got, want)
		}
	}
}

func TestBeladyBeatsLRU(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	z := rand.NewZipf(r, 1.1, 1, 999)
	trace := make([]uint64, 50_000)
	for i := range trace {
		trace[i] = z.Uint64()
	}
	for _, capacity := range []int{10, 100} {
		opt := replay(NewBelady(trace, capacity), trace, capacity, t)
		lru := replay(NewLRU(capacity), trace, capacity, t)
		if opt <= lru {
			t.Errorf("capacity %d: Belady %d hits, LRU %d; want more", capacity, opt, lru)
		}
	}
	// A loop one longer than the cache: LRU never hits, the optimum keeps
	// capacity-1 of each pass's keys.
	var loop []uint64
	for range 10 {
		for k := range uint64(5) {
			loop = append(loop, k)
		}
	}
	if got := replay(NewLRU(4), loop, 4, t); got != 0 {
		t.Errorf("LRU on a loop of 5 with 4 slots: %d hits, want 0", got)
	}
	if got := replay(NewBelady(loop, 4), loop, 4, t); got < 30 {
		t.Errorf("Belady on a loop of 5 with 4 slots: %d hits, want at least 30", got)
	}
}

func TestBeladyPanicsOutOfOrder(t *testing.T) {
	b := NewBelady([]uint64{1, 2}, 1)
	defer func() {
		if recover() == nil {
			t.Error("Get of a key that is not the next access did not panic")
		}
	}()
	b.Get(2)
}
