package timingwheel

// handoff is one shard's list of work for the owner goroutine, used by the
// keyed layer (timers to place) and the Scheduler (commands to apply). It
// is guarded by its shard's lock. A caller that adds to a quiet list sends
// the shard's index on the driver's ready channel after unlocking; the
// owner then takes the whole list at once. signalled stays set from that
// send until the owner takes the list for it, so each shard is in the
// ready channel at most once and the send never blocks.
type handoff[E any] struct {
	items     []E
	signalled bool
}

// addLocked appends e and reports whether the caller must signal the owner.
func (h *handoff[E]) addLocked(e E) (notify bool) {
	h.items = append(h.items, e)
	if h.signalled {
		return false
	}
	h.signalled = true
	return true
}

// takeLocked returns the list and replaces it with spare, which the owner
// got back from recycle. fromReady is true when the owner takes the list
// for the shard's signal, which lets the shard signal again; false when it
// takes it early (a barrier), and the signal is still in the channel.
func (h *handoff[E]) takeLocked(spare []E, fromReady bool) []E {
	items := h.items
	h.items = spare[:0]
	if fromReady {
		h.signalled = false
	}
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
