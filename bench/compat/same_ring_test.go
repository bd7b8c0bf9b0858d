package compat

import (
	"slices"
	"sync"
	"testing"

	gz "github.com/zeromicro/go-zero/core/collection"

	"github.com/ttlkit/ttlkit/collection"
)

// ringAPI is the method set go-zero's *Ring and ours share.
type ringAPI interface {
	Add(v any)
	Take() []any
}

var ringImpls = []struct {
	name string
	new  func(n int) ringAPI
}{
	{"gozero", func(n int) ringAPI { return gz.NewRing(n) }},
	{"ttlkit", func(n int) ringAPI { return collection.NewRing(n) }},
}

// TestSame_RingSweep: for every size up to 7 and every number of Adds up
// to five rotations (past the point where go-zero folds its index back),
// Take returns the same slice in both, in the same order: the last
// min(adds, size) values, oldest first. go-zero's own tests compare the
// elements without their order.
func TestSame_RingSweep(t *testing.T) {
	for size := 1; size <= 7; size++ {
		rings := []ringAPI{ringImpls[0].new(size), ringImpls[1].new(size)}
		var added []any
		for i := range 5*size + 1 {
			want := added[len(added)-min(len(added), size):]
			for k, r := range rings {
				if got := r.Take(); !slices.Equal(got, want) {
					t.Fatalf("%s, size %d after %d Adds: Take = %v, want %v", ringImpls[k].name, size, i, got, want)
				}
			}
			for _, r := range rings {
				r.Add(i)
			}
			added = append(added, i)
		}
	}
}

// TestSame_RingConcurrentAdds: go-zero's concurrency test: 100 goroutines
// add 5050 values in all to a ring of 5051; Take returns all of them.
func TestSame_RingConcurrentAdds(t *testing.T) {
	for _, impl := range ringImpls {
		r := impl.new(5051)
		var wg sync.WaitGroup
		for i := 1; i <= 100; i++ {
			wg.Go(func() {
				for range i {
					r.Add(i)
				}
			})
		}
		wg.Wait()
		got := r.Take()
		if len(got) != 5050 {
			t.Errorf("%s: Take returned %d values, want 5050", impl.name, len(got))
		}
		count := map[any]int{}
		for _, v := range got {
			count[v]++
		}
		for i := 1; i <= 100; i++ {
			if count[i] != i {
				t.Errorf("%s: %d added %d times, Take has it %d times", impl.name, i, i, count[i])
			}
		}
	}
}

// TestSame_RingInvalidSizePanics: NewRing panics for n below one in both.
func TestSame_RingInvalidSizePanics(t *testing.T) {
	for _, impl := range ringImpls {
		for _, n := range []int{0, -1} {
			if !panics(func() { impl.new(n) }) {
				t.Errorf("%s: NewRing(%d) did not panic", impl.name, n)
			}
		}
	}
}
