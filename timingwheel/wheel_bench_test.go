package timingwheel

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkWheelAdvanceEveryTick measures the pure core's cost per tick on
// a 1 ms × 4096 wheel where one timer fires and re-arms on every tick, with
// and without 100k far timers waiting (2^32 ticks and more ahead, 50 days at 1 ms):
// finding the next slot must not scan every slot, and the far timers must
// cost nothing while they wait.
//
//	go test -run '^$' -bench BenchmarkWheelAdvanceEveryTick ./timingwheel/
func BenchmarkWheelAdvanceEveryTick(b *testing.B) {
	for _, far := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("far=%d", far), func(b *testing.B) {
			w := newWheel[int](4096)
			r := rand.New(rand.NewPCG(1, 2))
			timers := make([]Timer[int], far+1)
			for i := range far {
				w.schedule(&timers[i], 1<<32+r.Int64N(1<<30))
			}
			w.schedule(&timers[far], 1)
			fire := func(t *Timer[int]) int64 { return w.scanAt + 1 }
			now := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				now++
				w.advance(now, 1<<30, fire)
			}
		})
	}
}
