package cache

import (
	"hash/maphash"
	"iter"
	"log/slog"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttlkit/ttlkit/internal/bubble"
	"github.com/ttlkit/ttlkit/internal/hist"
	"github.com/ttlkit/ttlkit/internal/table"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// Cache is a concurrent cache whose entries expire after a TTL. Create
// one with New; all methods are safe for concurrent use. See the package
// documentation for the model and guarantees.
//
// A key that is not equal to itself (a float NaN, or a struct, array or
// interface holding one) could never be found again, so it is never
// stored: writes of it do nothing (OnEvict is not called), Get, Touch and
// Delete find nothing, and Take calls fetch every time, alone, and returns
// its result without storing it. Such keys never count towards Limit.
//
// A Cache holds two goroutines (the expiry engine and, with OnEvict, the
// delivery of Expired events), one more with Options.NotFoundTTL (the
// expiry engine of not-found answers), and one per background reload in
// flight. Close stops them; a Cache that
// becomes unreachable without Close is closed by a cleanup after a garbage
// collection, unless OnEvict keeps it reachable.
type Cache[K comparable, V any] struct {
	c *cache[K, V]
}

// cache is the state behind a Cache. The wheel goroutine and the delivery
// goroutine reference it, never the Cache, so that the Cache can become
// unreachable and its cleanup stop them.
type cache[K comparable, V any] struct {
	// shards are made on first use (see shardFor), so that a small cache
	// pays only for the shards its keys reach.
	shards []atomic.Pointer[shard[K, V]]
	seed   maphash.Seed // one hash picks the shard and the table slot
	reads  readCounters
	limit  int64 // Options.Limit or Options.MaxWeight, split across the shards

	// bounded: limit > 0, so reads are recorded for the policy.
	bounded bool
	climb   climber // the window share of every shard's policy

	weigher  func(K, V) int // Options.Weigher; nil without MaxWeight
	maxEntry int64          // the most one entry may weigh (with a weigher)

	// nanKeys: K can hold a value not equal to itself (a NaN), which is
	// never stored (see unstorable).
	nanKeys bool

	ttl    time.Duration
	jitter float64
	name   string
	res    time.Duration // wheel interval

	origin  time.Time                 // deadlines are nanoseconds since origin
	sched   *timingwheel.Scheduler[K] // its Timers are nodes' (see nodeOf)
	notify  *notifier[K, V]           // nil without OnEvict
	onEvict func(Event[K, V])
	onPanic func(Event[K, V], *timingwheel.PanicError)

	closeOnce sync.Once
	closed    chan struct{}

	loading[K, V] // Loader, refresh, sliding expiry, not-found answers

	beforeArm func() // tests only: runs before each Schedule queueLocked queues, under the shard lock
}

// New returns a cache configured by opts, with its expiry engine running.
// It returns an error wrapping ErrOptions if opts is invalid: TTL <= 0,
// Limit < 0, MaxWeight < 0, Limit and MaxWeight both set, MaxWeight
// without Weigher or Weigher without MaxWeight, Jitter outside [0, 1), or
// Resolution below 1ms.
func New[K comparable, V any](opts Options[K, V]) (*Cache[K, V], error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	// One of Limit and MaxWeight is set, or neither: a small bound of
	// either kind gets fewer shards.
	n := shardCount(runtime.GOMAXPROCS(0), max(int64(opts.Limit), opts.MaxWeight))
	c := &cache[K, V]{
		shards:  make([]atomic.Pointer[shard[K, V]], n),
		seed:    maphash.MakeSeed(),
		limit:   int64(opts.Limit),
		bounded: opts.Limit > 0 || opts.MaxWeight > 0,
		weigher: opts.Weigher,
		ttl:     opts.TTL,
		jitter:  opts.Jitter,
		name:    opts.Name,
		res:     opts.Resolution,
		onEvict: opts.OnEvict,
		onPanic: opts.OnPanic,
		closed:  make(chan struct{}),
		nanKeys: !table.SelfEqual[K](),
	}
	c.reads.init(runtime.GOMAXPROCS(0))
	c.initLoading(&opts)
	c.climb.init(opts.Limit)
	if opts.MaxWeight > 0 {
		c.limit = opts.MaxWeight
		c.maxEntry = min(opts.MaxWeight/int64(n), maxEntryWeight)
	}
	c.origin = time.Now()
	sched, err := timingwheel.NewScheduler(opts.Resolution, wheelSlots(opts.TTL, opts.Resolution), c.fire,
		timingwheel.WithPanicHandler(c.reportPanic), timingwheel.WithQueues(n))
	if err != nil {
		return nil, err // not reachable with validated options
	}
	c.sched = sched
	if c.onPanic == nil {
		c.onPanic = c.logPanic
	}
	if opts.OnEvict != nil {
		c.notify = newNotifier(c.evict)
	}
	w := &Cache[K, V]{c: c}
	if !bubble.Inside() {
		// A cleanup runs outside every synctest bubble and must not touch a
		// bubble's channels; inside one, the bubble reports a cache left
		// open when its test ends.
		runtime.AddCleanup(w, (*cache[K, V]).cleanup, c)
	}
	return w, nil
}

// shardCount returns the number of shards: a power of two, one per
// processor and at least 16, at most 1024, fewer when the bound (Limit or
// MaxWeight) is small, so that each shard of a bounded cache holds at
// least 64 entries or 64 of MaxWeight (and a bound under 128 gets one
// shard, so one policy sees every key). Shards are made on first use, so an
// empty cache holds only a pointer per shard; one per processor keeps the
// shards that a thousand entries reach (about 1 KiB each with their
// indexes) small next to the entries.
func shardCount(procs int, limit int64) int {
	n := 1 << bits.Len(uint(max(procs, 16)-1))
	n = min(n, 1024)
	for limit > 0 && n > 1 && limit/int64(n) < 64 {
		n >>= 1
	}
	return n
}

// wheelSlots covers one TTL with slots of one resolution, as a power of two
// in [16, 128]; longer TTLs wait in the wheel's coarser levels, which
// touch a timer at most once per level. 128 slots (40 bytes each) keep an
// empty cache's wheel small.
func wheelSlots(ttl, res time.Duration) int {
	want := min(int64(ttl/res)+1, 128)
	return max(1<<bits.Len64(uint64(want-1)), 16)
}

// hash returns key's hash, which picks its shard (shardAt) and its place
// in the shard's table.
func (c *cache[K, V]) hash(key K) uint64 { return maphash.Comparable(c.seed, key) }

// shardAt returns the shard of hash h, or nil if no write has reached it.
func (c *cache[K, V]) shardAt(h uint64) *shard[K, V] {
	return c.shards[table.Shard(h, len(c.shards))].Load()
}

// shardFor returns the shard of hash h, making it if needed. A shard made
// after Close started is closed at once: Close closes c.closed before it
// visits the shards, so either it sees the new shard or shardFor sees
// c.closed closed.
func (c *cache[K, V]) shardFor(h uint64) *shard[K, V] {
	i := table.Shard(h, len(c.shards))
	if s := c.shards[i].Load(); s != nil {
		return s
	}
	s := new(shard[K, V])
	s.mu, s.origin, s.beforeArm = c.sched.Queue(i), c.origin, &c.beforeArm
	s.init(c.shardLimit(i), c.weigher != nil, c.seed, &c.climb.frac)
	if !c.shards[i].CompareAndSwap(nil, s) {
		return c.shards[i].Load() // made by another writer meanwhile
	}
	select {
	case <-c.closed:
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
	default:
	}
	return s
}

// shardLimit returns the Limit of shard i (0 for no limit): Limit is split
// exactly, and the first Limit%n shards take one more.
func (c *cache[K, V]) shardLimit(i int) int64 {
	if c.limit == 0 {
		return 0
	}
	n := int64(len(c.shards))
	limit := c.limit / n
	if int64(i) < c.limit%n {
		limit++
	}
	return limit
}

// made returns an iterator over the shards made so far.
func (c *cache[K, V]) made() iter.Seq[*shard[K, V]] {
	return func(yield func(*shard[K, V]) bool) {
		for i := range c.shards {
			if s := c.shards[i].Load(); s != nil && !yield(s) {
				return
			}
		}
	}
}

// unstorable reports whether key is not equal to itself (a float NaN, or a
// struct, array or interface holding one). Such a key could never be found
// again, so it is never stored: a write of it is dropped and a Take of it
// loads without sharing or storing. Keeping it out of the shards keeps
// every entry findable by its key, which removal relies on.
func (c *cache[K, V]) unstorable(key K) bool { return c.nanKeys && key != key }

// now returns the time since origin in nanoseconds, from the monotonic
// clock (one vDSO read; the fake clock inside a synctest bubble).
func (c *cache[K, V]) now() int64 { return int64(time.Since(c.origin)) }

// lifetime applies jitter and the cap to a positive ttl. It saturates: a
// ttl near math.MaxInt64 times a jitter factor above 1 is capped at maxTTL,
// never converted from an out-of-range float (which wraps negative).
func (c *cache[K, V]) lifetime(ttl time.Duration) int64 {
	if c.jitter > 0 {
		f := 1 + c.jitter*(2*rand.Float64()-1)
		if x := float64(ttl) * f; x < float64(maxTTL) {
			ttl = time.Duration(x)
		} else {
			ttl = maxTTL
		}
	}
	return int64(min(max(ttl, 1), maxTTL))
}

// Get returns the value stored for key and true, or the zero V and false if
// there is none or its deadline has passed: an expired entry is never
// returned, even before the expiry engine has reclaimed it. The deadline is
// compared with the monotonic clock, read once per lookup that finds an
// entry.
//
// Get takes no lock and writes no shared memory on a hit but its own
// counter stripe and, under a Limit, the entry's read counter for the
// eviction policy: one compare-and-swap per read until the counter
// reaches 15, none after, until the policy next looks at the entry. A Get racing with a write of the same key returns the
// value before or after the write, never a torn value or another key's;
// it never takes a lock, never waits for the expiry engine and never
// allocates. After Close it returns false.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	return c.c.get(key)
}

func (c *cache[K, V]) get(key K) (V, bool) {
	if v, _, ok := c.lookup(key, c.hash(key), true); ok {
		c.reads.hit()
		return v, true
	}
	c.reads.miss()
	var zero V
	return zero, false
}

// lookup is the lock-free read of Get, Take and Peek: the live value for
// key (whose hash is h) and the time it has left, marking its node as used
// if mark is set. It counts nothing.
//
// A node's key never changes, nor does its value, but for a word or boxed
// value (see wordValue and boxed), so the reader needs one load of the
// stamp: the deadline in it is the value's own, whatever writers do
// meanwhile. A word or boxed value may be overwritten in place, but only
// with a later deadline, stored after the value: the reader loads the
// stamp before the value, so the value it gets has that deadline or a
// later one. A node that left the
// cache after the reader found it still holds its value and deadline: the
// read returns the value as of before the removal. The clock is read
// after the loads.
func (c *cache[K, V]) lookup(key K, h uint64, mark bool) (v V, left time.Duration, ok bool) {
	s := c.shardAt(h)
	if s == nil {
		return v, 0, false
	}
	n := s.tab.Get(key, h)
	if n == nil {
		return v, 0, false
	}
	st := n.stamp.Load()
	v = s.valueAt(n, st)
	now := c.now()
	d := deadlineOf(st)
	if d <= now {
		var zero V
		return zero, 0, false
	}
	if mark && c.bounded {
		n.noteReadAt(st)
	}
	if mark && c.onRead {
		c.read(n, key, h, st, now)
	}
	return v, time.Duration(d - now), true
}

// Set stores value for key with the default TTL (see Options.TTL and
// Options.Jitter), replacing any previous value (reported to OnEvict as
// Replaced, or Expired if its deadline had passed). Inserting a new key
// into a full cache evicts one entry first.
//
// Set of a new key allocates one entry and, after the shard lock is
// released, queues one command for the expiry engine (arming the entry's
// timer), and one more for an entry it evicts (cancelling its timer). An
// overwrite of a live entry with a later deadline, the common case, is
// written in place, atomically, with no lock and no command, so it never
// waits for the expiry engine (unless a load, refresh or Compute is in
// flight in the entry's shard): a V of 8 bytes without pointers (an int,
// a uint64, a float64, a time.Duration) or of one pointer (a *T, a map, a
// chan, a func) allocates nothing, any other V one box holding the value.
// The first overwrite of such a V, and an
// overwrite with an earlier deadline, replace the entry instead, under
// the lock, as a new key does (cancelling the old timer), so that
// lock-free readers never see a value change under a deadline that is not
// its own. After Close, Set does nothing.
//
// With Options.MaxWeight, Set weighs the entry first: one too heavy is
// dropped (see Options.MaxWeight; TrySet reports it), and a panic in the
// Weigher goes on in Set, which then stores nothing (see Options.Weigher).
func (c *Cache[K, V]) Set(key K, value V) {
	_ = c.c.set(key, value, c.c.ttl) // too heavy: dropped (see Options.MaxWeight)
}

// SetWithExpire is Set with its own ttl instead of Options.TTL (Jitter
// still applies). A ttl <= 0 stores nothing and removes any entry for key,
// as Delete does: the value is expired on arrival, never kept forever.
func (c *Cache[K, V]) SetWithExpire(key K, value V, ttl time.Duration) {
	if ttl <= 0 {
		c.c.delete(key)
		return
	}
	_ = c.c.set(key, value, ttl) // too heavy: dropped (see Options.MaxWeight)
}

// set is Set, SetWithExpire and TrySet: it weighs value once and stores
// it, and returns the error TrySet reports for a value too heavy to store
// (nil otherwise, also when it stores nothing: after Close, or for a key
// not equal to itself, which it does not weigh).
func (c *cache[K, V]) set(key K, value V, ttl time.Duration) error {
	if c.unstorable(key) {
		return nil
	}
	w, ok := c.weigh(key, value)
	if !ok {
		return c.tooHeavy(key, w)
	}
	h := c.hash(key)
	s := c.shardFor(h)
	var p pending[K, V]
	if n := s.tab.Get(key, h); n != nil && c.overwrite(s, n, value, w, ttl, &p) {
		c.finish(&p)
		c.forgetNotFound(key)
		return nil
	}
	now := c.now()
	deadline := dueAt(now, c.lifetime(ttl))
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.setLocked(key, h, value, w, now, deadline, &p)
	s.unlock(&p)
	c.finish(&p)
	c.forgetNotFound(key)
	return nil
}

// overwrite stores value of weight w in n, key's node, with a deadline
// ttl from now, without the shard lock, and reports whether it did; if
// not, the caller writes under the lock. n must take the value in place:
// a word value, or a boxed one (see boxed), whose box is allocated first;
// the first overwrite of any other value goes under the lock, which
// replaces the node by a boxed one. It takes only
// n's write bit (see lockWrite), so a Set over a live entry never waits
// for the expiry engine, which holds a shard lock while it removes other
// entries, nor for writers of other keys. It declines when n is dead, or
// expired by a clock read with the bit held (see settled), when the
// deadline would move earlier or the weight change, and while a load,
// refresh or Compute is in flight in the shard: only setLocked can mark
// such a call overtaken. The check of s.inflight comes after the bit is
// taken, and a call reads the entry after it is counted, waiting for the
// bit: so a call either sees this write or is seen by it.
func (c *cache[K, V]) overwrite(s *shard[K, V], n *node[K, V], value V, w int64, ttl time.Duration, p *pending[K, V]) bool {
	if st := n.stamp.Load(); !s.inPlace(st) || st&queueMask == dead || s.weightOf(n) != w {
		return false
	}
	box := s.boxOf(value) // before the bit: it allocates
	life := c.lifetime(ttl)
	st := n.lockWrite()
	now := c.now() // after the bit: see settled
	deadline := dueAt(now, life)
	if old := deadlineOf(st); st&queueMask == dead || old <= now || deadline <= old || s.inflight.Load() != 0 {
		n.unlockWrite(0, 0)
		return false
	}
	p.event = Event[K, V]{Key: n.key(), Value: s.writeInPlace(n, value, box, deadline, s.limit > 0), Reason: Replaced}
	s.overwrites.Add(1)
	return true
}

// Touch restarts the TTL of key's entry (Options.TTL, with Jitter) without
// changing its value, and reports whether key had a live entry. It is the
// refresh of the sessions pattern: unlike a Get followed by a Set, it never
// brings back an entry that expired or that a concurrent Delete removed.
// Like a later deadline from Set, the new deadline is only recorded in the
// entry: no wheel traffic. Touch counts as a use for eviction but not as a
// hit or miss in Stats. After Close it returns false.
func (c *Cache[K, V]) Touch(key K) bool {
	h := c.c.hash(key)
	s := c.c.shardAt(h)
	if s == nil {
		return false
	}
	var p pending[K, V]
	now := c.c.now()
	deadline := dueAt(now, c.c.lifetime(c.c.ttl))
	s.mu.Lock()
	ok := !s.closed && s.touchLocked(key, h, now, deadline, &p)
	s.unlock(&p)
	c.c.finish(&p)
	return ok
}

// finish does what a locked mutation left for after the unlock (its timers
// went to the wheel before it: see queueLocked): the OnEvict calls and a
// step of the window's hill climbing.
func (c *cache[K, V]) finish(p *pending[K, V]) {
	if p.arm != nil || p.cancel != nil || len(p.cancels) != 0 {
		// A bug in this package: a timer would stay unarmed or armed.
		panic("cache: a mutation unlocked its shard without queueLocked")
	}
	if p.event.Reason != 0 && c.onEvict != nil {
		c.evict(p.event)
		for _, ev := range p.more {
			c.evict(ev)
		}
	}
	if p.climb {
		c.climb.climb(c.reads.sum)
	}
}

// Delete removes the entry for key, if any, reporting it to OnEvict as
// Deleted (or Expired if its deadline had passed). A load of key in flight
// (see Take) still returns its result to its callers but does not store it.
// After Close, Delete does nothing.
func (c *Cache[K, V]) Delete(key K) {
	c.c.delete(key)
}

func (c *cache[K, V]) delete(key K) {
	c.forgetNotFound(key)
	h := c.hash(key)
	s := c.shardAt(h)
	if s == nil {
		return // nothing stored, nor loading, in that shard
	}
	var p pending[K, V]
	now := c.now()
	s.mu.Lock()
	ok := s.deleteLocked(key, h, now, &p)
	s.unlock(&p)
	if ok {
		c.finish(&p)
	}
}

// fire is the expiry callback, run by the wheel's owner goroutine for a
// node whose timer fell due. It is authoritative: under the shard lock it
// removes the node only if it is still in the cache and its deadline
// (which writers may have pushed later) has passed; otherwise it returns
// the time left, which re-arms the timer without a trip through the
// channel. A deadline pushed later, or a node already dead, is settled
// without the lock: the stamp is atomic, a dead node never comes back, and
// a node that dies after a lock-free re-arm is settled by its next firing.
func (c *cache[K, V]) fire(t *timingwheel.Timer[K], now time.Time) time.Duration {
	n := nodeOf[K, V](t)
	at := int64(now.Sub(c.origin))
	if st := n.stamp.Load(); st&queueMask == dead {
		return 0 // removed after its timer fell due: it never comes back
	} else if d := deadlineOf(st); d > at {
		return time.Duration(d - at) // pushed later: re-arm without the lock
	}
	k := t.Value // the key never changes
	h := c.hash(k)
	s := c.shardAt(h) // made before n was
	// The lookup loads n's slot in the table before the lock is taken, so
	// that removing it does not wait for memory with the lock held: every
	// caller of the shard would wait too.
	s.tab.Get(k, h)
	s.mu.Lock()
	if !n.live() {
		// Removed (deleted, evicted, cleared, closed) after its timer fell
		// due, or a Schedule that arrived after its Cancel: it never
		// comes back.
		s.mu.Unlock()
		return 0
	}
	// Judged and killed in one compare-and-swap: an overwrite without the
	// shard lock may be pushing the deadline later.
	st, left := n.killIfDueLocked(at)
	if left > 0 {
		s.mu.Unlock()
		return time.Duration(left)
	}
	s.dropLocked(n, h, st, Expired)
	v := s.valueAt(n, st) // dead: it no longer changes
	s.mu.Unlock()
	if c.notify != nil {
		c.notify.push(Event[K, V]{Key: k, Value: v, Reason: Expired})
	}
	return 0
}

func (c *cache[K, V]) reportPanic(p *timingwheel.PanicError) {
	// fire calls no user code, so this is a bug in this package or in the
	// wheel; the wheel has already recovered and kept every other timer.
	slog.Error("cache: expiry callback panicked", "cache", c.name, "panic", p.Value, "stack", string(p.Stack))
}

// Len returns the number of entries held. It may count entries whose
// deadline has passed but which the expiry engine has not reclaimed yet
// (at most one Resolution late, plus backlog); Get never returns those.
// It takes no lock, so it never waits for writers or for the expiry
// engine: each shard's count is read atomically, and while writes go on
// the sum is not a single snapshot. O(shards). After Close it returns 0.
func (c *Cache[K, V]) Len() int {
	total := 0
	for s := range c.c.made() {
		total += s.tab.Len()
	}
	return total
}

// Stats returns the counters summed over the shards (and, for hits and
// misses, over the counter stripes). Each shard is read consistently; the
// sum is not a single snapshot while reads and writes go on. O(shards).
func (c *Cache[K, V]) Stats() Stats {
	var st Stats
	var lt hist.Counts
	st.Hits, st.Misses = c.c.reads.sum()
	for s := range c.c.made() {
		s.mu.Lock()
		st.Loads += s.loads
		st.LoadErrors += s.loadErrors
		st.Sets += s.sets + s.overwrites.Load()
		lt.Add(&s.loadTime)
		st.Expired += s.expired
		st.Evicted += s.evicted
		st.Deleted += s.deleted
		st.Replaced += s.replaced + s.overwrites.Load()
		s.mu.Unlock()
	}
	st.LoadTime = timingwheel.Durations(lt)
	c.c.lc.addTo(&st)
	return st
}

// String returns "cache" or "cache NAME".
func (c *Cache[K, V]) String() string {
	if c.c.name == "" {
		return "cache"
	}
	return "cache " + c.c.name
}

// Close stops the expiry engine and drops every entry without reporting
// them to OnEvict; Expired events already queued are delivered before
// Close returns. It cancels the context of background reloads (see
// Options.RefreshAfter) and waits for them, and for the cache's other
// goroutines, to exit, so it must not be called from OnEvict, from
// OnRefreshError, or from a loader running a reload. Close returns nil the first time and
// ErrClosed afterwards.
//
// After Close, Get and Peek miss, Remaining and Touch return false, Set,
// SetWithExpire, SetIfAbsent, GetOrSet, Delete and Clear store and remove
// nothing, Len returns 0, All, Keys and Values yield nothing, Take and its
// variants and Load return ErrClosed, LoadAll a KeyErrors of ErrClosed
// (loads already running finish and hand their result to their callers
// without storing it), Compute and Refresh do nothing and return false,
// and Stats keeps returning the final counters.
func (c *Cache[K, V]) Close() error {
	if !c.c.close(true) {
		return ErrClosed
	}
	return nil
}

// cleanup closes a Cache that became unreachable. It runs on the runtime's
// cleanup goroutine, which it must not hold up with user code: it does not
// wait for the delivery of queued Expired events, which goes on until the
// queue is empty, and then the delivery goroutine exits.
func (c *cache[K, V]) cleanup() { c.close(false) }

// close shuts everything down once and reports whether this call did it.
// With wait, it returns once queued Expired events have been delivered.
func (c *cache[K, V]) close(wait bool) bool {
	first := false
	c.closeOnce.Do(func() {
		first = true
		close(c.closed)
		c.sched.Stop()
		for s := range c.made() {
			s.mu.Lock()
			s.closed = true
			// Drop every node; break the queues' rings so nothing is
			// pinned through the sentinels.
			s.tab.Clear()
			s.resetQueuesLocked()
			s.sk = sketch{}
			s.mu.Unlock()
		}
		c.closeLoading(wait)
		if c.notify != nil {
			c.notify.stop(wait)
		}
	})
	return first
}
