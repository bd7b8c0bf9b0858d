package table

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

type entry struct {
	key string
	val int
}

func keyOf(e *entry) string { return e.key }

// checkInvariants verifies the writer-side bookkeeping against the array:
// the live and dead counts, that every full slot's tag is its entry's tag,
// that every entry is found by Get, and that no key appears twice.
func checkInvariants(t *testing.T, tb *Table[string, entry]) {
	t.Helper()
	a := tb.arr.Load()
	live, dead := 0, 0
	seen := map[string]bool{}
	for gi := range a.groups {
		grp := &a.groups[gi]
		tags := grp.tags.Load()
		if top := tags >> (8 * groupSize); top != 0 {
			t.Fatalf("group %d: unused tag byte %#x, want 0", gi, top)
		}
		for i := range groupSize {
			tag := tags >> (8 * i) & 0xff
			e := grp.slots[i].Load()
			switch {
			case tag == tagEmpty || tag == tagDead:
				if e != nil {
					t.Fatalf("group %d slot %d: tag %#x holds entry %q, want nil", gi, i, tag, e.key)
				}
				if tag == tagDead {
					dead++
				}
			case tag&tagFull != 0:
				if e == nil {
					t.Fatalf("group %d slot %d: tag %#x holds nil", gi, i, tag)
				}
				if want := tagOf(tb.Hash(e.key)); tag != want {
					t.Fatalf("key %q: tag %#x, want %#x", e.key, tag, want)
				}
				if seen[e.key] {
					t.Fatalf("key %q stored twice", e.key)
				}
				seen[e.key] = true
				live++
				if got := tb.Get(e.key, tb.Hash(e.key)); got != e {
					t.Fatalf("Get(%q) = %p, want %p", e.key, got, e)
				}
			default:
				t.Fatalf("group %d slot %d: invalid tag %#x", gi, i, tag)
			}
		}
	}
	if live != tb.Len() || dead != tb.dead {
		t.Fatalf("counted live %d dead %d, table says %d %d", live, dead, tb.Len(), tb.dead)
	}
	if (live+dead)*8 > len(a.groups)*groupSize*7 {
		t.Fatalf("load (%d live + %d dead) over 7/8 of %d slots", live, dead, len(a.groups)*groupSize)
	}
}

// script runs ops decoded from data against the table and a map, checking
// them against each other after every op. Each op is two bytes: an
// operation and a key index; keySpace bounds the keys.
func script(t *testing.T, data []byte, keySpace int) {
	tb := New[string, entry](keyOf, 0)
	model := map[string]*entry{}
	for len(data) >= 2 {
		op, k := data[0]%4, fmt.Sprintf("k%d", int(data[1])%keySpace)
		data = data[2:]
		h := tb.Hash(k)
		switch op {
		case 0: // Put
			e := &entry{key: k, val: len(data)}
			old := tb.Put(e, h)
			if old != model[k] {
				t.Fatalf("Put(%q) replaced %p, want %p", k, old, model[k])
			}
			model[k] = e
		case 1: // Find, and Insert if absent
			found, pos := tb.Find(k, h)
			if found != model[k] {
				t.Fatalf("Find(%q) = %p, want %p", k, found, model[k])
			}
			if found == nil {
				e := &entry{key: k, val: len(data)}
				tb.Insert(pos, e, h)
				model[k] = e
			}
		case 2:
			got := tb.Delete(k, h)
			if got != model[k] {
				t.Fatalf("Delete(%q) = %p, want %p", k, got, model[k])
			}
			delete(model, k)
		case 3:
			// DeleteEntry with a stale entry must do nothing.
			stale := &entry{key: k}
			if tb.DeleteEntry(stale, h) {
				t.Fatalf("DeleteEntry(stale %q) = true, want false", k)
			}
			if e := model[k]; e != nil {
				if !tb.DeleteEntry(e, h) {
					t.Fatalf("DeleteEntry(%q) = false, want true", k)
				}
				delete(model, k)
			}
		}
		if got, want := tb.Get(k, h), model[k]; got != want {
			t.Fatalf("Get(%q) = %p, want %p", k, got, want)
		}
		if tb.Len() != len(model) {
			t.Fatalf("Len = %d, want %d", tb.Len(), len(model))
		}
		checkInvariants(t, tb)
	}
	n := 0
	tb.All(func(e *entry) bool {
		if model[e.key] != e {
			t.Fatalf("All yielded %q = %p, want %p", e.key, e, model[e.key])
		}
		n++
		return true
	})
	if n != len(model) {
		t.Fatalf("All yielded %d entries, want %d", n, len(model))
	}
}

func TestRandomScripts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, keySpace := range []int{1, 7, 8, 9, 64, 256} {
		for run := range 50 {
			data := make([]byte, 2*(50+r.IntN(600)))
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			t.Run(fmt.Sprintf("keys=%d/run=%d", keySpace, run), func(t *testing.T) {
				script(t, data, keySpace)
			})
		}
	}
}

func FuzzTable(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 2, 1, 3, 2})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, data []byte) { script(t, data, 256) })
}

func TestMatches(t *testing.T) {
	tags := uint64(0x81)<<0 | uint64(tagDead)<<8 | uint64(0xff)<<16 | uint64(0x81)<<48
	if got, want := matches(tags, 0x81), uint64(0x80)|uint64(0x80)<<48; got&want != want {
		t.Errorf("matches(%#x, 0x81) = %#x, want at least %#x", tags, got, want)
	}
	if got := empties(tags); got != 0x0000_8080_8000_0000 {
		t.Errorf("empties(%#x) = %#x, want %#x", tags, got, uint64(0x0000_8080_8000_0000))
	}
	// The eighth byte is not a slot: it never matches and is never empty.
	if got := empties(0); got != lanes {
		t.Errorf("empties(0) = %#x, want %#x", got, uint64(lanes))
	}
	if got := matches(0x81<<56, 0x81); got != 0 {
		t.Errorf("matches(%#x, 0x81) = %#x, want 0", uint64(0x81<<56), got)
	}
}

func TestGroupsAreCacheLines(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		// A tag word and seven 4-byte pointers make 40 bytes: on 32-bit
		// platforms a group is smaller than a line and never aligned.
		t.Skip("the 64-byte layout is for 64-bit platforms")
	}
	if got := unsafe.Sizeof(group[entry]{}); got != 64 {
		t.Fatalf("group size %d bytes, want 64", got)
	}
	// Arrays from 1 KiB to 16 KiB carry the runtime's 8-byte allocation
	// header and start 8 bytes into a line; they fit in the processor's
	// caches anyway. Larger ones, where misses matter, are aligned.
	for groups := 1; groups <= 1<<14; groups *= 2 {
		if groups > 8 && groups < 512 {
			continue
		}
		for range 4 {
			a := newArray[entry](groups)
			if off := uintptr(unsafe.Pointer(&a.groups[0])) % 64; off != 0 {
				t.Fatalf("%d groups at offset %d in a cache line, want 0", groups, off)
			}
		}
	}
}

func TestGrowsAndShrinks(t *testing.T) {
	tb := New[string, entry](keyOf, 0)
	if got := tb.Slots(); got != groupSize {
		t.Fatalf("empty table: %d slots, want %d", got, groupSize)
	}
	const n = 10_000
	es := make([]*entry, n)
	for i := range es {
		es[i] = &entry{key: fmt.Sprint(i)}
		tb.Put(es[i], tb.Hash(es[i].key))
	}
	checkInvariants(t, tb)
	peak := tb.Slots()
	if peak < n*8/7 || peak > 4*n {
		t.Fatalf("%d entries in %d slots, want between %d and %d", n, peak, n*8/7, 4*n)
	}
	for _, e := range es[:n-10] {
		if tb.Delete(e.key, tb.Hash(e.key)) != e {
			t.Fatalf("Delete(%q) missed", e.key)
		}
	}
	checkInvariants(t, tb)
	if got := tb.Slots(); got > 10*shrinkBelow {
		t.Fatalf("10 entries left in %d slots, want <= %d (peak was %d)", got, 10*shrinkBelow, peak)
	}
	for _, e := range es[n-10:] {
		if tb.Get(e.key, tb.Hash(e.key)) != e {
			t.Fatalf("Get(%q) missed after shrinking", e.key)
		}
	}
}

// TestGrowthDoubles: a growth sized the new array for twice the entries
// with groupsFor, which landed just past a power of two and quadrupled it,
// so a cache of 105k entries kept its index a quarter full (40 bytes of
// index per entry instead of about 15). Inserting only, the table must be
// more than 3/8 full once it has outgrown its first group.
func TestGrowthDoubles(t *testing.T) {
	tb := New[string, entry](keyOf, 0)
	for i := range 20_000 {
		k := fmt.Sprint(i)
		tb.Put(&entry{key: k}, tb.Hash(k))
		if n, slots := tb.Len(), tb.Slots(); slots > groupSize && n*8 <= slots*3 {
			t.Fatalf("%d entries in %d slots, want fewer than %d slots", n, slots, n*8/3+1)
		}
	}
	checkInvariants(t, tb)
}

func TestFloorFromHint(t *testing.T) {
	tb := New[string, entry](keyOf, 1000)
	floor := tb.Slots()
	if floor < 1000*8/7 {
		t.Fatalf("hint 1000: %d slots, want >= %d", floor, 1000*8/7)
	}
	e := &entry{key: "x"}
	tb.Put(e, tb.Hash("x"))
	tb.Delete("x", tb.Hash("x"))
	if got := tb.Slots(); got != floor {
		t.Fatalf("after emptying: %d slots, want the floor %d", got, floor)
	}
	tb.Clear()
	if got := tb.Slots(); got != floor {
		t.Fatalf("after Clear: %d slots, want the floor %d", got, floor)
	}
}

// TestChurnKeepsLoadBounded deletes and inserts distinct keys at a
// constant population, which leaves deletion marks behind: rebuilds must
// clear them without growing the table.
func TestChurnKeepsLoadBounded(t *testing.T) {
	tb := New[string, entry](keyOf, 0)
	const pop = 500
	for i := range pop {
		k := fmt.Sprint(i)
		tb.Put(&entry{key: k}, tb.Hash(k))
	}
	size := tb.Slots()
	for i := pop; i < 50*pop; i++ {
		old := fmt.Sprint(i - pop)
		if tb.Delete(old, tb.Hash(old)) == nil {
			t.Fatalf("Delete(%q) missed", old)
		}
		k := fmt.Sprint(i)
		tb.Put(&entry{key: k}, tb.Hash(k))
	}
	checkInvariants(t, tb)
	if got := tb.Slots(); got > size {
		t.Fatalf("constant population of %d: %d slots after churn, want <= %d", pop, got, size)
	}
}

// TestConcurrentReadersNeverMissStableKeys runs lookups of keys that are
// never removed while a writer churns other keys through growth, deletion
// marks and shrinking: a present key must never be missed, and Len, read
// without the writer's lock, stays between the stable keys and the most a
// round adds.
func TestConcurrentReadersNeverMissStableKeys(t *testing.T) {
	tb := New[string, entry](keyOf, 0)
	tb.ShareLen() // its readers call Len
	var mu sync.Mutex
	const stable = 64
	for i := range stable {
		k := fmt.Sprint("s", i)
		tb.Put(&entry{key: k, val: i}, tb.Hash(k))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var misses, badLens atomic.Int64
	const maxChurn = 1 + 6*300 // the most keys a round adds
	for r := range 2 {
		wg.Go(func() {
			for i := r; !stop.Load(); i++ {
				k := fmt.Sprint("s", i%stable)
				if e := tb.Get(k, tb.Hash(k)); e == nil || e.val != i%stable {
					misses.Add(1)
				}
				// Len is read without the writer's lock, mid-write.
				if n := tb.Len(); n < stable || n > stable+maxChurn {
					badLens.Add(1)
				}
			}
		})
	}
	rounds := 200
	if testing.Short() {
		rounds = 20
	}
	for round := range rounds {
		mu.Lock()
		n := 1 + round%7*300
		for i := range n {
			k := fmt.Sprint("c", i)
			tb.Put(&entry{key: k}, tb.Hash(k))
		}
		for i := range n {
			k := fmt.Sprint("c", i)
			tb.Delete(k, tb.Hash(k))
		}
		mu.Unlock()
	}
	stop.Store(true)
	wg.Wait()
	if got := misses.Load(); got != 0 {
		t.Fatalf("readers missed a stable key %d times, want 0", got)
	}
	if got := badLens.Load(); got != 0 {
		t.Fatalf("Len outside [%d, %d] %d times, want 0", stable, stable+maxChurn, got)
	}
	checkInvariants(t, tb)
}

func TestGetAllocatesNothing(t *testing.T) {
	tb := New[string, entry](keyOf, 0)
	for i := range 100 {
		k := fmt.Sprint(i)
		tb.Put(&entry{key: k}, tb.Hash(k))
	}
	k := "42"
	h := tb.Hash(k)
	if got := testing.AllocsPerRun(100, func() { _ = tb.Get(k, h) }); got != 0 {
		t.Fatalf("Get: %v allocs, want 0", got)
	}
}

// BenchmarkGet compares a lookup, and a read of the entry it finds, with a
// Go map holding the same entries:
// go test -bench Get -cpu 1 ./internal/table
func BenchmarkGet(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 20} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprint("key-", i)
		}
		b.Run(fmt.Sprintf("n=%d/impl=table", n), func(b *testing.B) {
			tb := New[string, entry](keyOf, 0)
			for _, k := range keys {
				tb.Put(&entry{key: k}, tb.Hash(k))
			}
			i := 0
			for b.Loop() {
				k := keys[i]
				if e := tb.Get(k, tb.Hash(k)); e == nil || e.val != 0 {
					b.Fatal("miss")
				}
				i = (i + 7919) % n
			}
		})
		b.Run(fmt.Sprintf("n=%d/impl=map", n), func(b *testing.B) {
			m := make(map[string]*entry)
			for _, k := range keys {
				m[k] = &entry{key: k}
			}
			i := 0
			for b.Loop() {
				if e := m[keys[i]]; e == nil || e.val != 0 {
					b.Fatal("miss")
				}
				i = (i + 7919) % n
			}
		})
	}
}

// TestShardSpreadsWithinShards checks that keys of one shard still spread
// over a shard's groups and tags: Shard must not reuse those bits.
func TestShardSpreadsWithinShards(t *testing.T) {
	const shards = 64
	tb := New[string, entry](keyOf, 0)
	groups := map[uint64]bool{}
	tags := map[uint64]bool{}
	for i := range 100_000 {
		h := tb.Hash(fmt.Sprint(i))
		if Shard(h, shards) != 5 {
			continue
		}
		groups[h&255] = true
		tags[tagOf(h)] = true
	}
	if len(groups) < 250 {
		t.Errorf("keys of one shard cover %d of 256 groups, want nearly all", len(groups))
	}
	if len(tags) != 128 {
		t.Errorf("keys of one shard use %d of 128 tags, want all", len(tags))
	}
}

// TestSelfEqual: the key types whose values may not equal themselves (a
// NaN, or something holding one), which callers must keep out of a table.
func TestSelfEqual(t *testing.T) {
	type plain struct {
		a int
		b string
		c [2]uint8
	}
	type withFloat struct {
		a int
		f [1]float32
	}
	type withAny struct{ v any }
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"int", SelfEqual[int](), true},
		{"string", SelfEqual[string](), true},
		{"pointer", SelfEqual[*int](), true},
		{"struct of ints and strings", SelfEqual[plain](), true},
		{"empty array of floats", SelfEqual[[0]float64](), true},
		{"float64", SelfEqual[float64](), false},
		{"float32", SelfEqual[float32](), false},
		{"complex64", SelfEqual[complex64](), false},
		{"any", SelfEqual[any](), false},
		{"error", SelfEqual[error](), false},
		{"array of floats", SelfEqual[[3]float64](), false},
		{"struct holding a float array", SelfEqual[withFloat](), false},
		{"struct holding an interface", SelfEqual[withAny](), false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("SelfEqual[%s]() = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestPrefetchTakesAnyHash(t *testing.T) {
	tb := New[string, entry](keyOf, 0)
	for _, n := range []int{0, 1, 100, 5000} {
		for i := range n {
			tb.Put(&entry{key: fmt.Sprint(i)}, tb.Hash(fmt.Sprint(i)))
		}
		// Every hash maps to a group of the current array: an index out
		// of range panics.
		for _, h := range []uint64{0, 1, 1 << 63, ^uint64(0), tb.Hash("x")} {
			tb.Prefetch(h)
		}
		if got, want := tb.Len(), n; got != want {
			t.Fatalf("Len = %d after Prefetch, want %d", got, want)
		}
		tb.Clear()
	}
}

// TestShareLen: a table with ShareLen counts in both fields, so Len read
// from another goroutine while the writer inserts and deletes sees a count
// the writer had (the race detector checks that the read is atomic), and
// the writer's own count matches after every write, shared or not.
func TestShareLen(t *testing.T) {
	for _, shared := range []bool{false, true} {
		tb := New[string, entry](keyOf, 0)
		if shared {
			tb.ShareLen()
		}
		stop := make(chan struct{})
		done := make(chan int)
		if shared {
			go func() {
				most := 0
				for {
					select {
					case <-stop:
						done <- most
						return
					default:
						most = max(most, tb.Len())
					}
				}
			}()
		}
		const n = 2000
		for i := range n {
			k := fmt.Sprintf("k%d", i)
			tb.Put(&entry{key: k}, tb.Hash(k))
			if got := tb.Len(); got != i+1 {
				t.Fatalf("shared %v: Len after %d inserts = %d, want %d", shared, i+1, got, i+1)
			}
		}
		for i := range n {
			k := fmt.Sprintf("k%d", i)
			tb.Delete(k, tb.Hash(k))
			if got, want := tb.Len(), n-i-1; got != want {
				t.Fatalf("shared %v: Len after %d deletes = %d, want %d", shared, i+1, got, want)
			}
		}
		close(stop)
		if shared {
			if most := <-done; most > n {
				t.Fatalf("reader saw Len %d, more than the %d entries ever held", most, n)
			}
		}
	}
}
