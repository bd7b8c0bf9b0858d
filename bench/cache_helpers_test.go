package bench

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// Key traces: pre-generated, pointer-free, shared by every implementation of
// one benchmark, so that generating keys is never timed and every
// implementation sees the same sequence.

// zipfS is the Zipf exponent of the skewed traces (math/rand/v2 needs s > 1).
const zipfS = 1.01

// makeTrace returns n keys in [0, keys) drawn from dist ("zipf" or
// "uniform") by a PCG generator seeded with seed. Zipf rank r is key r, so
// key 0 is the most frequent.
func makeTrace(dist string, keys, n int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 0x7ac3))
	out := make([]uint64, n)
	switch dist {
	case "zipf":
		z := rand.NewZipf(r, zipfS, 1, uint64(keys-1))
		for i := range out {
			out[i] = z.Uint64()
		}
	case "uniform":
		for i := range out {
			out[i] = r.Uint64N(uint64(keys))
		}
	default:
		panic("bench: unknown distribution " + dist)
	}
	return out
}

// traceCache shares traces between implementations and benchmarks.
var traceCache = map[string][]uint64{}

func cachedTrace(dist string, keys, n int, seed uint64) []uint64 {
	id := fmt.Sprint(dist, keys, n, seed)
	if t, ok := traceCache[id]; ok {
		return t
	}
	t := makeTrace(dist, keys, n, seed)
	traceCache[id] = t
	return t
}

// latencyHist is a log-linear histogram of durations: exact below 64 ns,
// then 32 buckets per power of two, so a quantile it reports is at most
// 1/32 (3.1%) above the true one. Recording does not allocate. The zero
// value is empty and ready to use; it is not safe for concurrent use.
type latencyHist struct {
	counts [64 * histSub]uint64
	n      uint64
	max    time.Duration
}

const histSub = 32

func histIndex(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(v) - 6 // v>>shift is in [32, 64)
	return (shift+1)*histSub + int(v>>shift) - histSub
}

// histUpper is the largest value bucket i holds.
func histUpper(i int) uint64 {
	if i < 2*histSub {
		return uint64(i)
	}
	shift := i/histSub - 1
	lo := uint64(i%histSub+histSub) << shift
	return lo + 1<<shift - 1
}

func (h *latencyHist) record(d time.Duration) {
	h.counts[histIndex(uint64(max(d, 0)))]++
	h.n++
	h.max = max(h.max, d)
}

func (h *latencyHist) merge(o *latencyHist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the upper bound of the bucket holding the q-quantile
// (the value at rank ceil(q*n)), never more than the maximum recorded; 0
// for an empty histogram.
func (h *latencyHist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n))
	if float64(rank) < q*float64(h.n) {
		rank++
	}
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			return min(time.Duration(histUpper(i)), h.max)
		}
	}
	return h.max
}

// heapInuseNow collects garbage once and returns HeapInuse.
func heapInuseNow() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// oneShot keeps the metrics of benchmarks that measure one long round
// (expiry, memory): the testing package calls a sub-benchmark again with a
// larger b.N when the first call was shorter than -benchtime, and those
// calls report the first call's figures instead of repeating the round.
// Every -count repetition starts with b.N = 1 and measures anew.
var oneShot = map[string]map[string]float64{}

// reportOneShot runs measure when b.N is 1 (the first call of each
// repetition) and reports its metrics, with ns/op 0: these benchmarks time
// nothing per operation.
func reportOneShot(b *testing.B, measure func() map[string]float64) {
	m, ok := oneShot[b.Name()]
	if !ok || b.N == 1 {
		m = measure()
		oneShot[b.Name()] = m
	}
	b.ReportMetric(0, "ns/op")
	for unit, v := range m {
		b.ReportMetric(v, unit)
	}
}

func toMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func toUS(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
