package safemap

import (
	"testing"
)

// migrating returns a map with keys 0..live-1 (value = key) whose migration
// has started and moved only a few entries, so Range sees both tables.
func migrating(t *testing.T, live int) *SafeMap[int, int] {
	t.Helper()
	m := New[int, int]()
	fill(m, 4*live+4)
	for k := 4*live + 3; k >= live; k-- {
		m.Delete(k)
	}
	if m.mig == nil || len(m.old) == 0 || len(m.cur) == 0 {
		t.Fatalf("setup: want a migration with entries in both tables, got mig = %v, len(old) = %d, len(cur) = %d",
			m.mig != nil, len(m.old), len(m.cur))
	}
	return m
}

func TestRangeWithMutationInF(t *testing.T) {
	const n = 300
	tests := []struct {
		name string
		// f is the mutation run for key k before returning true.
		f func(m *SafeMap[int, int], k int)
		// check verifies the counts of passed keys (passed[k] = times).
		check func(t *testing.T, m *SafeMap[int, int], passed map[int]int)
	}{
		{
			name: "delete current key",
			f:    func(m *SafeMap[int, int], k int) { m.Delete(k) },
			check: func(t *testing.T, m *SafeMap[int, int], passed map[int]int) {
				wantEachOnce(t, passed, 0, n)
				if got := m.Len(); got != 0 {
					t.Errorf("Len() = %d after deleting every key passed, want 0", got)
				}
			},
		},
		{
			name: "delete everything on first call",
			f: func(m *SafeMap[int, int], k int) {
				for i := range n {
					m.Delete(i)
				}
			},
			check: func(t *testing.T, m *SafeMap[int, int], passed map[int]int) {
				// The first batch was read before f ran; nothing after it.
				if got := len(passed); got != rangeBatch {
					t.Errorf("Range passed %d keys, want %d (one batch)", got, rangeBatch)
				}
			},
		},
		{
			name: "clear on first call",
			f:    func(m *SafeMap[int, int], k int) { m.Clear() },
			check: func(t *testing.T, m *SafeMap[int, int], passed map[int]int) {
				if got := len(passed); got != rangeBatch {
					t.Errorf("Range passed %d keys, want %d (one batch)", got, rangeBatch)
				}
			},
		},
		{
			name: "insert new keys",
			f: func(m *SafeMap[int, int], k int) {
				if k < n {
					m.Set(k+n, k+n)
				}
			},
			check: func(t *testing.T, m *SafeMap[int, int], passed map[int]int) {
				wantEachOnce(t, passed, 0, n)
				for k := n; k < 2*n; k++ {
					if passed[k] > 1 {
						t.Errorf("inserted key %d passed %d times, want at most 1", k, passed[k])
					}
				}
				if got := m.Len(); got != 2*n {
					t.Errorf("Len() = %d, want %d", got, 2*n)
				}
			},
		},
		{
			name: "overwrite every key",
			f: func(m *SafeMap[int, int], k int) {
				for i := range n {
					m.Set(i, -1)
				}
			},
			check: func(t *testing.T, m *SafeMap[int, int], passed map[int]int) {
				wantEachOnce(t, passed, 0, n)
			},
		},
		{
			name: "nested range",
			f: func(m *SafeMap[int, int], k int) {
				if k == 0 {
					inner := 0
					m.Range(func(int, int) bool { inner++; return true })
					if inner != n {
						panic("nested Range did not see every entry")
					}
				}
			},
			check: func(t *testing.T, m *SafeMap[int, int], passed map[int]int) {
				wantEachOnce(t, passed, 0, n)
			},
		},
	}
	for _, tt := range tests {
		for _, mid := range []bool{false, true} {
			name := tt.name
			if mid {
				name += " mid-migration"
			}
			t.Run(name, func(t *testing.T) {
				var m *SafeMap[int, int]
				if mid {
					m = migrating(t, n)
				} else {
					m = New[int, int]()
					fill(m, n)
				}
				passed := map[int]int{}
				m.Range(func(k, v int) bool {
					passed[k]++
					if k < n && v != k && v != -1 {
						t.Errorf("Range passed %d, %d; want value %d", k, v, k)
					}
					tt.f(m, k)
					return true
				})
				tt.check(t, m, passed)
				c := newChecker(t, m)
				c.deferred = true // deletes in f cannot start a migration
				c.check()
			})
		}
	}
}

func wantEachOnce(t *testing.T, passed map[int]int, lo, hi int) {
	t.Helper()
	for k := lo; k < hi; k++ {
		if passed[k] != 1 {
			t.Errorf("key %d passed %d times, want 1", k, passed[k])
		}
	}
}

func TestRangePausesMigration(t *testing.T) {
	m := migrating(t, 300)
	oldLen, curLen := len(m.old), len(m.cur)
	m.Range(func(k, v int) bool {
		m.Set(k, v+1) // would step the migration outside Range
		return true
	})
	if len(m.old) != oldLen || len(m.cur) != curLen {
		t.Fatalf("during Range len(old), len(cur) went from %d, %d to %d, %d; want unchanged",
			oldLen, curLen, len(m.old), len(m.cur))
	}
	m.Set(0, 0)
	if got, want := len(m.old), oldLen-migrateBatch; got != want {
		t.Fatalf("first Set after Range left len(old) = %d, want %d", got, want)
	}
}

func TestRangeDefersMigrationStart(t *testing.T) {
	m := New[int, int]()
	c := newChecker(t, m)
	fill(m, 400)
	m.Range(func(k, v int) bool {
		m.Delete(k)
		return true
	})
	if m.mig != nil || m.cur == nil {
		t.Fatalf("a table changed while Range ran: mig = %v, cur nil = %v", m.mig != nil, m.cur == nil)
	}
	m.Delete(-1) // absent key: still re-evaluates the policy
	if m.cur != nil || m.peak != 0 {
		t.Fatalf("after emptying a 400-entry map: cur nil = %v, peak = %d; want true, 0", m.cur == nil, m.peak)
	}
	c.check()
}

func TestRangePanicInF(t *testing.T) {
	m := migrating(t, 300)
	func() {
		defer func() {
			if got := recover(); got != "boom" {
				t.Fatalf("recover() = %v, want boom", got)
			}
		}()
		m.Range(func(int, int) bool { panic("boom") })
	}()
	if got := m.ranges.Load(); got != 0 {
		t.Fatalf("ranges = %d after f panicked, want 0", got)
	}
	newChecker(t, m).check()
}

func TestAllBreak(t *testing.T) {
	m := New[int, int]()
	fill(m, 200)
	count := 0
	for k, v := range m.All() {
		if k != v {
			t.Fatalf("All yielded %d, %d; want equal key and value", k, v)
		}
		count++
		if count == 70 {
			break
		}
	}
	if count != 70 {
		t.Fatalf("loop ran %d times, want 70", count)
	}
	if got := m.ranges.Load(); got != 0 {
		t.Fatalf("ranges = %d after break, want 0", got)
	}
	sum := 0
	for _, v := range m.All() {
		sum += v
	}
	if want := 199 * 200 / 2; sum != want {
		t.Fatalf("sum of values from All = %d, want %d", sum, want)
	}
}

// TestMigrationEndingBelowPeakStartsAnother: a Range postpones a
// migration's steps but not the deletes, so the map can be far below the
// peak the migration started from by the time the migration ends. The
// delete that ends it must start the next one at once: with no delete after
// it, the table the deletes left behind would be kept. (CI caught this
// through TestConcurrentUse's final check.)
func TestMigrationEndingBelowPeakStartsAnother(t *testing.T) {
	m := New[int, int]()
	for k := range 1000 {
		m.Set(k, k)
	}
	k := 0
	for m.old == nil { // down to peak/4: the migration starts
		m.Delete(k)
		k++
	}
	entered, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		first := true
		m.Range(func(int, int) bool {
			if first {
				first = false
				close(entered)
				<-release
			}
			return false
		})
	}()
	<-entered
	for ; k < 960; k++ { // no migration step while the Range runs
		m.Delete(k)
	}
	close(release)
	<-done
	for m.old != nil { // the migration's own steps, one delete each
		m.Delete(k)
		k++
	}
	m.mu.Lock()
	n, peak, running := m.lenLocked(), m.peak, m.old != nil
	m.mu.Unlock()
	if n*shrinkFactor < peak && !running {
		t.Fatalf("after the delete that ended the migration: Len %d < peak/%d = %d/%d, but no migration runs", n, shrinkFactor, peak, shrinkFactor)
	}
}
