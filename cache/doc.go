// Package cache is a concurrent, generic LRU cache whose entries expire
// after a TTL, with the timing wheel of package timingwheel as its expiry
// engine.
//
//	c, err := cache.New(cache.Options[string, *User]{TTL: time.Minute, Limit: 100_000})
//	...
//	defer c.Close()
//	u, err := c.Take(id, func() (*User, error) { return db.LoadUser(id) })
//
// # Model
//
// Keys are hashed once with a seeded hash/maphash hash, which picks both
// the shard (from bits the table does not use) and the key's place in the
// shard's index: about eight shards per processor, fewer for a small
// Limit. Each shard has one sync.Mutex for writers, an open-addressing
// index of its nodes (internal/table: a one-byte tag and a pointer per
// slot, read without any lock), and a circular LRU list through its nodes
// ordered by last write. A node is the entry: key, value, deadline, access
// mark and LRU links live in one allocation; the timingwheel.Timer that
// expires it lives in a small expiry object that the wheel links directly
// (no second index), and that outlives its node when an eviction hands it
// over to the node that replaces the victim.
//
//	shard i:  Mutex | table: [tags|*node ×8] groups | LRU sentinel | limit | loads in flight
//	                                    |
//	node:     prev next | stamp | val | exp | key | value
//	           \__ LRU    \__ *V: &value or a box
//	expiry:   Timer{next prev when Value=*expiry} | n (*node, nil once retired)
//	           \__ linked into a wheel slot
//
//	stamp = deadline<<2 | dead<<1 | mark   (deadline in ns since New)
//
// A node keeps its key for life and is never reused for another key: a
// lock-free reader that finds it by its key can trust the key, and reaches
// the value through val, an atomic pointer. The first value of a V without
// pointers is stored inline in the node and val points to it; an
// overwrite, and every value of a V with pointers, is a separate box that
// one atomic store of val replaces. Nothing a reader may be copying is ever
// written again, so a reader racing a write gets the old value or the new
// one, whole. A removed node's val is nil.
//
// One goroutine, the wheel's owner, reclaims expired entries; writers
// queue work for it (batched per wheel shard, never waiting) only to arm a
// new entry's timer, to arm an earlier deadline (also when an evicted
// entry's timer goes to its replacement), or to cancel the timer of a
// deleted entry, and always after releasing the shard lock. Reads never reach it, and take no lock.
//
// # Guarantees
//
//   - Never expired. Get, Take, All and Range compare the entry's deadline
//     with the monotonic clock, read once per lookup that finds an entry
//     (or per yielded entry), and never return an entry whose deadline is
//     at or before that reading: the staleness bound is zero, not one
//     tick. A reader racing a write of its key returns the value before or
//     after it, never one past its deadline. An entry written
//     at t with ttl d has deadline t+d exactly (times the jitter factor if
//     Options.Jitter is set).
//   - Never removed early. The expiry engine removes an entry only when,
//     under the shard lock, the entry is still the key's current one and its
//     current deadline has passed. A deadline pushed later by a write is
//     only recorded in the node; when the timer fires early relative to
//     it, the callback re-arms the timer for the remainder without using
//     the channel.
//   - Reclaimed on time. An expired entry is removed, and its value
//     released, at most one Options.Resolution after its deadline, plus the
//     time the engine needs to work through entries due at the same tick
//     (it serves writers between slices of them). Until then Len counts it,
//     Get does not return it, and a write or eviction that meets it reports
//     it as Expired. A deleted, evicted or overwritten value is released at
//     once, even while the wheel or a reader still references the node (a
//     V without pointers stays inline in its node, pinning nothing else).
//   - One key, one atomic unit. Insert, overwrite, delete, eviction and
//     expiry of a key happen under its shard lock; wheel commands are sent
//     after the unlock, and races between them are harmless by
//     construction. The expiry callback is authoritative: it removes the
//     node its expiry currently times only if that node's deadline has
//     passed, and otherwise re-arms the timer for the remainder. The
//     writer that sends a Schedule rechecks the expiry's current node and
//     deadline once the send has returned and follows up with a Schedule
//     for an earlier deadline recorded meanwhile, or a Cancel if the
//     expiry was retired meanwhile, so the last command the wheel applies
//     for a timer is never a stale one (the wheel's Schedule also moves
//     timers later). A live node therefore always has its timer armed by
//     its deadline or a command on its way, and a retired timer never
//     stays armed. go-zero's lost timer, where Del cancels after unlocking
//     and a racing Set keeps an entry that never expires, cannot happen
//     (TestRacingWritesAllExpire, TestArmRaces).
//   - Bounded. With a Limit, the total never exceeds Limit: the limit is
//     split exactly across the shards (the first Limit mod n shards hold one
//     more), and inserting a key into a full shard first evicts one entry of
//     that shard. A shard may therefore evict while another has room, so
//     a full cache holds slightly fewer than Limit entries (99.9% of 1M
//     in the bench module's fill); a Limit under 128 uses a single shard.
//   - NaN keys are not stored. A key not equal to itself (a float NaN,
//     or a struct, array or interface holding one) could never be found
//     again, so writes of it are dropped and Take loads it without storing
//     (see Cache); it never breaks a shard nor counts towards Limit.
//   - Callbacks without locks. OnEvict never runs under a cache lock nor on
//     the wheel's goroutine; see Options.OnEvict for which goroutine runs it.
//
// # Eviction: CLOCK within a shard
//
// A shard's list is ordered by last write (Set, or a load's store): the
// head is the most recent. Get and a Take hit set the entry's access mark
// with one atomic OR, only if it is not set, without any lock, so readers
// never serialize on a list update and a hot entry's line is written once
// per write or second chance, not per read. To make room, the shard
// looks at the tail: an expired entry goes (reason Expired); an entry
// with its mark set loses the mark and moves to the head (its second
// chance); the first entry without a mark goes (reason Evicted). Each
// mark cleared was paid for by a read, so the loop is amortized O(1). The
// result approximates LRU per shard: an entry is evicted only after it has
// gone unread for a full pass of the shard's list. Across shards the order
// is only statistically LRU.
//
// # Take
//
// Take is a load-through with single flight: concurrent Takes of one key
// run fetch once and all receive its result. Errors are returned to every
// waiter and never cached; a panic reaches every waiter as a *PanicError
// and the loading goroutine re-panics; a Set or Delete of the key during
// the load wins over the loaded value, which is returned but not stored.
// TakeCtx lets each waiter give up on its own context.
//
// # Lifetime
//
// Close stops the wheel and the event goroutine and waits for them. A
// Cache dropped without Close is closed by a runtime.AddCleanup cleanup
// once it is unreachable (the goroutines reference only its inner state),
// unless an OnEvict closure keeps the Cache itself reachable. Inside a
// testing/synctest bubble there is no such cleanup (it would run outside
// the bubble); the bubble reports a cache left open when its test ends.
//
// # Memory per entry
//
// One node (16 bytes of LRU links, 8 of stamp, 8 of value pointer, 8 of
// expiry pointer, plus the key and the inline value, rounded up to a size
// class), one expiry (the Timer's 32 bytes and a node pointer: the 48-byte
// class) and one table slot (9 bytes, divided by the table's load, which
// is between 7/16 and 7/8, so 10 to 21 bytes per entry). For uint64 keys
// and values the node is the 64-byte class, and 1M entries hold about 118
// bytes each without the 16 bytes of payload (bench module,
// BenchmarkCacheBytesPerEntry). A V with pointers adds a box of its own
// size per entry. An overwrite allocates one box; an insertion allocates
// one node, plus an expiry unless it evicts (an evicted node is not reused,
// since readers may still hold it, but its expiry is). The tables shrink
// as entries expire or are deleted (to at most 8 slots per entry), so
// memory follows the population down as well as up.
//
// # Costs
//
// Get: one maphash of the key, one table probe (a tag word and the
// matching nodes), one monotonic clock read when an entry is found (about
// 20-30ns on a virtualized clock source; Get is exact instead of trusting
// a coarse clock that a stalled goroutine could leave behind), at most one
// atomic OR, and one atomic add on the caller's counter stripe (striped by
// the goroutine's stack address, so concurrent readers rarely share one).
// No lock, no channel, no allocation.
// Set of an existing key: Lock, table probe, one value box, list move,
// Unlock; a wheel command only when the new deadline is earlier. Set of a
// new key: one node (and expiry) and one Schedule; into a full shard,
// the victim's removal, and its expiry handed to the new node (no Schedule
// at all unless the new deadline is earlier than the victim's). Touch:
// Lock, table probe, one atomic store, Unlock; no wheel command unless
// jitter made the deadline earlier. Delete: one Cancel. A wheel command is
// an append to a list under one of the wheel's shard locks; it wakes the
// wheel's goroutine only when it cannot wait for that goroutine's next
// wake-up (see the timingwheel package), so under load the wheel wakes
// about once per Resolution. Hit and miss counters take 32 stripes of
// 128 bytes at GOMAXPROCS=2, 16 per processor up to 512 stripes (64 KiB
// per cache). A table that grows or shrinks is
// rebuilt under the shard lock in O(slots), while readers go on in the
// old array.
package cache
