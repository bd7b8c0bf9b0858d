package safemap

import (
	"sync"
	"sync/atomic"
)

// SafeMap is a map from K to V that is safe for concurrent use and returns
// memory to the garbage collector as it shrinks (see the package
// documentation for the policy). The zero value is an empty map ready to
// use. A SafeMap must not be copied after first use.
type SafeMap[K comparable, V any] struct {
	mu sync.RWMutex

	// The fields below are guarded by mu.

	// cur receives every key not already in old. It is nil until the first
	// Set, and after Clear or after the live set fell to zero.
	cur map[K]V
	// old is the table being emptied into cur; nil when no migration runs.
	// A key is never in both cur and old (NaN keys aside, which are never
	// equal to anything).
	old map[K]V
	// mig is the resumable iteration over old; non-nil exactly when old is.
	mig *migration[K, V]
	// peak is the largest Len since cur was created (or since the current
	// migration started, which resets it to Len).
	peak int
	// gen counts Clear calls; a Range that sees it change stops.
	gen uint64

	// ranges counts Range calls in progress. While it is non-zero no entry
	// moves between old and cur and no migration starts. It is incremented
	// with mu held (for reading) and decremented without mu; writers read it
	// with mu held, so a Range that has taken its snapshot of cur and old is
	// always seen.
	ranges atomic.Int32
}

// New returns an empty SafeMap. It is equivalent to new(SafeMap[K, V]).
func New[K comparable, V any]() *SafeMap[K, V] {
	return new(SafeMap[K, V])
}

// Get returns the value stored for key and true, or the zero V and false if
// key is absent. A stored nil value is reported with true. Get is O(1): one
// hash lookup, two while a migration is running and the key has not moved
// yet. It never moves entries.
func (m *SafeMap[K, V]) Get(key K) (value V, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if value, ok = m.cur[key]; !ok && m.old != nil {
		value, ok = m.old[key]
	}
	return value, ok
}

// Set stores value for key, replacing any previous value (which the map
// then no longer references). Set is amortized O(1); during a migration it
// also moves at most a few entries from the old table (see the package
// documentation).
func (m *SafeMap[K, V]) Set(key K, value V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.old != nil {
		if _, ok := m.old[key]; ok {
			m.old[key] = value
			m.stepLocked()
			return
		}
	}
	if m.cur == nil {
		m.cur = make(map[K]V)
	}
	m.cur[key] = value
	if n := m.lenLocked(); n > m.peak {
		m.peak = n
	}
	if m.old != nil {
		m.stepLocked()
	}
}

// Delete removes key and its value; it does nothing if key is absent. Use
// [SafeMap.LoadAndDelete] to learn whether key was present. Delete is
// amortized O(1): it may start a migration to a smaller table, or move a few
// entries of a running one (see the package documentation).
func (m *SafeMap[K, V]) Delete(key K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.cur, key)
	if m.old != nil {
		delete(m.old, key)
	}
	m.afterDeleteLocked()
}

// LoadAndDelete removes key and returns the value it had and true, or the
// zero V and false if key was absent. Its cost is that of [SafeMap.Delete]
// plus one lookup.
func (m *SafeMap[K, V]) LoadAndDelete(key K) (value V, loaded bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if value, loaded = m.cur[key]; loaded {
		delete(m.cur, key)
	} else if m.old != nil {
		if value, loaded = m.old[key]; loaded {
			delete(m.old, key)
		}
	}
	m.afterDeleteLocked()
	return value, loaded
}

// Len returns the number of entries. Entries with NaN keys count, as in a
// built-in map. Len is O(1).
func (m *SafeMap[K, V]) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.lenLocked()
}

// Clear removes every entry and drops the tables at once; a running
// migration is abandoned and any Range in progress stops before its next
// batch. Clear is O(1); the garbage collector frees the tables later.
func (m *SafeMap[K, V]) Clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cur, m.old, m.mig = nil, nil, nil
	m.peak = 0
	m.gen++
}

func (m *SafeMap[K, V]) lenLocked() int {
	return len(m.cur) + len(m.old)
}
