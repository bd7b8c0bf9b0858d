package timingwheel

import "math"

// never is the visit tick of an empty slot and the deadline of nothing.
const never = math.MaxInt64

// Timer is one entry of a wheel: the handle-level unit that a [Scheduler]
// schedules and that the keyed [TimingWheel] keeps one of per key.
//
// A Timer carries its own list links, so scheduling, moving and cancelling it
// allocate nothing and need no second index. Callers create a Timer (the zero
// value is ready), set Value, and hand its address to a Scheduler; from then
// on the links and the deadline belong to the Scheduler's owner goroutine and
// must not be touched by anyone else. Value is written by the caller before
// the first Schedule and read by the fire callback; Schedule hands the
// Timer over under a lock that the owner takes too, which orders the two.
//
// A Timer must not be copied after its first Schedule, nor handed to two
// Schedulers.
type Timer[T any] struct {
	next, prev *Timer[T] // slot list links; nil while not scheduled
	when       int64     // absolute tick at which the timer is due

	// Value is the caller's payload, typically a pointer back to the
	// structure that embeds the Timer.
	Value T
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
// whose now is at least w.
//
// Placement. A timer due at tick w lives in slot w mod n. The slot therefore
// encodes the "diff" (where in a rotation the timer lands) and w itself the
// "circle" (how many rotations remain when the slot is visited): both are
// derived from one absolute number, so they can never disagree with each
// other or with the cursor, which is how go-zero's moves go a rotation off.
//
// Lazy moves later. Moving a scheduled timer to a later tick only rewrites w:
// the timer stays in its slot, which is visited no later than the old
// deadline, and is relinked into its proper slot on that visit. Moving it
// earlier relinks it at once. Either way the work is O(1).
//
// Visits. visit[s] is a lower bound on the first tick at which slot s must be
// scanned: the minimum, over the slot's timers, of the last tick congruent to
// s that is not after the timer's deadline. A scan fires what is due and
// relinks the rest into their proper slots, so a timer waiting for later
// rotations is touched at most once per rotation, and only when something in
// its slot is due. A slot with nothing due is never scanned, and an owner can
// sleep until the smallest visit.
type wheel[T any] struct {
	slots []Timer[T] // sentinel heads, one per slot
	visit []int64    // per slot: lower bound of the next tick it must be scanned at; never when empty
	n     int64      // number of slots
	mask  int64      // n-1 when n is a power of two, else -1

	// cur is the last tick processed: every timer due at or before cur has
	// been fired, except those still on the scan list. Deadlines at or before
	// cur are clamped to cur+1.
	cur int64
	// next caches the smallest visit; it may be smaller than the true minimum
	// (after a cancel), never larger.
	next int64

	// scan holds the detached contents of the slot being scanned at tick
	// scanAt, so a scan can stop after any entry and resume later.
	scan   Timer[T]
	scanAt int64

	count int // scheduled timers, including those on the scan list
}

func newWheel[T any](numSlots int) *wheel[T] {
	w := &wheel[T]{
		slots: make([]Timer[T], numSlots),
		visit: make([]int64, numSlots),
		n:     int64(numSlots),
		mask:  -1,
		next:  never,
	}
	if numSlots&(numSlots-1) == 0 {
		w.mask = int64(numSlots - 1)
	}
	for i := range w.slots {
		w.slots[i].initSentinel()
		w.visit[i] = never
	}
	w.scan.initSentinel()
	return w
}

func (w *wheel[T]) slotOf(tick int64) int64 {
	if w.mask >= 0 {
		return tick & w.mask
	}
	return tick % w.n
}

// link places an unlinked timer at tick when (clamped after cur). O(1).
func (w *wheel[T]) link(t *Timer[T], when int64) {
	if when <= w.cur {
		when = w.cur + 1
	}
	t.when = when
	s := w.slotOf(when)
	w.slots[s].pushBack(t)
	if when < w.visit[s] {
		w.visit[s] = when
		if when < w.next {
			w.next = when
		}
	}
}

// schedule arms t to fire at tick when, whether or not it is already
// scheduled. A later deadline for a scheduled timer only rewrites its
// deadline; an earlier one relinks it. O(1).
func (w *wheel[T]) schedule(t *Timer[T], when int64) {
	if !t.scheduled() {
		w.count++
		w.link(t, when)
		return
	}
	if when <= w.cur {
		when = w.cur + 1
	}
	if when >= t.when {
		t.when = when // lazy: repositioned when its current slot is scanned
		return
	}
	t.unlink()
	w.link(t, when)
}

// cancel unschedules t and reports whether it was scheduled. O(1). The slot's
// visit bound is left as it is: a stale bound costs one empty scan, never a
// missed timer.
func (w *wheel[T]) cancel(t *Timer[T]) bool {
	if !t.scheduled() {
		return false
	}
	t.unlink()
	w.count--
	return true
}

// advance processes every tick up to now, firing due timers in deadline order
// of their slots' visits. fire runs for each due timer after it has been
// unlinked; when it returns rearm > 0 the timer is linked again at tick rearm
// (clamped after the tick being processed).
//
// At most budget entries are examined; advance reports whether work for
// ticks up to now remains, in which case the caller calls it again (possibly
// after scheduling, moving or cancelling timers in between: the wheel stays
// consistent at every entry boundary). A panicking fire leaves the wheel
// consistent too: the timer it was given is already unlinked and counted out.
func (w *wheel[T]) advance(now int64, budget int, fire func(t *Timer[T]) (rearm int64)) (more bool) {
	for budget > 0 {
		if w.scan.empty() {
			if !w.startScan(now) {
				if now > w.cur {
					w.cur = now
				}
				return false
			}
		}
		t := w.scan.next
		t.unlink()
		budget--
		if t.when > w.scanAt {
			w.link(t, t.when) // not due: it belongs to a later tick
			continue
		}
		w.count--
		if rearm := fire(t); rearm > 0 && !t.scheduled() {
			w.count++
			w.link(t, rearm)
		}
	}
	return !w.scan.empty() || w.next <= now
}

// startScan detaches the slot with the smallest visit if that visit is due by
// now, and reports whether it did. O(numSlots).
func (w *wheel[T]) startScan(now int64) bool {
	for w.next <= now {
		// One pass finds the smallest visit and the runner-up, which becomes
		// the cached next once the smallest slot is detached.
		best, at, second := -1, int64(never), int64(never)
		for s, v := range w.visit {
			if v < at {
				best, at, second = s, v, at
			} else if v < second {
				second = v
			}
		}
		if at > now {
			w.next = at
			return false
		}
		head := &w.slots[best]
		w.visit[best] = never
		w.next = second
		w.cur = at
		if head.empty() {
			continue // a stale bound left by cancel
		}
		// Splice the whole slot onto the scan list.
		w.scan.next, w.scan.prev = head.next, head.prev
		head.next.prev = &w.scan
		head.prev.next = &w.scan
		head.initSentinel()
		w.scanAt = at
		return true
	}
	return false
}

// nextVisit returns the tick at which advance next has work, or never.
func (w *wheel[T]) nextVisit() int64 {
	if !w.scan.empty() {
		return w.scanAt
	}
	return w.next
}

// drain unlinks every scheduled timer and calls f for each. O(n + timers).
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
	for s := range w.slots {
		take(&w.slots[s])
		w.visit[s] = never
	}
	w.next = never
}
