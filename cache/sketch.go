package cache

import "math/bits"

// sketch estimates how often each key was used lately: a count-min sketch
// of 4-bit counters that forgets by halving. It is the admission test's
// memory of keys that are not in the cache as well as of those that are.
//
// Layout. The counters live in 64-byte blocks of eight words, sixteen
// 4-bit counters a word. A key's hash picks one block, and in it one
// counter in each of four rows: row i owns words i and i+4 of the block,
// and the hash picks the word and the counter in it. Counting or
// estimating a key therefore touches one cache line. An estimate is the
// smallest of the key's four counters, which overestimates only when all
// four collide with other keys' counters.
//
// Forgetting. Counters saturate at 15. After sample increments (ten per
// entry the sketch was sized for), every counter is halved, so that a key
// that was popular long ago does not keep out the keys of today, and a
// count of 15 means "used at least 15 times in the last few samples".
//
// Size. A sketch for n entries takes one word per entry (n rounded up to a
// power of two, at least one block): 8 bytes an entry. A shard's sketch
// is made when the shard is first half full and grows with the shard's
// population, so a bounded cache that stays small pays nothing for it.
//
// Guarded by the shard lock.
type sketch struct {
	table []uint64
	mask  uint64 // blocks - 1
	adds  int    // increments since the last halving
	limit int    // increments between halvings
	cap   int    // the entries it was sized for
}

const (
	sketchBlock = 8 // words per block: one cache line
	// halveMask keeps the low three bits of each 4-bit counter after a
	// shift right by one: a halving of all sixteen counters of a word.
	halveMask = 0x7777_7777_7777_7777
)

// init sizes s for about n entries, discarding its counts.
func (s *sketch) init(n int) {
	words := 1 << bits.Len(uint(max(n, sketchBlock)-1))
	s.table = make([]uint64, words)
	s.mask = uint64(words/sketchBlock - 1)
	s.adds = 0
	s.cap = n
	s.limit = 10 * max(n, 1)
}

// spread mixes h, the key's table hash, so that the sketch does not use the
// bits the table and the shard choice use (see table.Shard).
func spread(h uint64) uint64 {
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 32
	return h
}

// slot returns the word index and the bit offset of row i's counter for the
// spread hash x.
func (s *sketch) slot(x uint64, i int) (word int, shift uint) {
	block := int(x&s.mask) * sketchBlock
	r := x >> (32 + 5*i) // 5 bits per row from the top half of x
	return block + i + 4*int(r&1), uint(r>>1&15) * 4
}

// estimate returns the key's count, 0 to 15.
func (s *sketch) estimate(h uint64) int {
	if s.table == nil {
		return 0
	}
	x := spread(h)
	m := 15
	for i := range 4 {
		w, sh := s.slot(x, i)
		m = min(m, int(s.table[w]>>sh&15))
	}
	return m
}

// add counts n uses of the key in each of its four counters, halving every
// counter when a sample is complete. (A conservative update, growing only
// the counters at the key's minimum, estimates more exactly but lost 2.4
// points of hit ratio on the LIRS loop trace: see TestTraceHitRatio.
// Counters shared with other keys make ties between similar keys likelier,
// and a tie keeps the incumbent.)
func (s *sketch) add(h uint64, n int) {
	if s.table == nil || n <= 0 {
		return
	}
	x := spread(h)
	var words [4]int
	var shifts [4]uint
	m := 15
	for i := range 4 {
		words[i], shifts[i] = s.slot(x, i)
		m = min(m, int(s.table[words[i]]>>shifts[i]&15))
	}
	if m == 15 {
		return
	}
	for i := range 4 {
		if c := int(s.table[words[i]] >> shifts[i] & 15); c < 15 {
			s.table[words[i]] += uint64(min(c+n, 15)-c) << shifts[i]
		}
	}
	s.adds += n
	if s.adds >= s.limit {
		s.halve()
	}
}

// halve divides every counter by two.
func (s *sketch) halve() {
	for i, w := range s.table {
		s.table[i] = w >> 1 & halveMask
	}
	s.adds /= 2
}
