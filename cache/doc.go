// Package cache is a concurrent, generic cache whose entries expire after a
// TTL, with an optional size limit (frequency-aware eviction, W-TinyLFU)
// and load-through with single flight.
//
//	c, err := cache.New(cache.Options[string, *User]{TTL: time.Minute, Limit: 100_000})
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	u, err := c.Take(id, func() (*User, error) { return db.LoadUser(id) })
//	c.Set(id, u)        // restarts the TTL
//	u, ok := c.Get(id)  // ok is false once the TTL has passed
//	c.Delete(id)
//
// In plain words:
//
//   - Never stale. Get, Take, All and Range never return an entry whose TTL
//     has passed, not even by one tick: they compare its deadline with the
//     clock themselves. Each Set restarts the TTL; Touch does so without a
//     new value.
//   - Bounded. With a Limit, the cache never holds more than Limit entries,
//     not even for an instant: an insertion into a full cache first evicts
//     one, chosen by how often and how recently entries were used
//     (W-TinyLFU), so that a key used once never displaces one used often.
//   - Take loads a missing key once, however many goroutines ask for it at
//     the same time; errors are returned to all of them and not cached.
//   - Memory comes back. Expired entries are removed within one Resolution
//     of their deadline; a deleted, evicted or overwritten value is
//     released at once. Close stops the cache's goroutines; a cache dropped
//     without Close is closed after garbage collection.
//
// The options that matter ([Options]): TTL (required), Limit, Jitter to
// spread the expiry of entries written together, Resolution (how soon
// expired entries are reclaimed; default TTL/100), and OnEvict to hear
// about every entry that leaves, with the reason. Besides Get and Set:
// Peek (a read that is not a use), GetOrSet and SetIfAbsent, Remaining (the
// time an entry has left), Clear, and the iterators All, Keys and Values.
//
// Costs: a Get takes no lock, sends on no channel, allocates nothing and
// reads the clock once when it finds an entry. A Set of an existing key
// takes one shard lock; a new key also queues one timer for the expiry
// engine. About 118 bytes per entry besides the key and value (uint64 keys
// and values, a million entries). How it works is in doc/design.md.
//
// # Guarantees
//
//   - Never expired. A lookup reads the monotonic clock once when it finds
//     an entry (once per yielded entry for All and Range) and never returns
//     an entry whose deadline is at or before that reading. A reader racing
//     a write of its key returns the value before or after it, whole, never
//     one past its deadline. An entry written at t with ttl d has deadline
//     t+d exactly (times the jitter factor if Options.Jitter is set).
//   - Never removed early. The expiry engine removes an entry only when it
//     is still the key's current one and its current deadline has passed.
//   - Reclaimed on time. An expired entry is removed, and its value
//     released, at most one Options.Resolution after its deadline, plus the
//     time the engine needs to work through entries due at the same tick.
//     Until then Len counts it, Get does not return it, and a write or
//     eviction that meets it reports it as Expired.
//   - One key, one atomic unit. Insert, overwrite, delete, eviction and
//     expiry of a key are serialized, and no interleaving of them leaves
//     an entry that never expires (go-zero's lost timer, where Del races a
//     Set, cannot happen: TestRacingWritesAllExpire, TestArmRaces).
//   - Bounded. With a Limit, the total never exceeds Limit. The limit is
//     split across shards, so a shard may evict while another has room: a
//     full cache holds slightly fewer than Limit entries (99.9% of 1M in
//     the bench module's fill). A Limit under 128 uses a single shard.
//   - NaN keys are not stored. A key not equal to itself (a float NaN,
//     or a struct, array or interface holding one) could never be found
//     again, so writes of it are dropped and Take loads it without storing
//     (see Cache); it never breaks a shard nor counts towards Limit.
//   - Callbacks cannot break the cache. A panic in OnEvict is recovered and
//     reported to Options.OnPanic; a runtime.Goexit in it does not stop
//     the delivery of later events.
//   - Callbacks without locks. OnEvict never runs under a cache lock nor on
//     the expiry engine's goroutine; see Options.OnEvict for which goroutine
//     runs it.
//
// # Eviction
//
// With a Limit, each shard runs W-TinyLFU: a new entry enters a small
// window kept in recency order; an entry pushed out of the window is
// admitted to the main space only if a frequency sketch has seen its key
// more often than the entry main would evict, and the main space keeps
// entries read again (protected) apart from those on probation. A key used
// once therefore never displaces a key used often, a scan passes through
// the window, and a loop over more keys than the Limit keeps a stable part
// of itself instead of always evicting the key that comes next. The
// window's share of the Limit adapts by hill climbing on the hit ratio: a
// workload where recency wins grows it (towards LRU), one where frequency
// wins shrinks it. Replayed on five real traces (database, search, web,
// file system and loop; see TestTraceHitRatio), the mean hit ratio is
// 45.5% where an exact LRU gets 42.7% and otter 44.4%.
//
// Reads take no lock for this: Get adds one to a small counter in the
// entry, which stops at 15, so a hot entry costs readers no write at all
// most of the time. The shard looks at the counters only when it needs
// room, under its lock, at the old end of its queues (as CLOCK does with
// its mark), and adds them to the sketch then. The design and its
// measurements are in doc/design.md.
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
// Close stops the expiry engine and the event goroutine and waits for
// them. A Cache dropped without Close is closed by a runtime.AddCleanup
// cleanup once it is unreachable, unless an OnEvict closure keeps the
// Cache itself reachable. Inside a testing/synctest bubble there is no
// such cleanup (it would run outside the bubble); the bubble reports a
// cache left open when its test ends.
//
// # Costs
//
// Get: one hash of the key, one lookup in the shard's index, one monotonic
// clock read when an entry is found (20-30ns on a virtualized clock
// source: the price of never returning a stale entry), at most one atomic
// compare-and-swap on the entry's read counter (none once it reaches 15,
// none without a Limit), and one atomic add on a striped hit counter. No
// lock, no channel, no allocation.
//
// Set of an existing key: one shard lock and one value allocation; the
// expiry engine hears of it only when the new deadline is earlier. Set of
// a new key: one new entry and one queued timer; into a
// full shard, the victim's removal and, unless the new deadline is
// earlier, no timer work at all. Touch: one shard lock, no allocation.
// Delete: one queued cancellation. Queued timer work wakes the engine's
// goroutine only when it cannot wait for its next wake-up, so under load
// the engine wakes about once per Resolution.
//
// Memory per entry: about 118 bytes besides the 16 bytes of key and value,
// for uint64 keys and values at a million entries (bench module,
// BenchmarkCacheBytesPerEntry), plus a box of V's size when V holds
// pointers. The index shrinks as entries expire
// or are deleted, so memory follows the population down as well as up.
// An empty cache takes about 13 KiB at GOMAXPROCS=64 (most of it its
// wheel): shards are made when a key first reaches them (one per
// processor, fewer for a small Limit), and the hit and miss counters start
// with four stripes of 128 bytes and grow only when concurrent readers
// collide, up to 16 per processor (TestSmallCachesStaySmall).
package cache
