package collection

import (
	"slices"
	"testing"
)

func TestSetOperations(t *testing.T) {
	s := NewSet[string]()
	s.Add("a", "b", "a")
	s.Add()
	s.Remove("c") // absent: nothing happens
	if got := slices.Sorted(slices.Values(s.Keys())); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Keys = %v, want [a b]", got)
	}
	if s.Count() != 2 || !s.Contains("a") || s.Contains("c") {
		t.Errorf("Count %d, Contains(a) %v, Contains(c) %v; want 2, true, false", s.Count(), s.Contains("a"), s.Contains("c"))
	}
	s.Remove("a")
	if s.Contains("a") || s.Count() != 1 {
		t.Errorf("after Remove(a): Contains %v, Count %d; want false, 1", s.Contains("a"), s.Count())
	}
	s.Clear()
	if s.Count() != 0 || len(s.Keys()) != 0 {
		t.Errorf("after Clear: Count %d, Keys %v; want 0, []", s.Count(), s.Keys())
	}
	s.Add("d")
	if !s.Contains("d") {
		t.Error("Add after Clear: not contained")
	}
}

// TestSetZeroValue: every method works on the zero Set, before and after
// the first Add.
func TestSetZeroValue(t *testing.T) {
	var s Set[int]
	if s.Contains(1) || s.Count() != 0 || len(s.Keys()) != 0 {
		t.Error("zero Set not empty")
	}
	s.Remove(1)
	s.Clear()
	s.Add(1, 2)
	if !s.Contains(2) || s.Count() != 2 {
		t.Errorf("zero Set after Add(1, 2): Contains(2) %v, Count %d; want true, 2", s.Contains(2), s.Count())
	}
}

// TestSetOfInterfacesKeepsDynamicTypes: with T = any, values of different
// dynamic types are different elements, as map keys are.
func TestSetOfInterfacesKeepsDynamicTypes(t *testing.T) {
	s := NewSet[any]()
	s.Add(1, int64(1), "1", 1)
	if s.Count() != 3 || !s.Contains(int64(1)) || s.Contains(int32(1)) {
		t.Errorf("Count %d, Contains(int64 1) %v, Contains(int32 1) %v; want 3, true, false",
			s.Count(), s.Contains(int64(1)), s.Contains(int32(1)))
	}
}
