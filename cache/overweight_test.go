package cache

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The weight that lock-free readers can see never exceeds MaxWeight, at
// any instant (Options.MaxWeight): an overwrite with a heavier value makes
// room before readers can find the new value.

// TestHeavierOverwriteNeverShowsExcessWeight: while an overwrite with a
// heavier value makes room (here: at each entry the policy spares, with
// the shard lock held), a reader summing what Peek finds sees at most
// MaxWeight. The new node was published first and the others evicted
// after, so the reader saw the heavier value beside every entry it was
// about to displace: 109 of 100.
func TestHeavierOverwriteNeverShowsExcessWeight(t *testing.T) {
	const maxWeight = 100 // one shard
	c := newCache(t, Options[int, string]{TTL: time.Hour, MaxWeight: maxWeight, Weigher: weighLen})
	for k := range maxWeight {
		c.Set(k, "x") // weight 1 each: full
		c.Get(k)      // read: the scan spares it, and runs afterSpare
	}
	seen, looks := 0, 0
	afterSpare = func() {
		looks++
		sum := 0
		for k := range maxWeight {
			if v, ok := c.Peek(k); ok {
				sum += len(v)
			}
		}
		seen = max(seen, sum)
	}
	defer func() { afterSpare = nil }()
	c.Set(0, strings.Repeat("x", 10)) // 9 others must go
	if looks == 0 {
		t.Fatal("the overwrite spared no entry: nothing looked at the cache while it made room")
	}
	if seen > maxWeight {
		t.Errorf("while the overwrite made room, readers saw weight %d, want at most MaxWeight %d", seen, maxWeight)
	}
	if v, ok := c.Peek(0); !ok || len(v) != 10 {
		t.Errorf("Peek(0) = %q, %v after the overwrite, want its 10 bytes", v, ok)
	}
	checkInvariants(t, c, maxWeight, false)
}

// weighed is a value of TestWeightNeverExceededConcurrently: a unique
// version, so that a reader that finds the same one twice knows the entry
// held it in between, and a weight. A word value: an overwrite of the
// same weight goes in place, one of another weight through the lock.
type weighed struct{ version, weight uint32 }

// TestWeightNeverExceededConcurrently: writers overwrite a full cache with
// values of varying weights while a checker samples the weight that
// readers can see. A sample is two passes of Peek over every key: an
// entry found with the same version in both held it throughout, so at the
// instant between the passes every such entry was there at once, and
// their weights add up to at most what the cache held then, which must
// never exceed MaxWeight.
func TestWeightNeverExceededConcurrently(t *testing.T) {
	const (
		maxWeight = 64 // one shard
		keys      = 12
	)
	writes := 100_000 // about 0.2 s; without the fix, 30 runs of 30 failed
	if raceEnabled {
		writes = 20_000
	}
	c := newCache(t, Options[int, weighed]{TTL: time.Hour, MaxWeight: maxWeight,
		Weigher: func(_ int, v weighed) int { return int(v.weight) }})
	var version atomic.Uint32
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		x := xorshift(11)
		for range writes {
			k := int(x.next() % keys)
			c.Set(k, weighed{version.Add(1), uint32(1 + x.next()%40)})
			c.Get(int(x.next() % keys)) // reads make the policy spare entries: longer scans
		}
	})
	var first, second [keys]weighed
	var found [keys]bool
	samples, worst := 0, uint32(0)
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		for k := range keys {
			first[k], found[k] = c.Peek(k)
		}
		for k := range keys {
			second[k], _ = c.Peek(k)
		}
		var sum uint32
		for k := range keys {
			if found[k] && first[k] == second[k] {
				sum += first[k].weight
			}
		}
		samples++
		worst = max(worst, sum)
		if sum > maxWeight {
			t.Errorf("sample %d: readers saw weight %d at once (%v), want at most MaxWeight %d", samples, sum, first, maxWeight)
			break
		}
	}
	wg.Wait()
	t.Logf("%d samples, the heaviest %d of %d", samples, worst, maxWeight)
	checkInvariants(t, c, maxWeight, false)
}
