package timingwheel

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// never is the visit tick of an empty slot and the deadline of nothing.
const never = math.MaxInt64

// Timer is one entry of a wheel: the handle-level unit that a [Scheduler]
// schedules and that the keyed [TimingWheel] keeps one of per key.
//
// A Timer carries its own list links and its deadline, so scheduling,
// moving and cancelling it allocate nothing and need no second index.
// Callers create a Timer (the zero value is ready, and unscheduled), set
// Value, and hand its address to a Scheduler; from then on its other
// fields belong to the Scheduler and must not be touched by anyone else.
// Value is written by the caller before the first Schedule and read by the
// fire callback; Schedule hands the Timer over with a lock or an atomic
// operation that the owner goroutine synchronizes with, which orders the
// two.
//
// A Timer must not be copied after its first Schedule, nor handed to two
// Schedulers. It may be embedded in the caller's own structure.
type Timer[T any] struct {
	next, prev *Timer[T] // slot list links; nil while not linked (owner only)
	// word is the deadline word, deadline<<1 | queued. The deadline is
	// the tick the timer is due at (> 0), dead (not armed), firing (the
	// owner is running its callback), or, under WithTicker, a delay the
	// owner has still to convert (<= relativeTop). Callers change it
	// atomically, and only ever to a later tick for a Timer they do not
	// hand to the owner (see inbox), so a linked Timer's slot comes up no
	// later than its deadline; the owner fires the timer only by swapping
	// a due tick to firing. The queued bit says the Timer is in an
	// inbox, or taken from one and not yet placed: a caller sets it under
	// the inbox's lock, the owner clears it just before it reads the
	// state to place the Timer. One word holds both so that a Timer costs
	// no more than its links, a word and Value.
	word atomic.Int64

	// Value is the caller's payload, typically a pointer back to the
	// structure that embeds the Timer.
	Value T
}

// The values of a Timer's deadline that are not ticks.
const (
	dead        = 0  // not armed: never scheduled, cancelled, or fired
	firing      = -1 // the owner won the settle swap and runs the callback
	relativeTop = -2 // state <= relativeTop is relativeTop - delay (WithTicker)
)

// deadline returns t's deadline: a tick, dead, firing or relative.
func (t *Timer[T]) deadline() int64 { return t.word.Load() >> 1 }

// queued reports whether t is in its inbox. Inbox lock held.
func (t *Timer[T]) queued() bool { return t.word.Load()&1 != 0 }

// setDeadline stores deadline v, keeps the queued bit, and returns the
// deadline it replaced.
func (t *Timer[T]) setDeadline(v int64) (old int64) {
	for {
		w := t.word.Load()
		if t.word.CompareAndSwap(w, v<<1|w&1) {
			return w >> 1
		}
	}
}

// casDeadline replaces deadline old with v, keeping the queued bit, and
// reports whether the deadline was old.
func (t *Timer[T]) casDeadline(old, v int64) bool {
	for {
		w := t.word.Load()
		if w>>1 != old {
			return false
		}
		if t.word.CompareAndSwap(w, v<<1|w&1) {
			return true
		}
	}
}

// scheduled reports whether t sits in a slot list (or the scan list).
func (t *Timer[T]) scheduled() bool { return t.next != nil }

// unlink removes t from whatever list holds it. O(1).
func (t *Timer[T]) unlink() {
	t.prev.next = t.next
	t.next.prev = t.prev
	t.next, t.prev = nil, nil
}

// initSentinel makes head an empty circular list.
func (head *Timer[T]) initSentinel() { head.next, head.prev = head, head }

// empty reports whether the sentinel head has no entries.
func (head *Timer[T]) empty() bool { return head.next == head }

// pushBack links t at the tail of the list whose sentinel is head. O(1).
func (head *Timer[T]) pushBack(t *Timer[T]) {
	t.prev = head.prev
	t.next = head
	head.prev.next = t
	head.prev = t
}

// wheel is the pure core: plain data advanced by an explicit tick, with no
// goroutines, channels or clocks. Time is measured in whole ticks since the
// wheel's origin; a timer with deadline tick w fires during the first advance
// whose now is at least w, and never on an earlier tick.
//
// Levels. Level 0 has n slots of one tick each; every coarse level 1..top
// has m = 2^b slots, each as wide as the whole level below (level L's slot
// is n*m^(L-1) ticks). Every level is aligned on its own span: level 0
// covers the block of n ticks that holds cur, level L the block of n*m^L
// ticks that holds cur. A timer due at tick w sits at the lowest level whose
// block holding cur also holds w, in the slot that holds w. So level 0 holds
// what is due in cur's own block of n ticks, and a timer further off waits
// in one coarse slot that covers its deadline. When the cursor reaches the
// first tick of a coarse slot, the slot is emptied: what is due on that tick
// fires, the rest moves down a level or more. A timer is therefore touched
// at most once per level in its life, whatever the delay and the traffic.
// The top level has no block above it: its slot for w is taken modulo m,
// and a timer more than one top rotation away goes back into the same slot
// when the slot comes up. The production shape (newWheel) has enough levels
// for every int64 deadline, so there the top level never wraps.
//
// Deadlines are absolute. The timer keeps only its deadline tick and its
// list links: level and slot are derived from the deadline and cur, so they
// cannot disagree with each other (go-zero's circle and diff can).
//
// Lazy moves later. Moving a scheduled timer to a later tick only rewrites
// its deadline: the timer stays where it is, which comes up no later than
// the old deadline, and is placed again, at whatever level, when it does.
// Moving it earlier relinks it at once. Either way the work is O(1).
//
// Visits and occupancy. Each level keeps a bitmap of its non-empty slots.
// Every set bit is for a slot that starts after cur; a slot's bit is
// cleared when the slot is visited, not when its last timer is cancelled
// (a stale bit costs one empty visit, never a missed timer). The lowest
// level with a bit set holds the earliest visit, so finding the next slot
// reads at most n/64 words of level 0 and one word per coarse level.
//
// nextVisit is the next tick at which advance has work: a timer due, or a
// coarse slot to move down (which may fire nothing yet). An owner sleeps
// until then, advances, and sleeps again until the new nextVisit.
type wheel[T any] struct {
	// slots holds level 0's n sentinel heads, and coarse[L-1] the m heads
	// of coarse level L, made when a timer first goes there: most wheels
	// use one or two of their coarse levels, and an empty wheel should be
	// small. A slot's index (see place) counts level 0's n slots, then m
	// slots for each coarse level 1..top in turn.
	slots  []Timer[T]
	coarse [][]Timer[T]
	// occ holds the occupancy bitmaps: level 0's words0 words, then one
	// word per coarse level.
	occ    []uint64
	words0 int

	n     int64 // slots of level 0
	shift int   // log2(n) when n is a power of two, else -1
	b     int   // log2(m)
	m     int64 // slots per coarse level, at most 64
	top   int   // the highest level; coarse levels are 1..top

	// cur is the last tick processed: every timer due at or before cur has
	// been fired, except those still on the scan list. Deadlines at or before
	// cur are clamped to cur+1. curQ is cur's block of n ticks, cur / n.
	cur, curQ int64
	// next caches the earliest visit; it may be smaller than the true
	// earliest (after a cancel), never larger.
	next int64

	// scan holds the detached contents of the slot being visited at tick
	// scanAt, so a visit can stop after any entry and resume later.
	scan   Timer[T]
	scanAt int64

	count int // scheduled timers, including those on the scan list
}

// levelBits is log2 of the slots per coarse level in production: 64 slots,
// so one word of occupancy per level.
const levelBits = 6

// newWheel returns a wheel of numSlots base slots with enough coarse levels
// of 64 slots that every deadline up to MaxInt64 has its own level below
// the top, so nothing ever wraps around the top level.
func newWheel[T any](numSlots int) *wheel[T] {
	// Deadlines are below 2^63, so their block numbers (tick / n) have at
	// most 63 - floor(log2 n) bits; each coarse level takes levelBits.
	qbits := 63 - (bits.Len64(uint64(numSlots)) - 1)
	return newWheelShape[T](numSlots, levelBits, max(1, (qbits+levelBits-1)/levelBits))
}

// newWheelShape returns a wheel of numSlots base slots and top coarse levels
// of 2^levelBits slots each. Tests use small shapes, where the top level
// wraps.
func newWheelShape[T any](numSlots, levelBits, top int) *wheel[T] {
	n, m := int64(numSlots), int64(1)<<levelBits
	words0 := (numSlots + 63) / 64
	w := &wheel[T]{
		slots:  make([]Timer[T], n),
		coarse: make([][]Timer[T], top),
		occ:    make([]uint64, words0+top),
		words0: words0,
		n:      n,
		shift:  -1,
		b:      levelBits,
		m:      m,
		top:    top,
		next:   never,
	}
	if numSlots&(numSlots-1) == 0 {
		w.shift = bits.TrailingZeros64(uint64(numSlots))
	}
	for i := range w.slots {
		w.slots[i].initSentinel()
	}
	w.scan.initSentinel()
	return w
}

// head returns the sentinel of slot idx (an index as place returns), or
// nil for a slot of a coarse level not made yet, which holds nothing.
func (w *wheel[T]) head(idx int) *Timer[T] {
	if idx < int(w.n) {
		return &w.slots[idx]
	}
	c := int64(idx) - w.n
	lv := w.coarse[c>>w.b]
	if lv == nil {
		return nil
	}
	return &lv[c&(w.m-1)]
}

// headFor is head for a slot about to receive a timer: it makes the slot's
// coarse level if need be.
func (w *wheel[T]) headFor(idx int) *Timer[T] {
	if h := w.head(idx); h != nil {
		return h
	}
	lv := make([]Timer[T], w.m)
	for i := range lv {
		lv[i].initSentinel()
	}
	c := int64(idx) - w.n
	w.coarse[c>>w.b] = lv
	return &lv[c&(w.m-1)]
}

// heads calls f with the index and sentinel of every slot made so far.
func (w *wheel[T]) heads(f func(idx int, head *Timer[T])) {
	for i := range w.slots {
		f(i, &w.slots[i])
	}
	for l, lv := range w.coarse {
		for i := range lv {
			f(int(w.n)+l*int(w.m)+i, &lv[i])
		}
	}
}

// block returns the number of the block of n ticks that holds tick.
func (w *wheel[T]) block(tick int64) int64 {
	if w.shift >= 0 {
		return tick >> w.shift
	}
	return tick / w.n
}

func (w *wheel[T]) setCur(tick int64) {
	w.cur = tick
	w.curQ = w.block(tick)
}

// place returns the level, the index into slots and the visit tick of the
// slot where a timer due at tick when (after cur) belongs.
func (w *wheel[T]) place(when int64) (level, idx int, at int64) {
	q := w.block(when)
	if q == w.curQ {
		return 0, int(when - q*w.n), when
	}
	// The lowest coarse level whose block holds both: the highest bit in
	// which the two block numbers differ, counted in levels of b bits.
	level = min(1+(bits.Len64(uint64(q^w.curQ))-1)/w.b, w.top)
	sh := w.b * (level - 1)
	i := (q >> sh) & (w.m - 1)
	idx = int(w.n + int64(level-1)*w.m + i)
	if level < w.top {
		return level, idx, (q >> sh << sh) * w.n
	}
	return level, idx, w.topVisit(i)
}

// topVisit returns the first tick after cur at which top-level slot i
// starts.
func (w *wheel[T]) topVisit(i int64) int64 {
	sh := w.b * (w.top - 1)
	cr := w.curQ >> sh
	d := (i - cr) & (w.m - 1)
	if d == 0 {
		d = w.m
	}
	return (cr + d) << sh * w.n
}

// link places an unlinked timer in the slot for tick when (clamped after
// cur). It does not write t's deadline word: when is the word, or a tick
// no later than it. O(1).
func (w *wheel[T]) link(t *Timer[T], when int64) {
	if when <= w.cur {
		when = w.cur + 1
	}
	level, idx, at := w.place(when)
	w.headFor(idx).pushBack(t)
	if level == 0 {
		w.occ[idx>>6] |= 1 << (idx & 63)
	} else {
		w.occ[w.words0+level-1] |= 1 << ((int64(idx) - w.n) & (w.m - 1))
	}
	if at < w.next {
		w.next = at
	}
}

// schedule arms t to fire at tick when (clamped after cur), whether or not
// it is already scheduled. A later deadline for a scheduled timer only
// rewrites its deadline word; an earlier one relinks it. O(1).
func (w *wheel[T]) schedule(t *Timer[T], when int64) {
	when = max(when, w.cur+1)
	if t.scheduled() && when >= t.deadline() {
		t.setDeadline(when) // lazy: placed again when its current slot comes up
		return
	}
	t.setDeadline(when)
	w.relink(t)
}

// relink places t by its deadline word, linked or not: for a Timer whose
// word a caller has changed. O(1).
func (w *wheel[T]) relink(t *Timer[T]) {
	if t.scheduled() {
		t.unlink()
	} else {
		w.count++
	}
	w.link(t, t.deadline())
}

// cancel unschedules t and reports whether it was scheduled. O(1). The
// slot's occupancy bit is left as it is: a stale bit costs one empty visit,
// never a missed timer.
func (w *wheel[T]) cancel(t *Timer[T]) bool {
	if !t.scheduled() {
		return false
	}
	t.unlink()
	w.count--
	return true
}

// advance processes every tick up to now in order, visiting the slots that
// start on those ticks: a timer whose deadline word is after the visited
// tick moves to where it now belongs, any other is handed to fire (a dead
// one too: fire decides). fire runs after the timer has been unlinked;
// when it returns rearm > 0 the timer is linked again for tick rearm
// (clamped after the tick being processed), which fire has stored in its
// deadline word or which is no later than that word.
//
// At most budget entries are examined; advance reports whether work for
// ticks up to now remains, in which case the caller calls it again (possibly
// after scheduling, moving or cancelling timers in between: the wheel stays
// consistent at every entry boundary). A panicking fire leaves the wheel
// consistent too: the timer it was given is already unlinked and counted out.
func (w *wheel[T]) advance(now int64, budget int, fire func(t *Timer[T]) (rearm int64)) (more bool) {
	for {
		if w.scan.empty() && !w.startScan(now) {
			if now > w.cur {
				w.setCur(now)
			}
			return false
		}
		if budget <= 0 {
			return true
		}
		t := w.scan.next
		t.unlink()
		budget--
		if when := t.deadline(); when > w.scanAt {
			w.link(t, when) // not due: it belongs further on
			continue
		}
		w.count--
		if rearm := fire(t); rearm > 0 && !t.scheduled() {
			w.count++
			w.link(t, rearm)
		}
	}
}

// startScan detaches the slot with the earliest visit if that visit is due
// by now, and reports whether it did. It reads at most n/64 words of level
// 0's bitmap and one word per coarse level for each slot it looks at.
func (w *wheel[T]) startScan(now int64) bool {
	for {
		at, idx := w.first()
		w.next = at
		if at > now {
			return false
		}
		w.setCur(at)
		if idx < int(w.n) {
			w.occ[idx>>6] &^= 1 << (idx & 63)
		} else {
			level := 1 + (int64(idx)-w.n)>>w.b
			w.occ[int64(w.words0)+level-1] &^= 1 << ((int64(idx) - w.n) & (w.m - 1))
		}
		head := w.head(idx) // made: its bit was set
		if head.empty() {
			continue // a stale bit left by cancel
		}
		// Splice the whole slot onto the scan list.
		w.scan.next, w.scan.prev = head.next, head.prev
		head.next.prev = &w.scan
		head.prev.next = &w.scan
		head.initSentinel()
		w.scanAt = at
		return true
	}
}

// first returns the earliest visit tick and its slot's index, or never. The
// lowest level with a bit set holds it: every bit of a level is for a slot
// of cur's block at that level, after cur, and a coarse slot starts no
// earlier than the next block of the level below.
func (w *wheel[T]) first() (at int64, idx int) {
	c := w.cur - w.curQ*w.n // cur's slot in level 0; every set bit is after it
	for k := int(c+1) >> 6; k < w.words0; k++ {
		if x := w.occ[k]; x != 0 {
			i := k<<6 + bits.TrailingZeros64(x)
			return w.curQ*w.n + int64(i), i
		}
	}
	for level := 1; level <= w.top; level++ {
		x := w.occ[w.words0+level-1]
		if x == 0 {
			continue
		}
		base := int(w.n) + (level-1)*int(w.m)
		if level == w.top {
			// Circular: the first slot after cur's, else the lowest.
			sh := w.b * (w.top - 1)
			cr := (w.curQ >> sh) & (w.m - 1)
			i := int64(bits.TrailingZeros64(x))
			if after := x &^ (2<<cr - 1); after != 0 {
				i = int64(bits.TrailingZeros64(after))
			}
			return w.topVisit(i), base + int(i)
		}
		i := bits.TrailingZeros64(x)
		sh := w.b * level
		start := (w.curQ>>sh<<sh + int64(i)<<(sh-w.b)) * w.n
		return start, base + i
	}
	return never, -1
}

// nextVisit returns the tick at which advance next has work, or never: a
// timer due, or a coarse slot whose timers move down a level (which may
// fire nothing yet). It may be earlier than that after a cancel, never
// later.
func (w *wheel[T]) nextVisit() int64 {
	if !w.scan.empty() {
		return w.scanAt
	}
	return w.next
}

// drain unlinks every scheduled timer and calls f for each. O(slots +
// timers).
func (w *wheel[T]) drain(f func(t *Timer[T])) {
	take := func(head *Timer[T]) {
		for !head.empty() {
			t := head.next
			t.unlink()
			w.count--
			f(t)
		}
	}
	take(&w.scan)
	w.heads(func(_ int, head *Timer[T]) { take(head) })
	clear(w.occ)
	w.next = never
}
