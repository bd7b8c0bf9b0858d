package bench

import (
	"slices"
	"strings"
	"testing"
)

func TestHitCells(t *testing.T) {
	tests := []struct {
		name     string
		distinct int
		want     []int
	}{
		{"oltp", 186_880, []int{186, 1_868, 9_344, 18_688, 46_720}},
		{"loop: 0.1% and 1% are both the minimum", 1_011, []int{16, 50, 101, 252}},
		{"web12", 13_756, []int{16, 137, 687, 1_375, 3_439}},
		{"tiny: one cell", 20, []int{16}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, c := range hitCells("t", tc.distinct) {
				got = append(got, c.cap)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("capacities %v, want %v", got, tc.want)
			}
		})
	}
}

// TestHitAdapters replays a small Zipf trace through every hit-ratio
// adapter: the capacity holds after every Set (within its slack, if it
// has one), there are hits, never more than the optimum,
// and nothing is left open.
func TestHitAdapters(t *testing.T) {
	const capacity = 64
	trace := makeTrace("zipf", 1_000, 20_000, 9)
	opt, err := replayHits(newBeladyHit(capacity, trace), trace, 0, capacity, 0)
	if err != nil {
		t.Fatal(err)
	}
	lruRun, err := replayHits(newExactLRUHit(capacity, trace), trace, 0, capacity, 0)
	if err != nil {
		t.Fatal(err)
	}
	if lruRun.hits >= opt.hits {
		t.Fatalf("exact LRU %d hits, Belady %d: want fewer", lruRun.hits, opt.hits)
	}
	for _, im := range hitImpls {
		t.Run(im.name, func(t *testing.T) {
			c := im.new(capacity, trace)
			r, err := replayHits(c, trace, 0, capacity, im.slack)
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			// Every policy here keeps the hottest keys of a Zipf trace for
			// at least half of what LRU gets.
			if r.hits < lruRun.hits/2 || r.hits > opt.hits {
				t.Errorf("%d hits; want between half of LRU's %d and Belady's %d", r.hits, lruRun.hits, opt.hits)
			}
			if r.maxHeld < capacity/2 {
				t.Errorf("held at most %d entries, capacity %d", r.maxHeld, capacity)
			}
		})
	}
}

// overfullCache never evicts: the replay must catch it.
type overfullCache struct{ m map[uint64]bool }

func (c overfullCache) Get(k uint64) bool { return c.m[k] }
func (c overfullCache) Set(k uint64)      { c.m[k] = true }
func (c overfullCache) Len() int          { return len(c.m) }
func (c overfullCache) Close()            {}

func TestReplayCatchesOverfullCache(t *testing.T) {
	trace := []uint64{1, 2, 3, 1, 4, 5}
	_, err := replayHits(overfullCache{map[uint64]bool{}}, trace, 0, 3, 0)
	if err == nil || !strings.Contains(err.Error(), "holds 4 entries, capacity 3") {
		t.Errorf("err = %v, want one saying it holds 4 entries", err)
	}
	_, err = replayHits(overfullCache{map[uint64]bool{}}, trace, 0, 3, 1)
	if err == nil || !strings.Contains(err.Error(), "holds 5 entries, capacity 3 (+1 allowed)") {
		t.Errorf("slack 1: err = %v, want one saying it holds 5 entries", err)
	}
	r, err := replayHits(overfullCache{map[uint64]bool{}}, trace, 0, 3, 2)
	if err != nil || r.overCap != 2 || r.maxHeld != 5 || r.hits != 1 {
		t.Errorf("slack 2: %+v, %v; want overCap 2, maxHeld 5, hits 1", r, err)
	}
}

func TestReplayCountsFromWarmup(t *testing.T) {
	trace := []uint64{1, 1, 1, 2, 2}
	r, err := replayHits(newExactLRUHit(4, trace), trace, 2, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.hits != 2 || r.counted != 3 || r.ratio() != 100*2.0/3 {
		t.Errorf("hits %d of %d counted, want 2 of 3", r.hits, r.counted)
	}
}
