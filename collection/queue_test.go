package collection

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// checkQueue compares q with the model (its elements, oldest first) and
// checks the buffer's size bounds: never below the initial size, never
// more than four times what it holds once it has grown past that.
func checkQueue(t *testing.T, q *Queue, model []any, step string) {
	t.Helper()
	if q.count != len(model) {
		t.Fatalf("%s: count %d, want %d", step, q.count, len(model))
	}
	for i, want := range model {
		if got := q.buf[(q.head+i)%len(q.buf)]; got != want {
			t.Fatalf("%s: element %d = %v, want %v", step, i, got, want)
		}
	}
	for i := q.count; i < len(q.buf); i++ {
		if got := q.buf[(q.head+i)%len(q.buf)]; got != nil {
			t.Fatalf("%s: free slot %d holds %v, want nil (released)", step, i, got)
		}
	}
	if len(q.buf) < max(q.min, 1) && len(q.buf) < q.count {
		t.Fatalf("%s: buffer %d below its minimum %d", step, len(q.buf), q.min)
	}
	if len(q.buf) > max(q.min, 2) && len(q.buf) > 4*q.count+4 {
		t.Fatalf("%s: buffer %d for %d elements (minimum %d): did not shrink", step, len(q.buf), q.count, q.min)
	}
}

// TestQueueAgainstModel runs random Puts and Takes, in bursts, against a
// slice.
func TestQueueAgainstModel(t *testing.T) {
	for _, size := range []int{1, 2, 3, 8, 33} {
		r := rand.New(rand.NewPCG(uint64(size), 1))
		q := NewQueue(size)
		var model []any
		next := 0
		for round := range 80 {
			// Alternate growing and draining phases of random length.
			puts := r.IntN(3 * size * (round%5 + 1))
			for range puts {
				q.Put(next)
				model = append(model, next)
				next++
				checkQueue(t, q, model, "Put")
			}
			for range r.IntN(len(model) + 2) {
				v, ok := q.Take()
				if len(model) == 0 {
					if ok || v != nil {
						t.Fatalf("Take on empty = %v, %v; want nil, false", v, ok)
					}
					continue
				}
				if !ok || v != model[0] {
					t.Fatalf("Take = %v, %v; want %v, true", v, ok, model[0])
				}
				model = model[1:]
				checkQueue(t, q, model, "Take")
			}
			if q.Empty() != (len(model) == 0) {
				t.Fatalf("Empty = %v with %d elements", q.Empty(), len(model))
			}
		}
	}
}

// TestQueueShrinksAfterBurst: a burst of 2^18 elements, all taken again,
// leaves the buffer at its initial size.
func TestQueueShrinksAfterBurst(t *testing.T) {
	const burst = 1 << 18
	q := NewQueue(16)
	for i := range burst {
		q.Put(i)
	}
	if len(q.buf) < burst {
		t.Fatalf("buffer %d after %d Puts, want at least that", len(q.buf), burst)
	}
	for i := range burst {
		if v, ok := q.Take(); !ok || v != i {
			t.Fatalf("Take = %v, %v; want %d, true", v, ok, i)
		}
	}
	if len(q.buf) != 16 {
		t.Errorf("buffer %d after draining, want the initial 16", len(q.buf))
	}
}

func TestQueueZeroValue(t *testing.T) {
	var q Queue
	if !q.Empty() {
		t.Fatal("zero Queue not empty")
	}
	for i := range 10 {
		q.Put(i)
	}
	var got []any
	for v, ok := q.Take(); ok; v, ok = q.Take() {
		got = append(got, v)
	}
	if want := []any{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Errorf("zero Queue gave %v, want %v", got, want)
	}
}

func TestNewQueuePanicsBelowOne(t *testing.T) {
	for _, size := range []int{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewQueue(%d) did not panic", size)
				}
			}()
			NewQueue(size)
		}()
	}
}
