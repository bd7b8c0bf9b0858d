package timingwheel

import "time"

// The transitions of a Timer's deadline word (see Timer.word and
// doc/design/timingwheel-protocol.md): callers arm, move later and cancel;
// the owner takes the inboxes, resolves relative deadlines and settles
// firings.

// relative encodes a delay for the owner to convert (WithTicker only).
func relative(delay time.Duration) int64 { return relativeTop - int64(min(delay, maxDelay)) }

// later is the lock-free half of arming: if t is armed at a deadline no
// later than want, it swaps in want and reports true. The Timer sits no
// later than its old deadline (or in an inbox), and the owner relinks it
// when it meets it there. Racing with the owner's settle swap, it either
// lands first (the settle fails and the owner looks again) or finds t
// firing or dead and reports false.
func later[T any](t *Timer[T], want int64) bool {
	if want <= relativeTop {
		return false // only the owner can compare a relative deadline
	}
	for {
		old := t.deadline()
		if old <= dead || want < old {
			return false
		}
		if t.casDeadline(old, want) {
			return true
		}
	}
}

// armLocked stores want (from callerDeadline or deadlineAt) in t's state
// and appends t to its inbox b unless the owner need not act: a deadline
// no earlier than an armed one is lazy, as in later. The deadline and the
// queued bit are stored by one compare-and-swap, not one for each (a
// RemoveTimer of a pending key took a quarter longer with two). It reports
// whether the caller must signal the owner after unlocking. b.mu is held.
func (d *driver[T]) armLocked(b *inbox[T], t *Timer[T], want int64) (notify bool) {
	for {
		w := t.word.Load()
		if old := w >> 1; old > dead && want >= old {
			if t.word.CompareAndSwap(w, want<<1|w&1) {
				return false
			}
			continue
		}
		if t.word.CompareAndSwap(w, want<<1|1) {
			return b.addLocked(t, w&1 != 0, d.urgent(want))
		}
	}
}

// cancelLocked stores dead in t's state. An armed t is counted as removed
// and appended to its inbox b, for the owner to unlink; a firing one will
// not be re-armed by its callback's result. As in armLocked, one
// compare-and-swap stores the state and the queued bit. It reports whether
// the caller must signal the owner after unlocking. b.mu is held.
func (d *driver[T]) cancelLocked(b *inbox[T], t *Timer[T]) (notify bool) {
	for {
		w := t.word.Load()
		if old := w >> 1; old == dead || old == firing {
			if t.word.CompareAndSwap(w, dead<<1|w&1) {
				return false
			}
			continue
		}
		if t.word.CompareAndSwap(w, dead<<1|1) {
			b.removed++
			return b.addLocked(t, w&1 != 0, d.removalUrgent())
		}
	}
}

// resolve returns t's deadline, converting a relative deadline (WithTicker)
// into a tick counted from the owner's current one. Owner only.
func (d *driver[T]) resolve(t *Timer[T]) int64 {
	for {
		s := t.deadline()
		if s > relativeTop {
			return s
		}
		if abs := d.after(time.Duration(relativeTop - s)); t.casDeadline(s, abs) {
			return abs
		}
	}
}

// place applies what t's deadline word asks of the wheel, for a Timer
// taken from an inbox: unlink a dead one, (re)link any other at its
// deadline. Owner only.
func (d *driver[T]) place(t *Timer[T]) {
	if s := d.resolve(t); s > dead {
		d.w.relink(t)
		return
	}
	d.tookRemoval = true
	d.w.cancel(t)
}

// fire is the wheel's callback for a Timer whose slot has come, already
// unlinked: it relinks a Timer whose deadline moved later, drops a
// cancelled one, and otherwise settles the firing with one swap of the
// deadline to firing and hands t to the layer. After the layer, a swap of
// firing to the re-arm tick (or to dead) fails if a caller stored state
// meanwhile: a cancel or a Schedule made during the callback wins. Owner
// only.
func (d *driver[T]) fire(l layer[T], t *Timer[T]) int64 {
	now := d.w.scanAt
	var due int64
	for {
		due = d.resolve(t)
		if due <= dead {
			return 0 // cancelled; its inbox entry says so too
		}
		if due > now {
			return due
		}
		if t.casDeadline(due, firing) {
			break
		}
	}
	if rearm := l.fire(t, due); rearm > 0 && t.casDeadline(firing, rearm) {
		return rearm
	}
	t.casDeadline(firing, dead)
	return 0
}

// placeAll places Timers taken from an inbox, after its unlock: each
// one's queued bit is cleared just before its state is read, so a change
// made before the clear (which found the bit set and appended nothing) is
// placed here, and one made after it appends the Timer again. Owner only.
func (d *driver[T]) placeAll(items []*Timer[T]) {
	for _, t := range items {
		t.word.And(^1)
		d.place(t)
	}
}

// takeAll places the Timers of every inbox and reports whether there were
// any. Owner only.
func (d *driver[T]) takeAll(l layer[T]) bool {
	took := false
	for i := range d.shards {
		b := l.inbox(i)
		if b == nil {
			continue
		}
		b.mu.Lock()
		items := b.takeLocked(d.spare)
		d.st.st.Removed += b.removed
		b.removed = 0
		b.mu.Unlock()
		if items == nil {
			continue
		}
		took = true
		d.placeAll(items)
		clear(items) // hold no removed Timer
		d.spare = items[:0]
	}
	return took
}
