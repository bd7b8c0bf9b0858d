package safemap

import "testing"

// checker verifies SafeMap's internal invariants after each operation of a
// single-goroutine test, and that migrations end within their bound.
type checker[K comparable, V any] struct {
	t testing.TB
	m *SafeMap[K, V]

	// deferred is set by the test while a shrink may have been postponed by
	// a Range (deletes made inside f), and cleared after the next delete.
	deferred bool

	mig      *migration[K, V] // migration being tracked
	migStart int              // Len when it started
	migCalls int              // mutating calls since it started
}

func newChecker[K comparable, V any](t testing.TB, m *SafeMap[K, V]) *checker[K, V] {
	return &checker[K, V]{t: t, m: m}
}

// mutated records one mutating call (Set, Delete, LoadAndDelete) and then
// checks the invariants.
func (c *checker[K, V]) mutated() {
	c.t.Helper()
	if c.mig != nil && c.mig == c.m.mig {
		c.migCalls++
	}
	c.check()
}

// check verifies the invariants. It must not run while a Range is active.
func (c *checker[K, V]) check() {
	c.t.Helper()
	m := c.m
	if (m.old == nil) != (m.mig == nil) {
		c.t.Fatalf("old nil = %v, mig nil = %v; want equal", m.old == nil, m.mig == nil)
	}
	if m.old != nil && m.cur == nil {
		c.t.Fatalf("migrating into a nil cur")
	}
	for k := range m.old {
		if k != k {
			continue // NaN: in old only, by construction
		}
		if _, ok := m.cur[k]; ok {
			c.t.Fatalf("key %v is in both cur and old", k)
		}
	}
	n := m.lenLocked()
	if m.peak < n {
		c.t.Fatalf("peak = %d, want >= Len = %d", m.peak, n)
	}
	if got := m.ranges.Load(); got != 0 {
		c.t.Fatalf("ranges = %d with no Range running, want 0", got)
	}
	if m.old == nil && !c.deferred && m.peak >= minShrinkPeak && n*shrinkFactor < m.peak {
		c.t.Fatalf("Len = %d < peak/%d = %d/%d but no migration started", n, shrinkFactor, m.peak, shrinkFactor)
	}
	// Migration duration: at most ceil(start/migrateBatch) calls move
	// entries, plus the call that finds old exhausted.
	switch {
	case m.mig != nil && m.mig != c.mig:
		c.mig, c.migStart, c.migCalls = m.mig, len(m.old), 0
	case m.mig == nil:
		c.mig = nil
	}
	if c.mig != nil {
		if limit := (c.migStart+migrateBatch-1)/migrateBatch + 1; c.migCalls > limit {
			c.t.Fatalf("migration of %d entries still running after %d calls, want at most %d", c.migStart, c.migCalls, limit)
		}
	}
}

// equal checks that m holds exactly ref (keys must not be NaN).
func (c *checker[K, V]) equal(ref map[K]V, eq func(a, b V) bool) {
	c.t.Helper()
	m := c.m
	if got, want := m.Len(), len(ref); got != want {
		c.t.Fatalf("Len() = %d, want %d", got, want)
	}
	for k, want := range ref {
		got, ok := m.Get(k)
		if !ok || !eq(got, want) {
			c.t.Fatalf("Get(%v) = %v, %v; want %v, true", k, got, ok, want)
		}
	}
	for _, t := range []map[K]V{m.cur, m.old} {
		for k := range t {
			if _, ok := ref[k]; !ok {
				c.t.Fatalf("map holds key %v, reference does not", k)
			}
		}
	}
}
