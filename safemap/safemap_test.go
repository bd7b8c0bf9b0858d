package safemap

import (
	"math"
	"testing"
)

func TestZeroValue(t *testing.T) {
	var m SafeMap[string, int]
	if got, ok := m.Get("a"); got != 0 || ok {
		t.Fatalf("zero map Get(a) = %d, %v; want 0, false", got, ok)
	}
	if got := m.Len(); got != 0 {
		t.Fatalf("zero map Len() = %d, want 0", got)
	}
	m.Delete("a")
	if got, ok := m.LoadAndDelete("a"); got != 0 || ok {
		t.Fatalf("zero map LoadAndDelete(a) = %d, %v; want 0, false", got, ok)
	}
	m.Range(func(k string, v int) bool {
		t.Fatalf("zero map Range passed %q, %d", k, v)
		return true
	})
	m.Clear()
	m.Set("a", 1)
	if got, ok := m.Get("a"); got != 1 || !ok {
		t.Fatalf("Get(a) after Set(a, 1) = %d, %v; want 1, true", got, ok)
	}
}

func TestNilValuesArePresent(t *testing.T) {
	m := New[int, *int]()
	m.Set(1, nil)
	if got, ok := m.Get(1); got != nil || !ok {
		t.Fatalf("Get(1) = %v, %v; want nil, true", got, ok)
	}
	if got := m.Len(); got != 1 {
		t.Fatalf("Len() = %d, want 1", got)
	}
	if _, ok := m.LoadAndDelete(1); !ok {
		t.Fatalf("LoadAndDelete(1) loaded = false, want true")
	}
}

func TestOperations(t *testing.T) {
	tests := []struct {
		name    string
		run     func(m *SafeMap[string, int])
		key     string
		want    int
		wantOK  bool
		wantLen int
	}{
		{"set then get", func(m *SafeMap[string, int]) { m.Set("a", 1) }, "a", 1, true, 1},
		{"overwrite", func(m *SafeMap[string, int]) { m.Set("a", 1); m.Set("a", 2) }, "a", 2, true, 1},
		{"delete", func(m *SafeMap[string, int]) { m.Set("a", 1); m.Delete("a") }, "a", 0, false, 0},
		{"delete absent", func(m *SafeMap[string, int]) { m.Set("a", 1); m.Delete("b") }, "a", 1, true, 1},
		{"set after delete", func(m *SafeMap[string, int]) { m.Set("a", 1); m.Delete("a"); m.Set("a", 3) }, "a", 3, true, 1},
		{"clear", func(m *SafeMap[string, int]) { m.Set("a", 1); m.Set("b", 2); m.Clear() }, "a", 0, false, 0},
		{"empty key", func(m *SafeMap[string, int]) { m.Set("", 7) }, "", 7, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New[string, int]()
			tt.run(m)
			if got, ok := m.Get(tt.key); got != tt.want || ok != tt.wantOK {
				t.Errorf("Get(%q) = %d, %v; want %d, %v", tt.key, got, ok, tt.want, tt.wantOK)
			}
			if got := m.Len(); got != tt.wantLen {
				t.Errorf("Len() = %d, want %d", got, tt.wantLen)
			}
		})
	}
}

// fill sets keys 0..n-1 to their own value.
func fill(m *SafeMap[int, int], n int) {
	for i := range n {
		m.Set(i, i)
	}
}

func TestShrinkPolicy(t *testing.T) {
	tests := []struct {
		name string
		peak int
		keep int // live entries left after deleting keys keep..peak-1
		// wantMigrations is how many migrations the deletes start
		wantMigrations int
	}{
		{"below floor never rebuilt", minShrinkPeak - 1, 0, 0},
		{"at threshold not yet", 400, 100, 0},
		{"just below threshold", 400, 99, 1},
		{"delete everything", 400, 0, 2},        // at 99, then 24
		{"4000 to 10", 4000, 10, 3},             // at 999, 249, 62
		{"floor stops the cascade", 4000, 0, 3}, // peak 62 is below the floor
		{"empty table replaced", 256, 0, 1},     // at 63; then peak 63 < floor
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New[int, int]()
			c := newChecker(t, m)
			fill(m, tt.peak)
			if m.peak != tt.peak {
				t.Fatalf("peak = %d after %d sets, want %d", m.peak, tt.peak, tt.peak)
			}
			migrations := 0
			for k := tt.peak - 1; k >= tt.keep; k-- {
				before := m.mig
				wasRebuilt := m.cur == nil
				m.Delete(k)
				c.mutated()
				if (m.mig != nil && m.mig != before) || (!wasRebuilt && m.cur == nil) {
					migrations++
				}
			}
			if migrations != tt.wantMigrations {
				t.Errorf("deletes started %d migrations, want %d", migrations, tt.wantMigrations)
			}
			ref := map[int]int{}
			for i := range tt.keep {
				ref[i] = i
			}
			c.equal(ref, func(a, b int) bool { return a == b })
		})
	}
}

func TestMigrationEndsWithinBound(t *testing.T) {
	m := New[int, int]()
	fill(m, 4000)
	for k := 3999; k >= 999; k-- {
		m.Delete(k)
	}
	if m.mig == nil {
		t.Fatalf("no migration after shrinking 4000 to 999 entries")
	}
	if got, want := len(m.old)+len(m.cur), 999; got != want {
		t.Fatalf("old+cur = %d entries, want %d", got, want)
	}
	// Only Sets of existing keys from now on: no delete helps.
	calls := 0
	for m.mig != nil {
		m.Set(calls%999, -1)
		calls++
		if calls > 999 {
			t.Fatalf("migration still running after %d calls", calls)
		}
	}
	if limit := (999+migrateBatch-1)/migrateBatch + 1; calls > limit {
		t.Errorf("migration of 999 entries took %d calls, want at most %d", calls, limit)
	}
	if got, want := len(m.cur), 999; got != want {
		t.Errorf("len(cur) = %d after migration, want %d", got, want)
	}
	if m.peak != 999 {
		t.Errorf("peak = %d after migration, want 999 (the size when it started)", m.peak)
	}
}

func TestNaNKeysBehaveAsBuiltin(t *testing.T) {
	m := New[float64, int]()
	ref := map[float64]int{}
	nan := math.NaN()
	for i := range 300 {
		m.Set(float64(i), i)
		ref[float64(i)] = i
		if i%50 == 0 {
			m.Set(nan, -i)
			ref[nan] = -i
		}
	}
	// Shrink across several migrations; NaN entries cannot be deleted.
	for i := 299; i >= 5; i-- {
		m.Delete(float64(i))
		delete(ref, float64(i))
		m.Delete(nan)
		delete(ref, nan)
	}
	for m.mig != nil {
		m.Set(0, 0)
		ref[0] = 0
	}
	if got, want := m.Len(), len(ref); got != want {
		t.Fatalf("Len() = %d, want %d (6 NaN entries + 5 others)", got, want)
	}
	if _, ok := m.Get(nan); ok {
		t.Fatalf("Get(NaN) ok = true, want false")
	}
	nans, others := 0, 0
	m.Range(func(k float64, v int) bool {
		if k != k {
			nans++
		} else {
			others++
		}
		return true
	})
	if nans != 6 || others != 5 {
		t.Fatalf("Range passed %d NaN and %d other keys, want 6 and 5", nans, others)
	}
}

func TestUnhashableKeyPanicLeavesMapUsable(t *testing.T) {
	tests := []struct {
		name string
		call func(m *SafeMap[any, int])
	}{
		{"Set", func(m *SafeMap[any, int]) { m.Set([]int{1}, 1) }},
		{"Get", func(m *SafeMap[any, int]) { m.Get([]int{1}) }},
		{"Delete", func(m *SafeMap[any, int]) { m.Delete([]int{1}) }},
		{"LoadAndDelete", func(m *SafeMap[any, int]) { m.LoadAndDelete([]int{1}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New[any, int]()
			m.Set("x", 1)
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s with a slice key did not panic", tt.name)
					}
				}()
				tt.call(m)
			}()
			m.Set("y", 2) // would deadlock if the lock had been kept
			if got := m.Len(); got != 2 {
				t.Errorf("Len() = %d after the panic, want 2", got)
			}
		})
	}
}

func TestClearDuringMigration(t *testing.T) {
	m := New[int, int]()
	c := newChecker(t, m)
	fill(m, 1000)
	for k := 999; k >= 200; k-- {
		m.Delete(k)
	}
	if m.mig == nil {
		t.Fatalf("no migration running before Clear")
	}
	m.Clear()
	c.check()
	if m.Len() != 0 || m.old != nil || m.cur != nil {
		t.Fatalf("after Clear: Len = %d, old nil = %v, cur nil = %v; want 0, true, true", m.Len(), m.old == nil, m.cur == nil)
	}
	m.Set(1, 1)
	c.mutated()
	c.equal(map[int]int{1: 1}, func(a, b int) bool { return a == b })
}

func TestHotPathAllocations(t *testing.T) {
	m := New[int, int]()
	fill(m, 1000)
	empty := New[int, int]()
	tests := []struct {
		name string
		f    func()
	}{
		{"Get", func() { m.Get(500) }},
		{"Set existing", func() { m.Set(500, 1) }},
		{"Delete and Set", func() { m.Delete(500); m.Set(500, 1) }},
		{"Len", func() { m.Len() }},
		{"Range empty", func() { empty.Range(func(int, int) bool { return true }) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(100, tt.f); got != 0 {
				t.Errorf("%s allocates %.1f times per call, want 0", tt.name, got)
			}
		})
	}
	t.Run("Range", func(t *testing.T) {
		f := func() { m.Range(func(int, int) bool { return true }) }
		if got := testing.AllocsPerRun(20, f); got != 1 {
			t.Errorf("Range allocates %.1f times per call, want 1", got)
		}
	})
}
