package safemap

import (
	"iter"
	"reflect"
)

// rangeBatch is the most entries Range reads per acquisition of the read
// lock.
const rangeBatch = 64

type entry[K comparable, V any] struct {
	key   K
	value V
}

// rangeState is what one Range call allocates: one object for the iterator,
// the reflect targets and the batch buffer.
type rangeState[K comparable, V any] struct {
	it     reflect.MapIter
	k      K
	v      V
	kv, vv reflect.Value
	batch  [rangeBatch]entry[K, V]
}

// Range calls f for each entry until f returns false, without holding any
// lock while f runs; f may call any method of m. Entries are read in
// batches of up to 64 under the read lock. Which entries f sees when the map
// changes during the call is specified in the package documentation
// (section Iteration): every key present throughout is seen exactly once; a
// key may be seen with a value that a later Set or Delete has since replaced
// or removed, if that happened after its batch was read.
//
// While any Range runs, migrations pause. A Range of an empty map returns
// at once without allocating; otherwise Range allocates once. A full Range
// is O(Len + capacity of the tables).
func (m *SafeMap[K, V]) Range(f func(key K, value V) bool) {
	m.mu.RLock()
	if m.lenLocked() == 0 {
		m.mu.RUnlock()
		return
	}
	// Taken under mu so that no migration step runs between reading the
	// tables below and the writers seeing that a Range is in progress.
	m.ranges.Add(1)
	defer m.ranges.Add(-1)
	gen := m.gen
	tables := [2]map[K]V{m.old, m.cur}
	m.mu.RUnlock()

	s := new(rangeState[K, V])
	s.kv = reflect.ValueOf(&s.k).Elem()
	s.vv = reflect.ValueOf(&s.v).Elem()
	for _, t := range tables {
		if t == nil {
			continue
		}
		s.it.Reset(reflect.ValueOf(t))
		for more := true; more; {
			var n int
			n, more = m.readBatch(s, gen)
			for i := range n {
				e := &s.batch[i]
				if !f(e.key, e.value) {
					return
				}
				*e = entry[K, V]{} // do not pin what f may delete
			}
		}
	}
}

// readBatch fills s.batch from s.it under the read lock. It returns how
// many entries it read and whether the iterator may have more. It reads
// nothing once the map has been cleared since the Range started.
func (m *SafeMap[K, V]) readBatch(s *rangeState[K, V], gen uint64) (n int, more bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.gen != gen {
		return 0, false
	}
	for n < rangeBatch {
		if !s.it.Next() {
			return n, false
		}
		s.kv.SetIterKey(&s.it)
		s.vv.SetIterValue(&s.it)
		s.batch[n] = entry[K, V]{s.k, s.v}
		n++
	}
	return n, true
}

// All returns an iterator over the entries of m, for use with a for-range
// loop. It is [SafeMap.Range] in iterator form, with the same guarantees:
// no lock is held while the loop body runs, and the body may modify m.
func (m *SafeMap[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		m.Range(yield)
	}
}
