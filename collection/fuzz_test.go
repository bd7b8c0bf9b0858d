package collection

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// FuzzQueue drives a Queue with the operations encoded in ops (each byte:
// a Put, or a Take when its low bit is set) and checks it against a slice
// after every operation.
func FuzzQueue(f *testing.F) {
	f.Add(uint8(1), []byte{0, 0, 1, 0, 1, 1, 1})
	f.Add(uint8(3), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0})
	f.Fuzz(func(t *testing.T, size uint8, ops []byte) {
		q := NewQueue(int(size%16) + 1)
		var model []any
		for i, op := range ops {
			if op&1 == 0 {
				q.Put(i)
				model = append(model, i)
			} else if v, ok := q.Take(); len(model) == 0 {
				if ok || v != nil {
					t.Fatalf("op %d: Take on empty = %v, %v", i, v, ok)
				}
			} else {
				if !ok || v != model[0] {
					t.Fatalf("op %d: Take = %v, %v; want %v, true", i, v, ok, model[0])
				}
				model = model[1:]
			}
			checkQueue(t, q, model, fmt.Sprintf("op %d", i))
		}
	})
}

// FuzzRollingWindow drives a RollingWindow in a synctest bubble with the
// operations encoded in ops (each byte: an Add of its value, a pause of
// part of an interval, or a pause of several) and checks every Reduce
// against windowModel.
func FuzzRollingWindow(f *testing.F) {
	f.Add(uint8(3), false, []byte{10, 200, 11, 250, 12, 130, 13})
	f.Add(uint8(2), true, []byte{1, 129, 2, 255, 3})
	f.Fuzz(func(t *testing.T, size uint8, ignore bool, ops []byte) {
		synctest.Test(t, func(t *testing.T) {
			const interval = 8 * time.Millisecond
			n := int(size%6) + 1
			var opts []RollingWindowOption[int, *Bucket[int]]
			if ignore {
				opts = append(opts, IgnoreCurrentBucket[int, *Bucket[int]]())
			}
			start := time.Now()
			rw := NewRollingWindow(func() *Bucket[int] { return new(Bucket[int]) }, n, interval, opts...)
			m := &windowModel{size: int64(n), interval: interval, ignoreCurrent: ignore, adds: map[int64][]int{}}
			for i, op := range ops {
				switch {
				case op < 128:
					now := int64(time.Since(start) / interval)
					rw.Add(int(op))
					m.adds[now] = append(m.adds[now], int(op))
					m.last = now
				case op < 192:
					time.Sleep(time.Duration(op-127) * interval / 64)
				default:
					time.Sleep(time.Duration(op-191) * interval / 4)
				}
				now := int64(time.Since(start) / interval)
				var got []string
				rw.Reduce(func(b *Bucket[int]) { got = append(got, fmt.Sprintf("%d/%d", b.Sum, b.Count)) })
				if want := m.reduce(now); !slices.Equal(got, want) {
					t.Fatalf("op %d, interval %d: Reduce passed %v, want %v", i, now, got, want)
				}
			}
		})
	})
}
