package cache

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestVictimScanBoundedUnderRemarking: readers count reads without the
// shard lock while a writer looks for a victim, so readers reading entries
// again behind the scan kept it sparing them, without bound and with the
// shard lock held (808 entries spared with Limit 8 for one insertion, in
// the CLOCK policy before W-TinyLFU). One insertion spares at most as many
// entries as the shard holds, then evicts.
func TestVictimScanBoundedUnderRemarking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 8
		c := newCache(t, Options[int, int]{TTL: time.Minute, Limit: limit})
		for k := range limit {
			c.Set(k, k)
			c.Get(k)
		}
		s := c.c.shards[0].Load()
		spared := 0
		afterSpare = func() {
			spared++
			if spared > 1000 {
				return // give up, so that an unbounded scan ends
			}
			// A reader of every entry, between two steps of the scan.
			s.each(func(n *node[int, int]) { n.noteRead() })
		}
		defer func() { afterSpare = nil }()
		for k := limit; k < limit+20; k++ {
			spared = 0
			c.Set(k, k)
			if spared > limit {
				t.Fatalf("Set(%d): the victim scans spared %d entries, want at most %d (one per entry)", k, spared, limit)
			}
			if got := c.Len(); got != limit {
				t.Fatalf("Len() = %d, want %d", got, limit)
			}
			checkInvariants(t, c, limit, false)
		}
	})
}
