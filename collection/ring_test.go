package collection

import (
	"slices"
	"testing"
)

// TestRingAgainstModel: for every size up to 6 and every number of Adds up
// to four rotations, Take returns the last min(adds, size) values, oldest
// first, and returns them again on a second Take.
func TestRingAgainstModel(t *testing.T) {
	for size := 1; size <= 6; size++ {
		r := NewRing(size)
		var added []any
		for i := range 4*size + 1 {
			want := added[len(added)-min(len(added), size):]
			if got := r.Take(); !slices.Equal(got, want) {
				t.Fatalf("size %d after %d Adds: Take = %v, want %v", size, i, got, want)
			}
			if got := r.Take(); !slices.Equal(got, want) {
				t.Fatalf("size %d after %d Adds: second Take = %v, want %v", size, i, got, want)
			}
			r.Add(i)
			added = append(added, i)
		}
	}
}

func TestRingTakeReturnsACopy(t *testing.T) {
	r := NewRing(2)
	r.Add("a")
	got := r.Take()
	got[0] = "changed"
	if again := r.Take(); again[0] != "a" {
		t.Errorf("Take after changing its result = %v, want [a]", again)
	}
}

func TestNewRingPanicsBelowOne(t *testing.T) {
	for _, n := range []int{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewRing(%d) did not panic", n)
				}
			}()
			NewRing(n)
		}()
	}
}
