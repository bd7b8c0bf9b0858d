package timingwheel

import (
	"hash/maphash"
	"strconv"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/internal/table"
)

// BenchmarkMoveTimerCost splits MoveTimer (later deadline) at 1M pending
// string keys into its parts, to show where the time goes when every
// operation misses the cache:
//
//   - index: hash, lock-free lookup and compare-and-swap of want, which
//     is what MoveTimer does besides reading the clock;
//   - index+clock: the same with the caller's clock reading added;
//   - MoveTimer: the whole call.
//
// Keys are visited in a scattered order, as in bench/'s BenchmarkWheel.
// Run: go test -run '^$' -bench MoveTimerCost -benchtime 2000000x ./timingwheel
func BenchmarkMoveTimerCost(b *testing.B) {
	const n = 1 << 20
	tw, err := New(time.Second, 1024, func(string, int) {})
	if err != nil {
		b.Fatal(err)
	}
	defer tw.Stop()
	keys := benchKeys(n)
	for i, k := range keys {
		mustB(b, tw.SetTimer(k, i, time.Hour+time.Duration(i%1024)*time.Second))
	}
	// Visit the keys in an order unrelated to the order in which their
	// timers were allocated.
	order := make([]string, n)
	for i, p := 0, 0; i < n; i++ {
		order[i] = keys[p]
		p = (p + n*618/1000 | 1) & (n - 1) // an odd stride visits all n
	}
	keys = order
	k := tw.k
	// Deadlines only ever move later, across parts and repeated runs: seq
	// keeps growing.
	seq := 0
	farther := func() time.Duration { seq++; return 2*time.Hour + time.Duration(seq)*time.Millisecond }
	for _, part := range []string{"index", "index+clock"} {
		b.Run("part="+part, func(b *testing.B) {
			now := int64(time.Since(k.d.origin)) // the index part's one reading
			for i := range b.N {
				key := keys[i&(n-1)]
				var want int64
				if part == "index" {
					want = k.d.tickAfter(now, farther())
				} else {
					want = k.d.callerDeadline(farther())
				}
				h := maphash.Comparable(k.seed, key)
				sh := k.shards.get(table.Shard(h, k.shards.len()))
				if n := sh.tab.Get(key, h); n == nil || !later(n, want) {
					b.Fatal("later refused a later deadline")
				}
			}
		})
	}
	b.Run("part=MoveTimer", func(b *testing.B) {
		for i := range b.N {
			mustB(b, tw.MoveTimer(keys[i&(n-1)], farther()))
		}
	})
}

// benchKeys returns n distinct keys "key-<i>", substrings of one string.
func benchKeys(n int) []string {
	var buf []byte
	ends := make([]int, n)
	for i := range n {
		buf = append(buf, "key-"...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		ends[i] = len(buf)
	}
	all := string(buf)
	keys := make([]string, n)
	start := 0
	for i, end := range ends {
		keys[i] = all[start:end]
		start = end
	}
	return keys
}

func mustB(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
