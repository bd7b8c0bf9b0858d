package bench

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/bench/internal/harness"
)

// Wheel benchmark shape (issue 2, Performance). Every implementation gets the
// same wheel geometry, the same pre-built string keys and the same sequence
// of operations. Delays are an hour or more on a 1s × 1024 wheel, so nothing
// fires while measuring: the benchmarks cost bookkeeping only.
const (
	benchInterval = time.Second
	benchSlots    = 1024
	baseDelay     = time.Hour
	delaySpread   = 1024 // delays are spread over this many intervals
)

type size struct {
	name    string
	pending int
}

var sizes = []size{
	{"1k", 1_000},
	{"1M", 1_000_000},
}

// chunkFor is how many operations run between two untimed repairs that bring
// the population back to its nominal size: a quarter of it, at most 64Ki.
func chunkFor(pending int) int { return min(max(pending/4, 1), 1<<16) }

// makeKeys returns n distinct keys "<prefix><i>". They are substrings of one
// string, so building them makes two allocations and keeping them alive costs
// nothing per key beyond the slice header.
func makeKeys(prefix string, n int) []string {
	var buf []byte
	ends := make([]int, n)
	for i := range n {
		buf = append(buf, prefix...)
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

// keyCache shares the key slices between implementations, so that their
// memory is never part of any B/pending figure.
var keyCache = map[string][]string{}

func cachedKeys(prefix string, n int) []string {
	id := prefix + strconv.Itoa(n)
	if k, ok := keyCache[id]; ok {
		return k
	}
	k := makeKeys(prefix, n)
	keyCache[id] = k
	return k
}

// walk visits 0..n-1 in a scattered but deterministic order (stepping by a
// stride coprime with n), so that consecutive operations touch entries that
// were not allocated next to each other.
type walk struct {
	n, stride, pos int
	laps           int // completed visits of all n positions
	step           int // positions visited in the current lap
}

func newWalk(n int) walk {
	s := max(n*618/1000, 1) | 1
	for gcd(s, n) != 1 {
		s += 2
	}
	if s >= n {
		s = 1
	}
	return walk{n: n, stride: s}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// next returns the current position and advances.
func (w *walk) next() int {
	p := w.pos
	w.pos += w.stride
	if w.pos >= w.n {
		w.pos -= w.n
	}
	if w.step++; w.step == w.n {
		w.step = 0
		w.laps++
	}
	return p
}

// pendingDelay is the delay key i is first set with.
func pendingDelay(i int) time.Duration {
	return baseDelay + time.Duration(i%delaySpread)*benchInterval
}

// population is one implementation holding size.pending timers, reused by
// every run of one sub-benchmark (the testing package calls it with growing
// b.N) and torn down after it.
type population struct {
	w        wheel
	keys     []string // keys[i] is pending with value i
	fresh    []string // chunk keys that are never pending between chunks
	chunk    int
	bytesPer float64 // heap in use per pending timer after populating
	walk     walk
}

func newPopulation(b *testing.B, im impl, sz size) *population {
	b.Helper()
	keys := cachedKeys("key-", sz.pending)
	chunk := chunkFor(sz.pending)
	fresh := cachedKeys("new-", chunk)
	w, err := im.new(benchInterval, benchSlots, func(string, int) {})
	if err != nil {
		b.Fatalf("new %s: %v", im.name, err)
	}
	p := &population{w: w, keys: keys, fresh: fresh, chunk: chunk, walk: newWalk(sz.pending)}
	p.bytesPer = harness.HeapPerItem(sz.pending, func() {
		for i, k := range keys {
			if err := w.Set(k, i, pendingDelay(i)); err != nil {
				b.Fatalf("populate %s: %v", im.name, err)
			}
		}
		w.Sync()
	})
	return p
}

func (p *population) close() {
	p.w.Close()
	p.w = nil
}

// wheelOp runs b.N operations of one kind on a population.
type wheelOp struct {
	name string
	run  func(b *testing.B, p *population)
}

var wheelOps = []wheelOp{
	{"SetTimer", benchSetNew},
	{"MoveTimer", benchMoveLater},
	{"RemoveTimer", benchRemove},
}

// BenchmarkWheel compares the keyed timer implementations side by side:
// BenchmarkWheel/<op>/pending=<n>/impl=<name>. Besides ns/op and allocs/op it
// reports cpu-ns/op (process CPU, the owner goroutine's work included) and
// B/pending (heap in use per pending timer after populating).
func BenchmarkWheel(b *testing.B) {
	for _, op := range wheelOps {
		b.Run(op.name, func(b *testing.B) {
			for _, sz := range sizes {
				for _, im := range impls {
					var p *population
					b.Run(fmt.Sprintf("pending=%s/impl=%s", sz.name, im.name), func(b *testing.B) {
						if p == nil {
							p = newPopulation(b, im, sz)
						}
						b.ReportAllocs()
						op.run(b, p)
						harness.ReportHeapPerItem(b, p.bytesPer)
					})
					if p != nil {
						p.close()
						p = nil
						runtime.GC()
					}
				}
				// Do not make the smaller sizes' collections scan this
				// size's keys.
				clear(keyCache)
			}
		})
	}
}

// benchSetNew: SetTimer for keys that are not pending. After each chunk the
// new keys are removed, untimed, so the population stays between n and
// n+chunk.
func benchSetNew(b *testing.B, p *population) {
	w := p.w
	inChunk := 0
	m := harness.Start(b, w.Sync)
	for i := 0; i < b.N; i++ {
		if err := w.Set(p.fresh[inChunk], i, pendingDelay(inChunk)); err != nil {
			b.Fatal(err)
		}
		if inChunk++; inChunk == p.chunk || i == b.N-1 {
			m.Pause()
			for _, k := range p.fresh[:inChunk] {
				if err := w.Remove(k); err != nil {
					b.Fatal(err)
				}
			}
			w.Sync()
			inChunk = 0
			m.Resume()
		}
	}
	m.Stop()
}

// benchMoveLater: MoveTimer of a pending key to a deadline one interval
// later than the last one it was given. No repair is needed.
func benchMoveLater(b *testing.B, p *population) {
	w := p.w
	m := harness.Start(b, w.Sync)
	for range b.N {
		laps := p.walk.laps
		i := p.walk.next()
		if err := w.Move(p.keys[i], pendingDelay(i)+time.Duration(laps+1)*benchInterval); err != nil {
			b.Fatal(err)
		}
	}
	m.Stop()
}

// benchRemove: RemoveTimer of a pending key. After each chunk the removed
// keys are set again, untimed, so the population stays between n-chunk and n.
func benchRemove(b *testing.B, p *population) {
	w := p.w
	removed := make([]int, 0, p.chunk)
	m := harness.Start(b, w.Sync)
	for i := 0; i < b.N; i++ {
		k := p.walk.next()
		if err := w.Remove(p.keys[k]); err != nil {
			b.Fatal(err)
		}
		removed = append(removed, k)
		if len(removed) == p.chunk || i == b.N-1 {
			m.Pause()
			for _, k := range removed {
				if err := w.Set(p.keys[k], k, pendingDelay(k)); err != nil {
					b.Fatal(err)
				}
			}
			w.Sync()
			removed = removed[:0]
			// The repair allocates a chunk of entries: at large chunks,
			// collect here, or a timed chunk (which allocates nothing in
			// the best implementations) pays for a collection the repair
			// caused. Small chunks make too little garbage to matter, and a
			// full collection per 250 operations would dominate the run.
			if p.chunk >= 1<<14 {
				runtime.GC()
			}
			m.Resume()
		}
	}
	m.Stop()
}
