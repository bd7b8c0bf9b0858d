package bench

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// Firing accuracy (issue 2): 100k timers due 0.5–1.5 s after they are set,
// on a 1 ms wheel. Lateness is measured from the moment just before the
// SetTimer call to the moment the callback starts, on the monotonic clock.
const (
	accTimers   = 100_000
	accInterval = time.Millisecond
	accSlots    = 2048 // one rotation (2.048 s) covers every delay
	accMinDelay = 500 * time.Millisecond
	accSpan     = time.Second
	accTimeout  = 10 * time.Second // generous: all timers are due by 1.5 s
)

type accuracy struct {
	early, dup     int
	p50, p99, maxL time.Duration
}

// accuracyResults keeps one measured round per implementation: a round takes
// 1.5 s of wall time, so later runs of the same sub-benchmark (larger b.N)
// report it again instead of repeating it.
var accuracyResults = map[string]accuracy{}

// BenchmarkFiringAccuracy reports, per implementation, how many of 100k timers
// fired early ("early", must be 0 for ttlkit), how many fired more than once
// ("dup"), and the p50, p99 and maximum lateness in milliseconds. It runs one
// round per process whatever -benchtime says and reports no ns/op.
func BenchmarkFiringAccuracy(b *testing.B) {
	for _, im := range impls {
		if !im.fires {
			continue
		}
		b.Run("impl="+im.name, func(b *testing.B) {
			r, ok := accuracyResults[im.name]
			if !ok {
				r = measureAccuracy(b, im)
				accuracyResults[im.name] = r
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(r.early), "early")
			b.ReportMetric(float64(r.dup), "dup")
			b.ReportMetric(ms(r.p50), "p50-late-ms")
			b.ReportMetric(ms(r.p99), "p99-late-ms")
			b.ReportMetric(ms(r.maxL), "max-late-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func measureAccuracy(b *testing.B, im impl) accuracy {
	b.Helper()
	keys := cachedKeys("acc-", accTimers)
	// Delays evenly spread over [0.5 s, 1.5 s), set in a fixed shuffled order.
	delays := make([]time.Duration, accTimers)
	for i, j := range rand.New(rand.NewPCG(2, 0)).Perm(accTimers) {
		delays[i] = accMinDelay + time.Duration(j)*accSpan/accTimers
	}
	due := make([]time.Duration, accTimers)   // since base
	fired := make([]time.Duration, accTimers) // since base, first firing
	hits := make([]atomic.Int32, accTimers)
	var remaining, dups atomic.Int64
	remaining.Store(accTimers)
	done := make(chan struct{})
	base := time.Now()

	w, err := im.new(accInterval, accSlots, func(_ string, i int) {
		now := time.Since(base)
		if hits[i].Add(1) != 1 {
			dups.Add(1)
			return
		}
		fired[i] = now
		if remaining.Add(-1) == 0 {
			close(done)
		}
	})
	if err != nil {
		b.Fatalf("new %s: %v", im.name, err)
	}
	defer w.Close()
	for i, k := range keys {
		due[i] = time.Since(base) + delays[i]
		if err := w.Set(k, i, delays[i]); err != nil {
			b.Fatalf("set %s: %v", im.name, err)
		}
	}
	select {
	case <-done:
	case <-time.After(accTimeout):
		b.Fatalf("%s: %d of %d timers had not fired after %v", im.name, remaining.Load(), accTimers, accTimeout)
	}

	// Every fired[i] was written before the remaining.Add that led to close(done).
	var r accuracy
	late := make([]time.Duration, accTimers)
	for i := range late {
		late[i] = fired[i] - due[i]
		if late[i] < 0 {
			r.early++
		}
	}
	slices.Sort(late)
	r.p50 = late[len(late)/2]
	r.p99 = late[len(late)*99/100]
	r.maxL = late[len(late)-1]
	r.dup = int(dups.Load())
	return r
}
