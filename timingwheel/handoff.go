package timingwheel

// handoff is one shard's list of work for the owner goroutine, used by the
// keyed layer (timers to place) and the Scheduler (commands to apply). It
// is guarded by its shard's lock.
//
// The owner takes every shard's list each time it wakes and once more
// before it goes to sleep, so most work needs no signal: a timer due no
// earlier than the owner's next wake-up (driver.pickup) is placed in time
// anyway. A caller signals only for urgent work (due before that wake-up;
// see driver.urgent) or when the list has grown to lazyBatch items, which
// bounds the memory a list holds. Removals are never urgent: while the
// owner sleeps long, the first one nudges it instead (driver.removed).
// Signalling sends the
// shard's index on the driver's ready channel after unlocking. signalled
// stays set from that send until the owner takes the list for it, so each
// shard is in the ready channel at most once and the send never blocks.
type handoff[E any] struct {
	items     []E
	signalled bool
}

// lazyBatch is the list length at which work that is not urgent is
// signalled all the same.
const lazyBatch = 256

// addLocked appends e and reports whether the caller must signal the owner.
func (h *handoff[E]) addLocked(e E, urgent bool) (notify bool) {
	h.items = append(h.items, e)
	return h.wantLocked(urgent)
}

// wantLocked reports whether the caller must signal the owner for work just
// added, or already in the list and now urgent; if so, the shard counts as
// signalled from here on.
func (h *handoff[E]) wantLocked(urgent bool) bool {
	if h.signalled || !urgent && len(h.items) < lazyBatch {
		return false
	}
	h.signalled = true
	return true
}

// takeLocked returns the list and replaces it with spare, which the owner
// got back from recycle; an empty list is left in place and nil returned.
// fromReady is true when the owner takes the list for the shard's signal,
// which lets the shard signal again; false when it takes it unprompted,
// and a signal may still be in the channel.
func (h *handoff[E]) takeLocked(spare []E, fromReady bool) []E {
	if fromReady {
		h.signalled = false
	}
	if len(h.items) == 0 {
		return nil
	}
	items := h.items
	h.items = spare[:0]
	return items
}

// recycle clears a processed list for reuse as the next spare, giving back
// what a burst grew.
func recycle[E any](items []E) []E {
	if cap(items) > 4096 {
		return nil
	}
	clear(items)
	return items[:0]
}
