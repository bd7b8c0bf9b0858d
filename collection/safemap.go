package collection

import (
	"reflect"

	"github.com/ttlkit/ttlkit/safemap"
)

// SafeMap is go-zero's collection.SafeMap over safemap.SafeMap: a map safe
// for concurrent use that gives memory back as entries are deleted, at any
// size (go-zero's only shrinks below 1,000 entries).
type SafeMap struct {
	m *safemap.SafeMap[any, any]
}

// NewSafeMap returns an empty SafeMap.
func NewSafeMap() *SafeMap { return &SafeMap{m: safemap.New[any, any]()} }

// Del deletes key. An unhashable key (a slice, say) is ignored: it cannot
// be present.
func (m *SafeMap) Del(key any) {
	if hashable(key) {
		m.m.Delete(key)
	}
}

// Get returns key's value and whether key is present. An unhashable key is
// never present.
func (m *SafeMap) Get(key any) (value any, ok bool) {
	if !hashable(key) {
		return nil, false
	}
	return m.m.Get(key)
}

// Range calls f for each entry until f returns false. f runs with no lock
// held and may modify the map; every key present for the whole call is
// visited exactly once (see safemap.SafeMap.Range for the rest).
func (m *SafeMap) Range(f func(key, val any) bool) { m.m.Range(f) }

// Set stores value under key. Like a built-in map (and go-zero), it panics
// for an unhashable key such as a slice; the map stays usable.
func (m *SafeMap) Set(key, value any) { m.m.Set(key, value) }

// Size returns the number of entries.
func (m *SafeMap) Size() int { return m.m.Len() }

// hashable reports whether key can be used as a map key without panicking.
func hashable(key any) bool {
	return key == nil || reflect.ValueOf(key).Comparable()
}
