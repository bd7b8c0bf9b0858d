package bench

import (
	"math/rand/v2"
	"testing"
)

// TestMapAdapters runs one random sequence of Set, Delete and Get on every
// map adapter and compares each result and the length with a built-in map.
// The sequence grows the map to 2,000 keys and deletes it back down to a
// few, so safemap's shrinking migration runs during it.
func TestMapAdapters(t *testing.T) {
	for _, im := range mapImpls {
		t.Run(im.name, func(t *testing.T) {
			m := im.new()
			ref := map[uint64]uint64{}
			r := rand.New(rand.NewPCG(1, 2))
			const keys = 2_000
			minLen := keys
			for step := range 40_000 {
				k := r.Uint64N(keys)
				// First half mostly sets, second half mostly deletes.
				setP, delP := 0.8, 0.1
				if step >= 20_000 {
					setP, delP = 0.02, 0.3 // settles near 6% of the keys
				}
				switch p := r.Float64(); {
				case p < setP:
					v := r.Uint64()
					m.Set(k, v)
					ref[k] = v
				case p < setP+delP:
					m.Delete(k)
					delete(ref, k)
				default:
					got, ok := m.Get(k)
					want, wantOK := ref[k]
					if got != want || ok != wantOK {
						t.Fatalf("step %d: Get(%d) = %d, %v; want %d, %v", step, k, got, ok, want, wantOK)
					}
				}
				if got, want := m.Len(), len(ref); got != want {
					t.Fatalf("step %d: Len() = %d, want %d", step, got, want)
				}
				if step >= 30_000 {
					minLen = min(minLen, len(ref))
				}
			}
			if minLen*4 >= keys {
				t.Fatalf("the second half left at least %d keys, want below a quarter of %d (a shrink)", minLen, keys)
			}
			for k := range uint64(keys) {
				got, ok := m.Get(k)
				want, wantOK := ref[k]
				if got != want || ok != wantOK {
					t.Errorf("end: Get(%d) = %d, %v; want %d, %v", k, got, ok, want, wantOK)
				}
			}
		})
	}
}
