// Package table is an open-addressing hash index from keys to entries that
// carry their own key: a slot holds one pointer and a one-byte tag, so the
// index costs about 14 bytes per entry instead of a map slot's copy of the
// key and value.
//
// # Concurrency
//
// Lookups ([Table.Get]) take no lock and may run at any time, concurrently
// with each other and with one writer. Every other method is a write and
// must be serialized by the caller, typically with a shard mutex. A lookup
// racing with a write sees the table either before or after it, one slot
// at a time: it may return an entry that a concurrent Delete is removing,
// so callers that need to know check the entry's own state after Get.
//
// # Keys equal to themselves
//
// Every key stored must be equal to itself. A key that is not (a float NaN,
// or a struct, array or interface holding one) matches no lookup, so Put
// would add an entry that no Get, Find, Delete or DeleteEntry can reach,
// and its hash is random, so a rebuild would scatter it. Callers keep such
// keys out: [SelfEqual] tells whether a key type can hold one, and then
// key != key finds them.
//
// # Layout
//
// Slots come in groups of seven, each group one 64-byte cache line: a
// word of tags (one byte each: empty, deleted, or 0x80 | seven bits of the
// hash; the eighth byte is unused and zero) and seven entry pointers. A
// probe loads one tag word, matches the key's tag against all seven bytes
// at once, and dereferences only the entries whose tag matches; it stops
// at the first group with an empty slot. The slot a tag names is on the
// line the probe has just loaded, so finding or inserting a key costs one
// miss in a large index, not two when a group straddles lines. Groups are
// probed in triangular order, which visits every group of a power-of-two
// array once.
//
// The array is rebuilt, and published with one atomic store, when live
// entries plus deletion marks would exceed 7/8 of the slots (doubling if
// the live entries alone fill more than 3/4) and when live entries fall
// below 1/16 of a table larger than its floor (shrinking, to a load of 1/4
// to 1/2), so memory follows the population down as well as up. A rebuild
// is O(slots) under the caller's lock; lookups go on meanwhile in the old
// array, which is never written again once replaced.
package table

import (
	"hash/maphash"
	"math/bits"
	"reflect"
	"sync/atomic"
	"unsafe"
)

const (
	// groupSize is the slots per group: seven, so that a group (a tag
	// word and seven pointers) is exactly one 64-byte cache line and a
	// probe that finds a tag finds its slot on the same line. The tag
	// word's top byte is never used and stays zero.
	groupSize = 7
	tagEmpty  = 0x00
	tagDead   = 0x01 // a deleted slot: probes go on past it
	tagFull   = 0x80 // set in every full slot's tag

	lsb = 0x0101010101010101
	// lanes is the high bit of each of the seven tag bytes in use.
	lanes = 0x0080808080808080

	// minGroups is the smallest array: one group, 7 slots.
	minGroups = 1
)

type group[E any] struct {
	tags  atomic.Uint64
	slots [groupSize]atomic.Pointer[E]
}

type array[E any] struct {
	groups []group[E]
	mask   uint64 // len(groups) - 1
}

// Table maps keys to entries *E; keyOf reads an entry's key. The zero
// value is not usable: call [Table.Init] or [New].
type Table[K comparable, E any] struct {
	// What lookups read sits on cache lines of its own. Writes dirty the
	// lines around it (the counters below, and the lock a caller
	// typically keeps next to its table); were they shared, every write on
	// one core would cost lookups on the others a cache miss.
	_     [cacheLine]byte
	arr   atomic.Pointer[array[E]]
	keyOf func(*E) K
	seed  maphash.Seed
	_     [cacheLine]byte

	// n is the number of entries present. Writer only.
	n int
	// shared makes Len safe from any goroutine (see ShareLen): live then
	// follows n, stored by the writer, loaded by Len.
	shared bool
	live   atomic.Int64

	// Writer only.
	dead  int // slots marked deleted
	floor int // groups the table never shrinks below
}

// cacheLine is the padding that keeps lookups' fields apart from writers':
// two lines, because some processors fetch lines in adjacent pairs.
const cacheLine = 128

// New returns an empty table sized for about hint entries.
func New[K comparable, E any](keyOf func(*E) K, hint int) *Table[K, E] {
	t := new(Table[K, E])
	t.Init(keyOf, hint)
	return t
}

// Init makes the zero Table ready, sized for about hint entries; hint also
// sets the size the table never shrinks below.
func (t *Table[K, E]) Init(keyOf func(*E) K, hint int) {
	t.keyOf = keyOf
	t.seed = maphash.MakeSeed()
	t.floor = groupsFor(hint)
	t.arr.Store(newArray[E](t.floor))
	t.n = 0
	t.live.Store(0)
	t.dead = 0
}

// groupsFor returns the power-of-two number of groups that holds n
// entries at no more than 7/8 load.
func groupsFor(n int) int {
	slots := max(n, 1) * 8 / 7
	g := (slots + groupSize - 1) / groupSize
	if g <= minGroups {
		return minGroups
	}
	return 1 << bits.Len(uint(g-1))
}

// newArray allocates groups (a power of two) groups. The runtime places an
// array of up to 8 groups, or of 512 and more, at a multiple of 64 bytes,
// so that every group is one cache line (pinned by
// TestGroupsAreCacheLines); sizes in between carry an 8-byte allocation
// header and are off by 8, but at 16 KiB or less they stay in the
// processor's caches anyway.
func newArray[E any](groups int) *array[E] {
	return &array[E]{groups: make([]group[E], groups), mask: uint64(groups - 1)}
}

// Hash returns key's hash. Every method takes it precomputed, so a caller
// can use one hash for picking a shard and for the table; it must come from
// this table's Hash.
func (t *Table[K, E]) Hash(key K) uint64 { return maphash.Comparable(t.seed, key) }

// InitSeed is Init with a given seed, so that tables of one sharded index
// agree on every key's hash.
func (t *Table[K, E]) InitSeed(keyOf func(*E) K, hint int, seed maphash.Seed) {
	t.Init(keyOf, hint)
	t.seed = seed
}

// Shard maps a hash to one of n shards (n a power of two, at most 1<<16)
// using bits that the table itself does not use for its group index (the
// low bits) or its tags (the top seven): keys in one shard must not share
// the bits that spread them within the shard's table.
func Shard(h uint64, n int) int { return int(h>>32) & (n - 1) }

// ShareLen lets Len be called from any goroutine, at the cost of an
// atomic store on every insertion and deletion (a table whose Len only its
// writer calls saves it). Call it after Init, before the table is used.
func (t *Table[K, E]) ShareLen() { t.shared = true }

// count sets the number of entries to n. Writer only.
func (t *Table[K, E]) count(n int) {
	t.n = n
	if t.shared {
		t.live.Store(int64(n))
	}
}

// Len returns the number of entries. O(1). Writer only, unless ShareLen
// was called: then it takes no lock and may be called from any
// goroutine: during a write it returns the count before or after
// the write. O(1).
func (t *Table[K, E]) Len() int {
	if t.shared {
		return int(t.live.Load())
	}
	return t.n
}

// tagOf is the byte stored for a full slot: the hash's top seven bits.
func tagOf(h uint64) uint64 { return tagFull | h>>57 }

// matches returns a bit set with the high bit of every byte of tags equal
// to tag. It may report a false match in a byte above a true one (the
// classic SWAR borrow), which the key comparison then rejects.
func matches(tags, tag uint64) uint64 {
	x := tags ^ (lsb * tag)
	return (x - lsb) &^ x & lanes
}

// empties returns the high bit of every empty byte of tags.
func empties(tags uint64) uint64 {
	// A byte is empty iff it is zero: neither its high bit (full) nor its
	// low bit (deleted) is set. The unused top byte is not a slot.
	return ^(tags | tags<<7) & lanes
}

// Get returns the entry with key, or nil. h must be t.Hash(key). It takes
// no lock (see the package doc for what it may see during a write). O(1)
// expected.
func (t *Table[K, E]) Get(key K, h uint64) *E {
	a := t.arr.Load()
	tag := tagOf(h)
	g := h & a.mask
	for step := uint64(1); ; step++ {
		grp := &a.groups[g]
		tags := grp.tags.Load()
		for m := matches(tags, tag); m != 0; m &= m - 1 {
			i := bits.TrailingZeros64(m) >> 3
			if e := grp.slots[i].Load(); e != nil && t.keyOf(e) == key {
				return e
			}
		}
		if empties(tags) != 0 || step > a.mask {
			return nil
		}
		g = (g + step) & a.mask
	}
}

// Prefetch starts loading the group at which a probe for hash h begins,
// without waiting for it, so that a caller can overlap that cache miss
// with other work before Get, Find or Delete. It takes no lock and has no
// effect on the table's contents.
func (t *Table[K, E]) Prefetch(h uint64) {
	a := t.arr.Load()
	prefetch(unsafe.Pointer(&a.groups[h&a.mask]))
}

// find returns the group and slot index of key's entry, or ok == false and
// the first free slot (deleted or empty) on its probe sequence. Writer only.
func (t *Table[K, E]) find(a *array[E], key K, h uint64) (grp *group[E], i int, ok bool) {
	tag := tagOf(h)
	g := h & a.mask
	var free *group[E]
	freeAt := -1
	for step := uint64(1); ; step++ {
		grp := &a.groups[g]
		tags := grp.tags.Load()
		for m := matches(tags, tag); m != 0; m &= m - 1 {
			i := bits.TrailingZeros64(m) >> 3
			if e := grp.slots[i].Load(); e != nil && t.keyOf(e) == key {
				return grp, i, true
			}
		}
		if free == nil {
			// Full slots have the high bit set; free ones do not.
			if m := ^tags & lanes; m != 0 {
				free, freeAt = grp, bits.TrailingZeros64(m)>>3
			}
		}
		if empties(tags) != 0 || step > a.mask {
			return free, freeAt, false
		}
		g = (g + step) & a.mask
	}
}

// Pos is where Find looked for a key: the key's slot, or the free slot an
// insertion of it would take. It is valid until the next write.
type Pos[E any] struct {
	grp *group[E]
	i   int
}

// Find returns the entry with key (writer side), or nil and the position
// at which [Table.Insert] can add it without probing again. Writer only.
func (t *Table[K, E]) Find(key K, h uint64) (*E, Pos[E]) {
	grp, i, ok := t.find(t.arr.Load(), key, h)
	if ok {
		return grp.slots[i].Load(), Pos[E]{}
	}
	return nil, Pos[E]{grp, i}
}

// Insert adds e, whose key Find just reported absent at pos, with no write
// in between. h must be t.Hash(t.keyOf(e)). Writer only.
func (t *Table[K, E]) Insert(pos Pos[E], e *E, h uint64) {
	if pos.grp == nil || (t.n+t.dead+1)*8 > len(t.arr.Load().groups)*groupSize*7 {
		t.Put(e, h)
		return
	}
	t.insert(pos.grp, pos.i, e, h)
}

// SelfEqual reports whether every value of type K is equal to itself:
// false for floating-point and complex numbers and interfaces, and for
// arrays and structs holding one, whose values may be or hold a NaN.
func SelfEqual[K comparable]() bool { return selfEqual(reflect.TypeFor[K]()) }

func selfEqual(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.Interface:
		return false
	case reflect.Array:
		return t.Len() == 0 || selfEqual(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !selfEqual(t.Field(i).Type) {
				return false
			}
		}
	}
	return true
}

// Put stores e under its key, replacing and returning the entry that had
// the key, or nil. h must be t.Hash(t.keyOf(e)); the key must be equal to
// itself (see the package doc). Writer only. O(1)
// amortized; a rebuild is O(slots).
func (t *Table[K, E]) Put(e *E, h uint64) (old *E) {
	key := t.keyOf(e)
	a := t.arr.Load()
	grp, i, ok := t.find(a, key, h)
	if ok {
		old = grp.slots[i].Load()
		grp.slots[i].Store(e)
		return old
	}
	if grp == nil || (t.n+t.dead+1)*8 > len(a.groups)*groupSize*7 {
		t.rebuild(grownGroups(len(a.groups), t.n+1))
		a = t.arr.Load()
		grp, i, _ = t.find(a, key, h)
	}
	t.insert(grp, i, e, h)
	return nil
}

// grownGroups returns the size of the array that replaces a full one of n
// groups, once it holds live entries: twice the size if the live entries
// alone fill more than 3/4 of the slots (a growth then leaves the table
// between 3/8 and 7/16 full), otherwise the same size, which only clears
// the deletion marks: at least 1/8 of the slots are then free, so churn at
// a steady population rebuilds at most once per n*groupSize/8 writes and
// never grows the table. (Sizing for twice the entries with groupsFor
// landed just past a power of two and quadrupled the array: a table of
// 105k entries was a quarter full.)
func grownGroups(n, live int) int {
	if live*4 > n*groupSize*3 {
		return 2 * n
	}
	return n
}

// insert fills the free slot i of grp: the pointer first, then the tag, so
// that a lookup that sees the tag sees the entry.
func (t *Table[K, E]) insert(grp *group[E], i int, e *E, h uint64) {
	shift := uint(i) * 8
	tags := grp.tags.Load()
	if tags>>shift&0xff == tagDead {
		t.dead--
	}
	grp.slots[i].Store(e)
	grp.tags.Store(tags&^(0xff<<shift) | tagOf(h)<<shift)
	t.count(t.n + 1)
}

// Delete removes and returns the entry with key, or nil. Writer only.
func (t *Table[K, E]) Delete(key K, h uint64) *E {
	a := t.arr.Load()
	grp, i, ok := t.find(a, key, h)
	if !ok {
		return nil
	}
	e := grp.slots[i].Load()
	t.clearSlot(grp, i)
	t.maybeShrink(a)
	return e
}

// DeleteEntry removes e if the table holds it under its key, and reports
// whether it did. Writer only.
func (t *Table[K, E]) DeleteEntry(e *E, h uint64) bool {
	a := t.arr.Load()
	grp, i, ok := t.find(a, t.keyOf(e), h)
	if !ok || grp.slots[i].Load() != e {
		return false
	}
	t.clearSlot(grp, i)
	t.maybeShrink(a)
	return true
}

// clearSlot empties slot i of grp: the tag first, then the pointer. A
// group that already has an empty slot never made a probe go on past it,
// so the slot can become empty again; otherwise it is marked deleted.
func (t *Table[K, E]) clearSlot(grp *group[E], i int) {
	shift := uint(i) * 8
	tags := grp.tags.Load()
	mark := uint64(tagDead)
	if empties(tags) != 0 {
		mark = tagEmpty
	} else {
		t.dead++
	}
	grp.tags.Store(tags&^(0xff<<shift) | mark<<shift)
	grp.slots[i].Store(nil)
	t.count(t.n - 1)
}

// shrinkBelow is the load under which a table shrinks: one live entry per
// 16 slots. It sits far below the load a shrink leaves (1/4 to 1/2), so a
// population in steady decline, as in a mass expiry, pays for one rebuild
// per factor of 4 to 8 it loses, not per factor of 2: each rebuild holds
// the caller's lock for O(slots), and every writer behind that lock waits.
const shrinkBelow = 16

func (t *Table[K, E]) maybeShrink(a *array[E]) {
	if n := len(a.groups); n > t.floor && t.n*shrinkBelow < n*groupSize {
		t.rebuild(max(groupsFor(2*t.n), t.floor))
	}
}

// rebuild moves every entry into a fresh array of n groups and publishes
// it. The old array is left as it was for lookups still reading it.
func (t *Table[K, E]) rebuild(n int) {
	old := t.arr.Load()
	a := newArray[E](n)
	for gi := range old.groups {
		grp := &old.groups[gi]
		tags := grp.tags.Load()
		for m := tags & lanes; m != 0; m &= m - 1 {
			i := bits.TrailingZeros64(m) >> 3
			e := grp.slots[i].Load()
			h := t.Hash(t.keyOf(e))
			ng, ni := a.freeSlot(h)
			ng.slots[ni].Store(e)
			shift := uint(ni) * 8
			ng.tags.Store(ng.tags.Load() | tagOf(h)<<shift)
		}
	}
	t.dead = 0
	t.arr.Store(a)
}

// freeSlot returns the first empty slot on h's probe sequence in an array
// that has no deleted slots and no key equal to the one being placed.
func (a *array[E]) freeSlot(h uint64) (*group[E], int) {
	g := h & a.mask
	for step := uint64(1); ; step++ {
		grp := &a.groups[g]
		if m := empties(grp.tags.Load()); m != 0 {
			return grp, bits.TrailingZeros64(m) >> 3
		}
		g = (g + step) & a.mask
	}
}

// All calls f for every entry until f returns false. f must not write the
// table. Writer only.
func (t *Table[K, E]) All(f func(*E) bool) {
	a := t.arr.Load()
	for gi := range a.groups {
		grp := &a.groups[gi]
		for m := grp.tags.Load() & lanes; m != 0; m &= m - 1 {
			if !f(grp.slots[bits.TrailingZeros64(m)>>3].Load()) {
				return
			}
		}
	}
}

// Clear removes every entry and shrinks the table to its floor. Writer
// only.
func (t *Table[K, E]) Clear() {
	t.arr.Store(newArray[E](t.floor))
	t.n = 0
	t.live.Store(0)
	t.dead = 0
}

// Slots returns the number of slots, for tests and memory accounting.
// Writer only.
func (t *Table[K, E]) Slots() int { return len(t.arr.Load().groups) * groupSize }
