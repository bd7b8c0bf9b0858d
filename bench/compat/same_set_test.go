package compat

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	gz "github.com/zeromicro/go-zero/core/collection"

	"github.com/ttlkit/ttlkit/collection"
)

// setAPI is the method set go-zero's *Set[T] and ours share.
type setAPI[T comparable] interface {
	Add(items ...T)
	Remove(item T)
	Contains(item T) bool
	Keys() []T
	Count() int
	Clear()
}

// setImpls returns a new empty set of each implementation, by name.
func setImpls[T comparable]() map[string]setAPI[T] {
	return map[string]setAPI[T]{"gozero": gz.NewSet[T](), "ttlkit": collection.NewSet[T]()}
}

// describeSet is s's Count, sorted Keys and membership of probes.
func describeSet[T interface {
	comparable
	int | int64 | uint | uint64 | string
}](s setAPI[T], probes ...T) string {
	out := fmt.Sprintf("count=%d keys=%v", s.Count(), slices.Sorted(slices.Values(s.Keys())))
	for _, p := range probes {
		out += fmt.Sprintf(" has(%v)=%v", p, s.Contains(p))
	}
	return out
}

// sameSetScript runs go-zero's own Set scenarios (duplicates, removal,
// clearing, an empty set) for one element type on both implementations,
// and requires identical results and the expected one.
func sameSetScript[T interface {
	comparable
	int | int64 | uint | uint64 | string
}](t *testing.T, one, two, three, absent T) {
	t.Helper()
	got := map[string][]string{}
	for name, s := range setImpls[T]() {
		var trace []string
		trace = append(trace, describeSet(s, one))
		s.Add(one, two, three, two, one)
		trace = append(trace, describeSet(s, one, two, three, absent))
		s.Remove(two)
		s.Remove(absent)
		trace = append(trace, describeSet(s, one, two, three))
		s.Clear()
		trace = append(trace, describeSet(s, one))
		s.Add(three)
		trace = append(trace, describeSet(s, three))
		got[name] = trace
	}
	want := []string{
		fmt.Sprintf("count=0 keys=[] has(%v)=false", one),
		fmt.Sprintf("count=3 keys=%v has(%v)=true has(%v)=true has(%v)=true has(%v)=false", []T{one, two, three}, one, two, three, absent),
		fmt.Sprintf("count=2 keys=%v has(%v)=true has(%v)=false has(%v)=true", []T{one, three}, one, two, three),
		fmt.Sprintf("count=0 keys=[] has(%v)=false", one),
		fmt.Sprintf("count=1 keys=[%v] has(%v)=true", three, three),
	}
	for name, trace := range got {
		if !slices.Equal(trace, want) {
			t.Errorf("%s: got\n%q\nwant\n%q", name, trace, want)
		}
	}
}

// TestSame_SetTyped: go-zero's typed-set tests (int, int64, uint, uint64,
// string), rewritten as one script run on both.
func TestSame_SetTyped(t *testing.T) {
	sameSetScript[int](t, 1, 2, 3, 4)
	sameSetScript[int64](t, 1, 2, 3, 4)
	sameSetScript[uint](t, 1, 2, 3, 4)
	sameSetScript[uint64](t, 1, 2, 3, 4)
	sameSetScript[string](t, "a", "b", "c", "d")
}

// TestSame_SetRandom: random Adds, Removes and Clears of a few ints give
// the same contents in both after every step.
func TestSame_SetRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	g, o := gz.NewSet[int](), collection.NewSet[int]()
	for step := range 2000 {
		switch k := r.IntN(20); {
		case k < 10:
			items := []int{r.IntN(50), r.IntN(50)}
			g.Add(items...)
			o.Add(items...)
		case k < 19:
			v := r.IntN(50)
			g.Remove(v)
			o.Remove(v)
		default:
			g.Clear()
			o.Clear()
		}
		if dg, do := describeSet[int](g, step%50), describeSet[int](o, step%50); dg != do {
			t.Fatalf("step %d: go-zero %s, ours %s", step, dg, do)
		}
	}
}
