// Package cache is a concurrent, generic in-process cache. Entries expire
// after a TTL (fixed, given per entry by the loader, or sliding), an
// optional Limit bounds it (frequency-aware eviction, W-TinyLFU), and a
// loader set once fills it: single flight per key, bulk loads, reloads in
// the background, remembered "not found".
//
//	c, err := cache.New(cache.Options[int, *User]{
//		TTL:          10 * time.Minute,
//		Limit:        100_000,
//		RefreshAfter: 5 * time.Minute,  // older: reloaded in the background on a read
//		NotFoundTTL:  30 * time.Second, // "no such user" is remembered too
//		Loader: func(ctx context.Context, id int) (cache.Loaded[*User], error) {
//			u, err := db.User(ctx, id)
//			if errors.Is(err, sql.ErrNoRows) {
//				return cache.Loaded[*User]{NotFound: true}, nil
//			}
//			return cache.Loaded[*User]{Value: u}, err // Loaded.TTL: expiry from the value
//		},
//	})
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	u, err := c.Load(ctx, id)      // cached, loaded once for all callers, or ErrNotFound
//	us, err := c.LoadAll(ctx, ids) // the misses in one BulkLoader call
//	c.Set(id, u)                   // restarts the TTL
//	u, ok := c.Get(id)             // a plain read: never loads, never stale
//	c.Compute(id, func(old *User, found bool) (*User, cache.Action) { ... })
//
// Which to use:
//
//   - Get and Set when you fill the cache yourself; Load with
//     Options.Loader when the cache should fill itself from one source,
//     plus Options.BulkLoader and LoadAll when the source answers many
//     keys in one query; Take when each call site fetches its own way
//     (go-zero's Take).
//   - RefreshAfter when hot keys must never wait for a reload: readers
//     get the current value while one background reload runs; TTL still
//     bounds how stale a value can get.
//   - Loaded.TTL when the source says how long a value is good (a
//     max-age, a token's expiry); ExpireAfterAccess for sessions, which
//     live while they are used.
//   - NotFoundTTL when lookups of absent keys are frequent (or driven by
//     strangers): they stop reaching the source.
//   - Compute for a read-modify-write of one key (a counter, a merge),
//     atomic without a lock of your own.
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
//   - One load per key. Load, LoadAll and Take load a missing key once,
//     however many goroutines ask for it at the same time and however
//     their calls overlap; errors are returned to all of them and never
//     cached. A Set or Delete during a load wins over it.
//   - Memory comes back. Expired entries are removed within one Resolution
//     of their deadline; a deleted, evicted or overwritten value is
//     released at once. Close stops the cache's goroutines; a cache dropped
//     without Close is closed after garbage collection.
//
// The options that matter ([Options]): TTL (required), Limit, or MaxWeight
// with a Weigher to bound the total weight (bytes, say) instead, the
// loading options above, Jitter to spread the expiry of entries written
// together, Resolution (how soon expired entries are reclaimed; default
// TTL/100), and OnEvict to hear about every entry that leaves, with the
// reason. Stats counts hits, misses, loads, failures, load time, refreshes
// and removals by reason (see Stats for how a caller that waited for
// another's load counts). Besides Get and Set:
// Peek (a read that is not a use), GetOrSet and SetIfAbsent, Remaining (the
// time an entry has left), Clear, and the iterators All, Keys and Values.
//
// Costs: a Get takes no lock, sends on no channel, allocates nothing and
// reads the clock once when it finds an entry. A Set of a new key takes
// one shard lock, allocates one entry and queues one timer for the expiry
// engine. An overwrite with a later deadline (the common case) goes in
// place, without the lock or the engine: an 8-byte V without pointers or
// a V of one pointer allocates nothing, any other V one box for the
// value, from the entry's second write on (its first replaces the entry).
// About 51 bytes per entry besides the key and value (uint64 keys and
// values, unbounded), 80 with a Limit. How it works is in doc/design/cache.md.
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
//     With MaxWeight, the total weight never exceeds it, split the same
//     way.
//   - NaN keys are not stored. A key not equal to itself (a float NaN,
//     or a struct, array or interface holding one) could never be found
//     again, so writes of it are dropped and Take loads it without storing
//     (see Cache); it never breaks a shard nor counts towards Limit.
//   - Callbacks cannot break the cache. A panic in OnEvict is recovered and
//     reported to Options.OnPanic, with the event, as a
//     *timingwheel.PanicError; a runtime.Goexit in it is reported too and
//     does not stop the delivery of later events.
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
// 46.0% where an exact LRU gets 42.7% and otter 44.4%.
//
// Reads take no lock for this: Get adds one to a small counter in the
// entry, which stops at 15, so a hot entry costs readers no write at all
// most of the time. The shard looks at the counters only when it needs
// room, under its lock, at the old end of its queues (as CLOCK does with
// its mark), and adds them to the sketch then. The design and its
// measurements are in doc/design/cache.md.
//
// # Loading
//
// Load, LoadAll, Take and background reloads share one load per key at a
// time: a caller that finds no live value either starts the key's load
// or waits for the one in flight. Errors are returned to every waiter and
// never cached; a panic reaches every waiter as a *timingwheel.PanicError and the
// loading goroutine re-panics (a background reload reports it to
// OnRefreshError instead); a Set or Delete of the key during the load wins
// over the loaded value, which is returned but not stored. Each waiter
// gives up on its own context. Take and TakeCtx take the fetch function
// per call; Load and LoadAll use Options.Loader and Options.BulkLoader,
// whose Loaded result also carries the entry's TTL or "not found".
//
// A refresh (RefreshAfter, or Refresh) reloads a live entry on a goroutine
// the cache owns, with a context Close cancels; Close waits for it. A read
// of an entry due for refresh takes no lock, whether or not its reload is
// running. A failed reload keeps the old value until its deadline.
//
// Compute holds the key, not a lock, while its function runs: it
// registers as the key's load in flight, so Computes and loads of one key
// take turns, while reads and writes of the key, and everything on other
// keys, go on.
//
// # Lifetime
//
// Close stops the expiry engine and the event goroutine, cancels the
// context of background reloads, and waits for all of them. A Cache dropped without Close is closed by a runtime.AddCleanup
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
// lock, no channel, no allocation. With ExpireAfterAccess, the same clock
// reading gives the new deadline, stored with one compare-and-swap at
// most once per Resolution per entry; with RefreshAfter, a due entry
// costs one more lock-free index lookup (the reloads in flight).
//
// Set of an existing key: one shard lock, one new entry that takes the
// old one's place, one queued timer and one queued cancellation (of the
// old entry's timer); for a V of 8 bytes without pointers with a later
// deadline, the usual overwrite, no lock: the entry's write bit held for
// one atomic store in place and one compare-and-swap, and nothing else. Set of a new key: one new entry and one queued
// timer; into a full shard, also the victim's removal and one queued
// cancellation. Touch: one shard lock, no allocation; the expiry engine
// hears of it only when the new deadline is earlier. Delete: one queued
// cancellation.
// Len: no lock, one atomic load per shard. The expiry engine takes an
// entry's shard lock only to unlink it, after it has loaded the entry's
// index slot without the lock, so a writer that meets the engine waits for
// that unlinking alone (an overwrite of a live 8-byte value never meets it). Queued timer work wakes the engine's
// goroutine only when it cannot wait for its next wake-up, so under load
// the engine wakes about once per Resolution.
//
// Memory per entry: about 51 bytes besides the 16 bytes of key and value,
// for uint64 keys and values at 47k-160k entries (bench module,
// BenchmarkCacheBytesPerEntry): a 48-byte entry that holds its own timer,
// deadline and value, and its index slot (about 15 bytes). With a Limit
// the entry also holds the policy's queue links: 64 bytes. String keys
// and []byte values take a 72-byte entry (the 80-byte size class), 88
// with a Limit (the 96 class). A full bounded
// cache adds about 12 bytes of frequency sketch per entry (8 bytes per
// entry of its Limit, rounded up to a power of two per shard, made when a
// shard is first half full). The index shrinks as entries expire
// or are deleted, so memory follows the population down as well as up.
// An empty cache takes about 13 KiB at GOMAXPROCS=64 (most of it its
// wheel): shards are made when a key first reaches them (one per
// processor, fewer for a small Limit), and the hit and miss counters start
// with four stripes of 128 bytes and grow only when concurrent readers
// collide, up to 16 per processor (TestSmallCachesStaySmall).
package cache
