package safemap

import (
	"math/rand/v2"
	"testing"
)

// script runs a byte-coded sequence of operations on a SafeMap[int, int]
// and on a built-in map, checking after each one that they agree and that
// the SafeMap's invariants hold. Bulk operations let short inputs reach the
// shrink thresholds, so migrations start, run and finish inside scripts.
func script(t testing.TB, ops []byte) {
	m := New[int, int]()
	ref := map[int]int{}
	c := newChecker(t, m)
	eq := func(a, b int) bool { return a == b }
	next := func() int {
		if len(ops) == 0 {
			return 0
		}
		b := ops[0]
		ops = ops[1:]
		return int(b)
	}
	val := 0
	for len(ops) > 0 {
		op := next() % 8
		k := next() * 4 // keys 0..1020
		val++
		switch op {
		case 0: // Set
			m.Set(k, val)
			ref[k] = val
			c.mutated()
		case 1: // Delete
			m.Delete(k)
			delete(ref, k)
			c.deferred = false
			c.mutated()
		case 2: // LoadAndDelete
			want, wantOK := ref[k]
			got, ok := m.LoadAndDelete(k)
			if got != want || ok != wantOK {
				t.Fatalf("LoadAndDelete(%d) = %d, %v; want %d, %v", k, got, ok, want, wantOK)
			}
			delete(ref, k)
			c.deferred = false
			c.mutated()
		case 3: // Get
			want, wantOK := ref[k]
			if got, ok := m.Get(k); got != want || ok != wantOK {
				t.Fatalf("Get(%d) = %d, %v; want %d, %v", k, got, ok, want, wantOK)
			}
		case 4: // bulk Set of up to 255 consecutive keys
			for i := range next() {
				m.Set(k+4*i, val)
				ref[k+4*i] = val
				c.mutated()
			}
		case 5: // bulk Delete
			for i := range next() {
				m.Delete(k + 4*i)
				delete(ref, k+4*i)
				c.deferred = false
				c.mutated()
			}
		case 6: // Range whose f deletes and inserts
			rangeScript(t, m, ref, k)
			c.deferred = true
			c.check()
		case 7:
			if k < 64 { // rarely
				m.Clear()
				clear(ref)
				c.check()
			}
		}
		c.equal(ref, eq)
	}
}

// rangeScript runs one Range whose f, for each key k < big divisible by
// mod, deletes the key k+4 (which may or may not have been passed yet) and
// inserts the key k+big; then it checks what f
// was passed against the documented guarantees and applies the same
// changes to ref.
func rangeScript(t testing.TB, m *SafeMap[int, int], ref map[int]int, mod int) {
	const big = 1 << 20
	mod = mod%7 + 2
	start := make(map[int]int, len(ref))
	for k, v := range ref {
		start[k] = v
	}
	seen := map[int]int{}
	deleted := map[int]bool{}
	inserted := map[int]int{}
	m.Range(func(k, v int) bool {
		seen[k]++
		if k < big && k%mod == 0 {
			m.Delete(k + 4)
			deleted[k+4] = true
			m.Set(k+big, -k)
			inserted[k+big] = -k
		}
		return true
	})
	for k, n := range seen {
		if n > 1 {
			t.Fatalf("Range passed key %d %d times, want at most once", k, n)
		}
		_, orig := start[k]
		_, ins := inserted[k]
		if !orig && !ins {
			t.Fatalf("Range passed key %d, which was never in the map", k)
		}
	}
	for k := range start {
		if !deleted[k] && seen[k] != 1 {
			t.Fatalf("Range passed key %d (present throughout) %d times, want 1", k, seen[k])
		}
	}
	for k := range deleted {
		delete(ref, k)
	}
	for k, v := range inserted {
		if !deleted[k] {
			ref[k] = v
		}
	}
}

func TestReferenceRandomScripts(t *testing.T) {
	tests := []struct {
		name string
		seed uint64
		// weights of op codes 0..7 (Set, Delete, LoadAndDelete, Get,
		// bulk Set, bulk Delete, Range, Clear)
		weights [8]int
	}{
		{"balanced", 1, [8]int{4, 4, 2, 4, 1, 1, 1, 1}},
		{"grow-shrink cycles", 2, [8]int{1, 1, 1, 2, 3, 3, 0, 0}},
		{"shrink heavy", 3, [8]int{2, 6, 2, 2, 2, 2, 0, 0}},
		{"with ranges", 4, [8]int{3, 3, 1, 1, 2, 2, 2, 0}},
		{"with clears", 5, [8]int{3, 3, 1, 1, 2, 2, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(tt.seed, 0))
			total := 0
			for _, w := range tt.weights {
				total += w
			}
			for range 20 {
				ops := make([]byte, 0, 400)
				for range 200 {
					x := r.IntN(total)
					op := 0
					for x >= tt.weights[op] {
						x -= tt.weights[op]
						op++
					}
					ops = append(ops, byte(op), byte(r.IntN(256)))
					if op == 4 || op == 5 {
						ops = append(ops, byte(r.IntN(256)))
					}
				}
				script(t, ops)
			}
		})
	}
}

func FuzzSafeMap(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 1, 3, 1})
	f.Add([]byte{4, 0, 200, 5, 0, 190, 3, 5, 1, 9, 4, 0, 255, 6, 3, 5, 10, 240})
	f.Add([]byte{4, 0, 255, 5, 0, 250, 4, 100, 200, 6, 1, 7, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		script(t, ops)
	})
}
