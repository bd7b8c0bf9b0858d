// Package timingwheel runs callbacks after delays, for very many timers at
// once, with one goroutine and constant-time set, move and remove.
//
// Two layers are exported. [TimingWheel] is keyed: SetTimer(key, value,
// delay), MoveTimer, RemoveTimer, Remaining, Drain, Stop, Shutdown, with at most one timer per
// key, in the shape of go-zero's collection.TimingWheel but typed and exact.
// [Scheduler] is the handle layer under it: callers embed a [Timer] in their
// own entries and schedule it directly, with no key index and no allocation;
// the cache and idletimeout packages use it.
//
// # Model
//
// Each wheel is plain data owned by one goroutine, which reads the clock,
// fires what is due and sleeps until the next deadline: an idle wheel, even
// with a million far-off timers, does not wake every interval.
//
// The keyed wheel's index of keys is not the owner's: it is sharded on the
// callers' side, so SetTimer, MoveTimer, RemoveTimer, Len and Has act at
// once under one shard's lock and never wait for the owner; a later
// deadline is only recorded in the timer (MoveTimer does that without a
// lock), and the owner rechecks it when the old one comes. A new timer, an
// earlier deadline or a removal changes the wheel itself: the shard queues
// it, and the owner takes every shard's queue whenever it wakes. A caller
// wakes the owner only when its change cannot wait for that: a deadline
// before the owner's next wake-up, or a queue 256 long; a removal waits at
// most about a second, or one interval if that is longer (under
// WithTicker, until the next tick). Every wake-up of the owner therefore
// locks each shard (twice: when it wakes and before it sleeps), O(shards)
// per wake-up. Scheduler's Schedule, ScheduleAt and Cancel are queued the same
// way (by Timer); its Len and the keyed wheel's Drain go to the owner over
// a buffered channel and wait.
//
// # Guarantees
//
//   - Never early. A timer set at time t with delay d > 0 fires at the first
//     tick at or after t+d; a delay shorter than one interval fires on the
//     next tick. SetTimer, MoveTimer and Scheduler.Schedule measure the
//     delay from the caller's own reading of the clock, so a deadline does
//     not drift later while the change waits for the owner (under
//     WithTicker, from the tick at which the owner takes the change).
//   - At most one interval late, plus the time the owner needs to reach the
//     timer (scheduling latency, or a backlog of many timers due together).
//   - Time is read, not counted. The wheel advances by the clock's elapsed
//     time, so a stalled process catches up on every tick it missed, in
//     order, instead of drifting.
//   - Exactly once per arming. A timer that is removed, moved or drained never
//     fires from its old place; a removed timer releases its value at once
//     and its key when the owner unlinks it: within about a second, or one
//     interval if that is longer (sooner once 256 changes have queued in
//     its shard), not when its slot comes up.
//   - No stall. Keyed calls never wait for the owner. When very many
//     timers fall due together, the owner works through them in slices
//     (see [WithBatch]) and serves queued changes and Scheduler commands
//     between slices.
//   - Callbacks of the keyed wheel run on worker goroutines (see
//     [WithConcurrency]) and may call the wheel; Scheduler callbacks run on
//     the owner goroutine. Panics and runtime.Goexit calls are recovered
//     and reported (see [Panic]); no other timer is lost and no tick is
//     skipped.
//   - Everything works inside a testing/synctest bubble.
//
// # Slots, cursor, circle and diff
//
// Time is counted in ticks of one interval since the wheel started. A timer
// due at tick w lives in slot w mod numSlots. The cursor is the tick being
// processed; a slot is scanned on a tick when something in it may be due.
// Seen from the cursor, a timer's diff is how many slots ahead its slot is,
// and its circle is how many full rotations it waits beyond that: both follow
// from the one absolute deadline w, so they can never drift apart (go-zero
// keeps them as separate counters and moves land a whole rotation off).
//
//	numSlots = 8, interval = 10ms, cursor at tick 13 (slot 5)
//
//	         cursor
//	           v
//	 slot:  0  1  2  3  4  5  6  7
//	       [ ][ ][ ][ ][ ][*][ ][A]     A: due at tick 23
//	                                       diff   = 7-5  = 2 slots ahead
//	                                       circle = (23-15)/8 = 1 rotation more
//
// Worked example. At tick 13 (130ms) SetTimer(A, 95ms) asks for 225ms, so A
// is due at tick ceil(22.5) = 23 and goes to slot 23 mod 8 = 7. Slot 7 comes
// under the cursor at tick 15, but nothing in it is due before 23, so it is
// not even scanned then. At tick 14 (140ms) MoveTimer(A, 200ms) asks for
// 340ms, tick 34: a later deadline only rewrites A's due tick, A stays in slot
// 7 (circle and diff are repositioned lazily, with no relinking). At tick 23,
// slot 7's turn, A is found not yet due and relinked to slot 34 mod 8 = 2,
// where it fires at tick 34 (340ms). Had the move been earlier, A would have
// been relinked at once. Either way the move is O(1).
//
// # Costs
//
// SetTimer, MoveTimer and RemoveTimer are O(1) on the owner goroutine, and
// each wake-up of the owner costs O(shards) lock acquisitions to collect
// the queued changes (shards = 8 x GOMAXPROCS, between 8 and 256); a
// timer waiting for later rotations is touched at most once per rotation,
// and only when something in its slot is due. Finding the next slot to scan
// costs O(numSlots), once per scanned slot. Memory is one small Timer per
// pending timer plus, for the keyed wheel, one map entry.
package timingwheel
