package compat

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	gz "github.com/zeromicro/go-zero/core/collection"

	"github.com/ttlkit/ttlkit/collection"
)

// queueAPI is the method set go-zero's *Queue and ours share.
type queueAPI interface {
	Put(element any)
	Take() (any, bool)
	Empty() bool
}

// queueImpls builds a Queue of each implementation with the given size.
var queueImpls = []struct {
	name string
	new  func(size int) queueAPI
	// slots returns the buffer behind q, to check what it still references.
	slots func(q queueAPI) []any
}{
	{"gozero", func(size int) queueAPI { return gz.NewQueue(size) }, func(q queueAPI) []any { return *field[[]any](q, "elements") }},
	{"ttlkit", func(size int) queueAPI { return collection.NewQueue(size) }, func(q queueAPI) []any { return *field[[]any](q, "buf") }},
}

// TestSame_QueueOrder: go-zero's order scenarios (within the first size,
// growing from an unwrapped and from a wrapped buffer, growing many times,
// growing past 256 and 1024 elements) give the same FIFO order in both.
// go-zero's version also checks the capacity it grew to, which is an
// implementation detail (and ours shrinks again after the Takes).
func TestSame_QueueOrder(t *testing.T) {
	seq := func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		return s
	}
	cases := []struct {
		name       string
		size       int
		initial    []int
		takeBefore int
		additional []int
	}{
		{"within the initial size", 8, []int{1, 2, 3}, 0, nil},
		{"grow from the start", 2, []int{1, 2, 3}, 0, nil},
		{"grow after wrapping", 4, []int{1, 2, 3, 4}, 1, []int{5, 6}},
		{"grow repeatedly", 1, seq(20), 0, nil},
		{"grow past 256", 256, seq(257), 0, nil},
		{"grow past 1024", 1024, seq(1025), 0, nil},
	}
	for _, impl := range queueImpls {
		for _, c := range cases {
			t.Run(impl.name+"/"+c.name, func(t *testing.T) {
				q := impl.new(c.size)
				if !q.Empty() {
					t.Fatal("new queue not empty")
				}
				for _, v := range c.initial {
					q.Put(v)
				}
				for i := range c.takeBefore {
					if v, ok := q.Take(); !ok || v != c.initial[i] {
						t.Fatalf("Take before adding more = %v, %v; want %d, true", v, ok, c.initial[i])
					}
				}
				for _, v := range c.additional {
					q.Put(v)
				}
				want := append(slices.Clone(c.initial[c.takeBefore:]), c.additional...)
				for _, w := range want {
					if v, ok := q.Take(); !ok || v != w {
						t.Fatalf("Take = %v, %v; want %d, true", v, ok, w)
					}
				}
				if !q.Empty() {
					t.Error("not empty after taking everything")
				}
				if v, ok := q.Take(); ok || v != nil {
					t.Errorf("Take on empty = %v, %v; want nil, false", v, ok)
				}
			})
		}
	}
}

// TestSame_QueueTakeReleasesElement: go-zero's check that Take drops the
// queue's reference to what it returns (from the start, after wrapping,
// after growing), run on both.
func TestSame_QueueTakeReleasesElement(t *testing.T) {
	for _, impl := range queueImpls {
		for _, ops := range []string{"ppt", "pptptt", "pppt", "pppppppptttttttt"} {
			t.Run(impl.name+"/"+ops, func(t *testing.T) {
				q := impl.new(2)
				n := 0
				for _, op := range ops {
					if op == 'p' {
						n++
						q.Put(&n)
						continue
					}
					if _, ok := q.Take(); !ok {
						t.Fatal("Take found nothing")
					}
				}
				held := 0
				for _, v := range impl.slots(q) {
					if v != nil {
						held++
					}
				}
				if want := strings.Count(ops, "p") - strings.Count(ops, "t"); held != want {
					t.Errorf("after %s the buffer references %d elements, want %d", ops, held, want)
				}
			})
		}
	}
}

// TestSame_QueueInvalidSizePanics: NewQueue panics for a size below one in
// both.
func TestSame_QueueInvalidSizePanics(t *testing.T) {
	for _, impl := range queueImpls {
		for _, size := range []int{0, -1} {
			if !panics(func() { impl.new(size) }) {
				t.Errorf("%s: NewQueue(%d) did not panic", impl.name, size)
			}
		}
	}
}

// TestSame_QueueRandom: random bursts of Puts and Takes give the same
// results in both.
func TestSame_QueueRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	g, o := queueImpls[0].new(3), queueImpls[1].new(3)
	next := 0
	for step := range 3000 {
		if r.IntN(2) == 0 {
			for range r.IntN(40) {
				g.Put(next)
				o.Put(next)
				next++
			}
			continue
		}
		for range r.IntN(40) {
			gv, gok := g.Take()
			ov, ook := o.Take()
			if gv != ov || gok != ook {
				t.Fatalf("step %d: Take: go-zero %v, %v; ours %v, %v", step, gv, gok, ov, ook)
			}
		}
		if g.Empty() != o.Empty() {
			t.Fatalf("step %d: Empty: go-zero %v, ours %v", step, g.Empty(), o.Empty())
		}
	}
}

// panics reports whether f panics.
func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}
