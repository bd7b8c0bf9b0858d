package collection

// Set is go-zero's collection.Set: an unordered set of comparable values.
// The zero value is an empty set ready to use (go-zero's panics on its first
// Add; use NewSet there). A Set is not safe for concurrent use: guard it
// with a lock when several goroutines use it.
//
// T behaves as a map key does: if T is an interface type, adding or looking
// up a value whose dynamic type is not comparable (a slice, a map, a func)
// panics, and values of different dynamic types are different elements
// (int(1) and int64(1) are two).
type Set[T comparable] struct {
	m map[T]struct{}
}

// NewSet returns an empty Set.
func NewSet[T comparable]() *Set[T] { return &Set[T]{m: make(map[T]struct{})} }

// Add adds each of items to s; an item already present is left as it is.
// Amortized O(1) per item.
func (s *Set[T]) Add(items ...T) {
	if s.m == nil {
		s.m = make(map[T]struct{}, len(items))
	}
	for _, item := range items {
		s.m[item] = struct{}{}
	}
}

// Clear removes every element. The set keeps its allocated memory, as the
// built-in clear does, ready to be filled again.
func (s *Set[T]) Clear() { clear(s.m) }

// Contains reports whether item is in s. O(1).
func (s *Set[T]) Contains(item T) bool {
	_, ok := s.m[item]
	return ok
}

// Count returns the number of elements.
func (s *Set[T]) Count() int { return len(s.m) }

// Keys returns the elements in a new slice, in no particular order (it
// differs from call to call). O(Count).
func (s *Set[T]) Keys() []T {
	keys := make([]T, 0, len(s.m))
	for k := range s.m {
		keys = append(keys, k)
	}
	return keys
}

// Remove removes item from s; it does nothing if item is absent. O(1).
func (s *Set[T]) Remove(item T) { delete(s.m, item) }
