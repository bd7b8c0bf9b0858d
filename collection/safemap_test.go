package collection

import "testing"

func TestSafeMapGoZeroAPI(t *testing.T) {
	m := NewSafeMap()
	m.Set("a", 1)
	m.Set(2, "b")
	m.Set(nil, "nil key") // a nil interface is a valid map key
	if v, ok := m.Get("a"); !ok || v != 1 {
		t.Errorf(`Get("a") = %v, %v; want 1, true`, v, ok)
	}
	if v, ok := m.Get(nil); !ok || v != "nil key" {
		t.Errorf("Get(nil) = %v, %v; want nil key, true", v, ok)
	}
	if n := m.Size(); n != 3 {
		t.Errorf("Size = %d, want 3", n)
	}
	m.Del("a")
	if _, ok := m.Get("a"); ok {
		t.Error(`Get("a") after Del: present`)
	}
	seen := 0
	m.Range(func(k, v any) bool { seen++; return true })
	if seen != 2 {
		t.Errorf("Range visited %d, want 2", seen)
	}
}

func TestSafeMapUnhashableKeyGetDelDoNotPanic(t *testing.T) {
	m := NewSafeMap()
	if v, ok := m.Get([]int{1}); ok || v != nil {
		t.Errorf("Get(slice) = %v, %v; want nil, false", v, ok)
	}
	m.Del(map[string]int{}) // must not panic
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Set(slice key) did not panic, want a panic like a built-in map")
			}
		}()
		m.Set([]int{1}, 1)
	}()
	m.Set("still", "usable")
	if n := m.Size(); n != 1 {
		t.Errorf("Size = %d, want 1", n)
	}
}

func TestSafeMapEntriesSurviveShrink(t *testing.T) {
	// Deleting 95% of the entries makes the engine migrate the survivors to
	// a fresh map (the memory bound itself is tested in package safemap):
	// every survivor must still be there with its value.
	m := NewSafeMap()
	for i := range 100_000 {
		m.Set(i, i)
	}
	for i := range 95_000 {
		m.Del(i)
	}
	for i := 95_000; i < 100_000; i++ {
		if v, ok := m.Get(i); !ok || v != i {
			t.Fatalf("Get(%d) = %v, %v; want %d, true", i, v, ok, i)
		}
	}
	if n := m.Size(); n != 5_000 {
		t.Errorf("Size = %d, want 5000", n)
	}
}
