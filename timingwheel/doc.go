// Package timingwheel runs callbacks after delays, for very many timers at
// once: one goroutine drives them all, and setting, moving or removing a
// timer is O(1) in the caller's goroutine and never waits for that one.
//
//	tw, err := timingwheel.New(time.Second, 3600, func(id string, s *Session) {
//		s.Expire() // on a worker goroutine
//	})
//	if err != nil {
//		return err
//	}
//	defer tw.Stop()
//	tw.SetTimer(id, s, 30*time.Minute) // at most one timer per key
//	tw.MoveTimer(id, 30*time.Minute)   // activity: push the deadline later
//	tw.RemoveTimer(id)                 // logout: it will not fire
//
// A timer fires on the first tick at or after its delay has passed: never
// early, and at most one interval late, plus scheduling latency or a
// backlog of timers due together. The wheel reads the clock instead of
// counting ticks, so it never drifts and catches up after a stall, and it
// sleeps until the next deadline, so an idle wheel costs nothing. Callbacks
// run on up to GOMAXPROCS worker goroutines, concurrently and in no
// guaranteed order; they may call the wheel. A panicking callback is
// recovered and reported, and no other timer is lost.
//
// The options that matter: [WithConcurrency](1) runs callbacks one at a
// time in firing order, [WithInline] runs quick ones on the wheel's own
// goroutine, [WithPanicHandler] decides where panics go, and [WithTicker]
// steps the wheel by hand in tests.
//
// [TimingWheel] is keyed, in the shape of go-zero's collection.TimingWheel
// but typed and exact. [Scheduler] is the same wheel and owner protocol
// without the key index, for code that embeds a [Timer] in its own
// entries: no allocation per schedule (the cache and idletimeout packages
// use it). A caller that shards its own data can guard each shard with one
// of the Scheduler's [Queue] locks, and schedule under it with no second
// lock (the cache does). How both work is in doc/design/timingwheel.md.
//
// # Choosing interval and numSlots
//
// interval is the precision: a timer fires up to one interval after its
// deadline. Pick the lateness you can accept, say a second for session
// expiry or 10ms for request retries. A busy wheel wakes about once per
// interval, so a finer interval costs more wake-ups under load (an idle
// one sleeps whatever the interval).
//
// interval × numSlots is one rotation, the horizon of the wheel's finest
// level. Delays longer than that are supported and just as exact; a delay
// within it is the cheapest to keep. Size numSlots so that one rotation
// covers your common delays: 3600 slots of a second cover an hour. Each
// slot costs a list head (the size of one Timer) and 8 bytes, allocated by
// New, and the owner's search for the next slot to scan grows with
// numSlots, so hundreds to a few thousand slots is the useful range (New
// refuses more than [MaxSlots]); a power of two saves a division per
// placement.
//
// # Guarantees
//
//   - Never early. A timer set at time t with delay d > 0 fires at the first
//     tick at or after t+d; a delay shorter than one interval fires on the
//     next tick, once. The delay is measured from the caller's own reading
//     of the clock (under WithTicker, from the tick at which the wheel
//     takes the change).
//   - At most one interval late, plus the time the owner goroutine needs to
//     reach the timer (scheduling latency, or a backlog of many timers due
//     together).
//   - Time is read, not counted: a stalled process catches up on every
//     tick it missed, in order.
//   - Exactly once per arming. A timer that is removed, moved or drained
//     never fires from its old place. A removed timer releases its value at
//     once and its key within about a second (or one interval if that is
//     longer).
//   - No stall. SetTimer, MoveTimer, RemoveTimer, Len and Has never wait for
//     the owner goroutine, and take effect at once for every later call.
//     When very many timers fall due together, the owner works through them
//     in slices (see [WithBatch]) and places new timers between slices.
//   - Callbacks of the keyed wheel run on worker goroutines (see
//     [WithConcurrency]); Scheduler callbacks run on the owner goroutine.
//     Panics and runtime.Goexit calls are recovered and reported to the
//     panic handler as a [*PanicError] (see [WithPanicHandler]).
//   - Everything works inside a testing/synctest bubble.
//
// # Costs
//
// SetTimer, MoveTimer and RemoveTimer are O(1) in the caller's goroutine:
// a lookup in a sharded key index and one shard lock (8 × GOMAXPROCS
// shards, 8 to 256, each allocated when first used), and for MoveTimer to
// a later deadline no lock at all, one compare-and-swap. A new timer, an
// earlier deadline or a removal is also appended to the shard's inbox,
// which the owner takes whole when it wakes: O(shards) per wake-up, not
// per call. A timer due beyond one rotation waits in coarser levels and
// is moved down as its time approaches: it is looked at once per level at
// most (a handful in all, whatever the delay). Memory: one Timer per
// pending timer (48 bytes for a string key and an int value) plus a
// 9-byte index slot at 7/16 to 7/8 load, about 67 bytes per timer at a
// million.
//
// # The owner protocol in eleven names
//
// Timer (its links are the owner's, Value the caller's); the deadline
// word (one atomic word per Timer: a tick, dead, firing, or under
// WithTicker a relative delay, and the queued bit); the inbox of each
// shard (a new timer, an earlier deadline or a cancel stores the deadline
// and appends the Timer once); lazy later (a later deadline is one CAS);
// the settle CAS (a due tick → firing decides a firing; firing → dead or
// the re-arm afterwards, unless a caller stored meanwhile); the owner loop
// (take the inboxes, advance by slices, sleep until the next visit);
// pickup and ready (a change due before the owner's published wake-up
// signals it); lazy removal (a cancel waits up to lazyWait, or until 256
// changes queue); the relative deadline (WithTicker only); the owner's
// restart after a Goexit; call (Scheduler.Len's wait for the owner). The
// picture, and the 27 names they replace, are in
// doc/design/timingwheel-protocol.md.
//
// # Observing
//
// [TimingWheel.Stats] and [Scheduler.Stats] return the pending count and
// what the owner goroutine did: timers fired and removed, its wake-ups,
// the largest batch fired at once and a histogram of how late timers
// fired. The owner keeps these counters itself, so SetTimer, MoveTimer
// and RemoveTimer pay nothing for them.
package timingwheel
