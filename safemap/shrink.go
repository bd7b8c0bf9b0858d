package safemap

import "reflect"

const (
	// shrinkFactor: a migration starts once Len < peak/shrinkFactor.
	shrinkFactor = 4
	// minShrinkPeak: tables never held this many entries are not rebuilt.
	minShrinkPeak = 64
	// migrateBatch is the most entries one mutating call moves. It must be
	// at least shrinkFactor/(shrinkFactor-1) so that a migration of n
	// entries (at most n/migrateBatch calls) ends before the
	// (shrinkFactor-1)/shrinkFactor*n deletes the next one needs.
	migrateBatch = 4
)

// migration is the resumable iteration over old. The built-in range
// statement cannot pause between calls, and restarting it from a random
// place on every call would rescan the empty part of a sparse table each
// time; reflect.MapIter keeps its position, and the language guarantees it
// stays valid while entries are deleted or updated in place.
type migration[K comparable, V any] struct {
	it reflect.MapIter
	// k and v receive each entry without allocating (SetIterKey).
	k      K
	v      V
	kv, vv reflect.Value
}

// afterDeleteLocked advances a running migration or starts one if the
// table has become mostly empty. mu must be held for writing.
//
// A migration that this call ends is followed by the check for a new one:
// Ranges postpone a migration's steps but not the deletes, so by its end
// the map may already be far below the peak it started from, and with no
// delete after this one that table would be kept.
func (m *SafeMap[K, V]) afterDeleteLocked() {
	if m.old != nil {
		m.stepLocked()
		if m.old != nil {
			return
		}
	}
	if m.peak < minShrinkPeak || m.lenLocked()*shrinkFactor >= m.peak {
		return
	}
	if m.ranges.Load() != 0 {
		return // retried on a later delete
	}
	if len(m.cur) == 0 {
		m.cur = nil
		m.peak = 0
		return
	}
	m.old, m.cur = m.cur, make(map[K]V)
	m.peak = len(m.old)
	mg := &migration[K, V]{}
	mg.it.Reset(reflect.ValueOf(m.old))
	mg.kv = reflect.ValueOf(&mg.k).Elem()
	mg.vv = reflect.ValueOf(&mg.v).Elem()
	m.mig = mg
	m.stepLocked()
}

// stepLocked moves up to migrateBatch entries from old to cur, and ends the
// migration when old is exhausted. It does nothing while a Range runs. mu
// must be held for writing and a migration must be running.
func (m *SafeMap[K, V]) stepLocked() {
	if m.ranges.Load() != 0 {
		return
	}
	mg := m.mig
	for range migrateBatch {
		if len(m.old) == 0 || !mg.it.Next() {
			m.finishLocked()
			return
		}
		mg.kv.SetIterKey(&mg.it)
		mg.vv.SetIterValue(&mg.it)
		n := len(m.old)
		delete(m.old, mg.k)
		if len(m.old) < n {
			m.cur[mg.k] = mg.v
		}
		// Otherwise the key is NaN: it cannot be deleted, so it stays in
		// old (and stays its only copy) until finishLocked.
	}
	var zk K
	var zv V
	mg.k, mg.v = zk, zv // do not pin a value the caller may delete
}

// finishLocked ends the migration. Whatever is left in old has a NaN key
// (everything else was moved or deleted); it is carried over in one pass,
// which costs nothing when old is empty.
func (m *SafeMap[K, V]) finishLocked() {
	if len(m.old) > 0 {
		for k, v := range m.old {
			m.cur[k] = v
		}
	}
	m.old, m.mig = nil, nil
}
