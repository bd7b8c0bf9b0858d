package safemap

import (
	"fmt"
	"sync/atomic"
	"testing"
)

var benchSizes = []int{1 << 10, 1 << 20}

func filled(b *testing.B, n int) *SafeMap[int, int] {
	b.Helper()
	m := New[int, int]()
	fill(m, n)
	return m
}

func BenchmarkSafeMapGet(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			m := filled(b, n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				m.Get(i & (n - 1))
				i++
			}
		})
	}
}

func BenchmarkSafeMapGetParallel(b *testing.B) {
	const n = 1 << 10
	m := filled(b, n)
	b.ReportAllocs()
	b.ResetTimer()
	var seed atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(7919))
		for pb.Next() {
			m.Get(i & (n - 1))
			i++
		}
	})
}

// BenchmarkSafeMapSet overwrites existing keys.
func BenchmarkSafeMapSet(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			m := filled(b, n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				m.Set(i&(n-1), i)
				i++
			}
		})
	}
}

// BenchmarkSafeMapDeleteSet deletes a key and sets it again: a steady live
// set under churn, which never migrates.
func BenchmarkSafeMapDeleteSet(b *testing.B) {
	const n = 1 << 10
	m := filled(b, n)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := i & (n - 1)
		m.Delete(k)
		m.Set(k, i)
		i++
	}
}

// BenchmarkSafeMapDelete empties maps of 64Ki entries one delete at a time
// (refilling them with the timer stopped), so its ns/op is the amortized
// cost of a delete including the migrations the shrink policy runs: four,
// at 16383, 4095, 1023 and 255 live entries.
func BenchmarkSafeMapDelete(b *testing.B) {
	const n = 1 << 16
	b.ReportAllocs()
	m := New[int, int]()
	k := 0
	for i := 0; i < b.N; i++ {
		if k == 0 {
			b.StopTimer()
			fill(m, n)
			k = n
			b.StartTimer()
		}
		k--
		m.Delete(k)
	}
}

// BenchmarkSafeMapRange reports the cost per entry passed to f.
func BenchmarkSafeMapRange(b *testing.B) {
	const n = 1 << 16
	m := filled(b, n)
	b.ReportAllocs()
	sum := 0
	for b.Loop() {
		m.Range(func(k, v int) bool {
			sum += v
			return true
		})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}
