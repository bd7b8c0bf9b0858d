package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

var (
	// ErrClosed is returned by Take and its variants, and by a second Close,
	// once the cache has been closed.
	ErrClosed = errors.New("cache: closed")
	// ErrOptions is wrapped by the error New returns for invalid Options.
	// Test with errors.Is.
	ErrOptions = errors.New("cache: invalid options")
)

const (
	// DefaultJitter is the jitter go-zero applies to every TTL (±5%). The
	// zero Options.Jitter means no jitter; set Jitter to DefaultJitter to
	// spread the expiry of entries written together, as go-zero does.
	DefaultJitter = 0.05

	// minResolution and maxResolution bound the default wheel interval.
	minResolution = 10 * time.Millisecond
	maxResolution = time.Second
	// maxWheelInterval is the largest interval timingwheel accepts; a
	// larger Resolution saturates to it.
	maxWheelInterval = time.Duration(1 << 62)
	// maxTTL caps TTLs, after jitter: 2^57 ns, about 4.57 years. A stamp
	// holds deadlines in ticks of 8 ns up to the horizon, 2^59 ns (about
	// 18.27 years) after the cache was made (see maxDeadline), so no
	// deadline is cut short until the cache is 2^59-2^57 ns (about 13.70
	// years) old. (Deadlines were whole nanoseconds, with a horizon of
	// 2^56 ns, about 2.28 years: a cache older than that expired every
	// entry on arrival.)
	maxTTL = time.Duration(1 << 57)
)

// Options configures New. The zero value of each field except TTL means
// its default; TTL is required.
type Options[K comparable, V any] struct {
	// TTL is the time to live of entries written by Set and Take: an entry
	// is never returned after TTL (times the jitter factor, see Jitter) has
	// passed since it was last written. It must be positive. Every TTL,
	// this one or a per-call ttl, is capped at about 4.57 years (2^57 ns)
	// after jitter, so math.MaxInt64 means "until evicted or deleted, or
	// 4.57 years". Deadlines are kept in ticks of 8 ns, rounded down: an
	// entry may expire up to 7 ns early, never late. They run to the
	// cache's horizon, 2^59 ns (about 18.27 years) after New: a deadline
	// past it is cut to the last tick before it (the entry expires early),
	// and once the cache is that old every entry expires on arrival.
	TTL time.Duration

	// Limit is the maximum number of entries. When an insertion would
	// exceed it, one entry is evicted first (reason Evicted, or Expired for
	// an entry whose deadline has passed), chosen by the W-TinyLFU policy
	// described in the package documentation. The total never exceeds
	// Limit, at any instant. 0 means unbounded; a negative Limit is an
	// error.
	Limit int

	// MaxWeight bounds the total weight of the entries, as Weigher weighs
	// them, instead of their number: an alternative to Limit (setting both
	// is an error). When an insertion, or an overwrite with a heavier
	// value, would exceed it, entries are evicted first by the same policy
	// as under Limit, the admission test comparing the newcomer with each
	// entry it would displace. The total never exceeds MaxWeight, at any
	// instant. MaxWeight is split across the cache's shards, exactly (the
	// shares add up to MaxWeight, none is 0), as Limit is: a MaxWeight
	// under 128 gets one shard; a larger one gets one shard per processor
	// (at least 16, at most 1024, a power of two), halved while a share
	// would be under 64. One entry may weigh at most MaxWeight divided by
	// the number of shards, rounded down, which is at least
	// min(MaxWeight, 64) and at least MaxWeight/1024, and at most 2^30-1.
	// A heavier entry is never stored: Set drops it and removes the key's
	// previous entry, TrySet does the same and returns an error wrapping
	// ErrTooHeavy that says the bound, and GetOrSet and SetIfAbsent store
	// nothing and leave the key as it was (see GetOrSet). 0 means no bound
	// by weight; a negative MaxWeight is an error.
	MaxWeight int64

	// Weigher returns the weight of an entry, such as the size of its value
	// in bytes. It is required with MaxWeight and an error without it. It
	// is called once per write that may store a value: Set, SetWithExpire
	// and TrySet; GetOrSet and SetIfAbsent when they find no live entry; a
	// load (Take, Load, LoadAll, a refresh) that loaded a value to keep;
	// Compute returning Store. It runs on the writing goroutine, with no
	// lock held, and never for a key not equal to itself. A weight below
	// 1 counts as 1.
	//
	// If it panics or calls runtime.Goexit, the write stores nothing, the
	// key keeps what it held, and the panic or exit goes on: in the caller
	// of Set, SetWithExpire, TrySet, GetOrSet or SetIfAbsent as it is;
	// for a load or a Compute, as a panic or exit of its loader or
	// function (its callers receive a *timingwheel.PanicError; a failed
	// refresh goes to OnRefreshError). Either way the key stays usable: no
	// later write or load of it waits for the failed one.
	Weigher func(key K, value V) int

	// Jitter spreads expiry: each TTL, whether from TTL or from a per-call
	// ttl, is multiplied by a factor drawn uniformly from
	// [1-Jitter, 1+Jitter). It must be in [0, 1); 0, the default, means
	// every entry lives exactly its TTL. go-zero uses DefaultJitter.
	Jitter float64

	// Resolution is the interval of the timing wheel that reclaims expired
	// entries: an entry's memory is released at most one Resolution (plus
	// the time to work through entries due at the same tick) after its
	// deadline. It does not affect correctness: Get checks the deadline
	// itself. 0 means TTL/100 clamped to [10ms, 1s]; otherwise it must be
	// at least 1ms, and values above about 146 years (the wheel's largest
	// interval) count as 146 years.
	Resolution time.Duration

	// Name identifies the cache in panic reports of its expiry engine and in
	// String. Optional.
	Name string

	// OnEvict, when not nil, is called once for every entry that leaves the
	// cache other than by Close, with the reason. It is never called with a
	// lock held. Events caused by a call (Replaced by Set, Evicted by an
	// insertion, Deleted by Delete, and Expired when a call finds an
	// expired entry in its way) are delivered on the calling goroutine
	// before the call returns. Entries reclaimed by the expiry engine are
	// delivered, in expiry order, by one goroutine the cache owns, so a slow
	// OnEvict never stalls expiry; Close delivers those still queued before
	// it returns. OnEvict may therefore run concurrently with itself and
	// must be safe for concurrent use. It must not call Close.
	//
	// A panic in OnEvict is recovered and reported to OnPanic, as the timing
	// wheel does for its callbacks: the call that caused the event returns
	// normally, and the delivery of Expired events goes on. A
	// runtime.Goexit in OnEvict (t.FailNow in a test) is reported to
	// OnPanic (with Value timingwheel.ErrGoexit) and ends the goroutine
	// that ran it: the caller's for call-driven events; for Expired ones, a
	// new delivery goroutine takes over, so later events are still
	// delivered.
	OnEvict func(Event[K, V])

	// OnPanic receives each OnEvict or OnRefreshError call that panicked or
	// called runtime.Goexit: e is the event OnEvict was called with (for
	// OnRefreshError: the key and the value kept, with a zero Reason), p
	// the module's one panic report, whose Key is e.Key. It runs on the
	// goroutine that ran the callback, before that goroutine goes on (or,
	// for a Goexit, ends), and must not panic itself. nil means the
	// default: log the panic and its stack with log/slog at error level.
	OnPanic func(e Event[K, V], p *timingwheel.PanicError)

	// Loader loads the value of a key that has no live entry, for Load,
	// for LoadAll when BulkLoader is nil, and for refreshes. It runs on the
	// goroutine of the caller that starts the load (a refresh: on a
	// goroutine the cache owns), once per key however many callers wait,
	// with that caller's context (a refresh: one that Close cancels). See
	// Loaded for what it returns. Optional: without Loader and BulkLoader,
	// Load and LoadAll return ErrNoLoader.
	Loader func(ctx context.Context, key K) (Loaded[V], error)

	// BulkLoader loads many keys in one call, for LoadAll (and for Load
	// and refreshes when Loader is nil, with one key). keys holds distinct
	// keys, none with a live entry or a load in flight. A key missing from
	// the result is not found when the error is nil, and fails with the
	// error otherwise; a Loaded with Err set fails that key alone.
	// Optional.
	BulkLoader func(ctx context.Context, keys []K) (map[K]Loaded[V], error)

	// RefreshAfter, when positive, makes a read of an entry whose age has
	// reached RefreshAfter start a reload in the background, once per key,
	// while readers keep the current value (refresh-after-write). The age
	// is read from the deadline: TTL minus the time left, which is exact
	// for entries written with TTL and no Jitter. An entry with its own,
	// shorter TTL (from Loaded.TTL, SetWithExpire or TakeWithExpire)
	// counts as older by the difference. A failed reload keeps the old
	// value until its deadline and is counted in Stats.RefreshErrors and
	// reported to OnRefreshError. It must be less than TTL, needs Loader
	// or BulkLoader, and excludes ExpireAfterAccess. 0 means no refresh.
	RefreshAfter time.Duration

	// NotFoundTTL is how long a load that found nothing (Loaded.NotFound,
	// or a key a BulkLoader left out) is remembered: Load then returns
	// ErrNotFound without calling the loader, and Stats.NotFoundHits
	// counts it. Not-found entries are kept apart from values: Get, Len
	// and All never see them, they do not count towards Limit (they have
	// a Limit of their own, the same number), and a Set, Delete or load
	// of a value for the key forgets them. 0 means not-found results are
	// not remembered at all (Loaded.TTL then has no effect on them);
	// negative is an error.
	NotFoundTTL time.Duration

	// ExpireAfterAccess makes TTL sliding: a read that is a use (Get, a
	// hit of Take, Load or LoadAll, GetOrSet finding a value) moves the
	// entry's deadline to TTL after the read, so an entry expires TTL
	// after it was last read or written. Reads move the deadline without
	// a lock, and only when it moves by at least Resolution, so an entry
	// read at t expires in (t+TTL-Resolution, t+TTL]. Writes with their
	// own ttl set the first deadline; reads extend by TTL, without
	// Jitter.
	ExpireAfterAccess bool

	// OnRefreshError, when not nil, hears of every background reload that
	// failed (returned an error, panicked or exited its goroutine), on the
	// goroutine that ran it, after the cache kept the old value. A panic
	// in it is recovered and reported to OnPanic.
	OnRefreshError func(RefreshError[K, V])
}

// validate checks o and fills in defaults.
func (o *Options[K, V]) validate() error {
	switch {
	case o.TTL <= 0:
		return fmt.Errorf("%w: TTL %v, want > 0", ErrOptions, o.TTL)
	case o.Limit < 0:
		return fmt.Errorf("%w: Limit %d, want >= 0", ErrOptions, o.Limit)
	case o.MaxWeight < 0:
		return fmt.Errorf("%w: MaxWeight %d, want >= 0", ErrOptions, o.MaxWeight)
	case o.MaxWeight > 0 && o.Limit > 0:
		return fmt.Errorf("%w: both Limit and MaxWeight set, want one of them", ErrOptions)
	case o.MaxWeight > 0 && o.Weigher == nil:
		return fmt.Errorf("%w: MaxWeight without a Weigher", ErrOptions)
	case o.MaxWeight == 0 && o.Weigher != nil:
		return fmt.Errorf("%w: Weigher without MaxWeight", ErrOptions)
	case math.IsNaN(o.Jitter) || o.Jitter < 0 || o.Jitter >= 1:
		return fmt.Errorf("%w: Jitter %v, want in [0, 1)", ErrOptions, o.Jitter)
	case o.Resolution < 0 || (o.Resolution > 0 && o.Resolution < time.Millisecond):
		return fmt.Errorf("%w: Resolution %v, want 0 or >= 1ms", ErrOptions, o.Resolution)
	}
	if o.Resolution == 0 {
		o.Resolution = min(max(o.TTL/100, minResolution), maxResolution)
	}
	o.Resolution = min(o.Resolution, maxWheelInterval)
	switch {
	case o.RefreshAfter < 0:
		return fmt.Errorf("%w: RefreshAfter %v, want >= 0", ErrOptions, o.RefreshAfter)
	case o.RefreshAfter > 0 && o.RefreshAfter >= o.TTL:
		return fmt.Errorf("%w: RefreshAfter %v, want less than TTL %v", ErrOptions, o.RefreshAfter, o.TTL)
	case o.RefreshAfter > 0 && o.Loader == nil && o.BulkLoader == nil:
		return fmt.Errorf("%w: RefreshAfter needs Loader or BulkLoader", ErrOptions)
	case o.RefreshAfter > 0 && o.ExpireAfterAccess:
		return fmt.Errorf("%w: RefreshAfter and ExpireAfterAccess together: reads keep a sliding entry young, so it would never refresh", ErrOptions)
	case o.NotFoundTTL < 0:
		return fmt.Errorf("%w: NotFoundTTL %v, want >= 0", ErrOptions, o.NotFoundTTL)
	}
	return nil
}

// Reason says why an entry left the cache. The zero Reason is invalid.
type Reason uint8

const (
	// Expired: the entry's deadline passed.
	Expired Reason = iota + 1
	// Evicted: the entry made room for a new one under Limit.
	Evicted
	// Deleted: Delete removed the entry, or SetWithExpire with ttl <= 0.
	Deleted
	// Replaced: Set, SetWithExpire or a load stored a new value for the key.
	Replaced
)

// String returns the reason's name, such as "Expired".
func (r Reason) String() string {
	switch r {
	case Expired:
		return "Expired"
	case Evicted:
		return "Evicted"
	case Deleted:
		return "Deleted"
	case Replaced:
		return "Replaced"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Event describes an entry that left the cache; OnEvict receives it.
type Event[K comparable, V any] struct {
	Key    K      // the entry's key
	Value  V      // the value it held when it left
	Reason Reason // why it left: Expired, Evicted, Deleted or Replaced
}

// Stats are the cache's counters since New. They are pulled, never pushed:
// call Cache.Stats.
//
// Every lookup (Get, GetOrSet, and each key of Take, Load and LoadAll)
// counts once, as a hit or a miss, so HitRatio is the share of lookups
// served without a load of their own. A lookup that finds nothing and
// waits for a load another caller started counts as a hit when that load
// yields a value or a not-found answer, and as a miss when it fails; it
// also counts in Waits. So 50 concurrent Takes of one cold key read as 1
// miss and 49 hits (HitRatio 0.98, one load), as go-zero counts them.
type Stats struct {
	Hits uint64 // lookups served without a load of their own (see above)
	// Misses counts lookups that found nothing: a Get's miss, or a
	// load-through that ran its own load or shared one that failed.
	Misses uint64
	// Waits counts lookups that waited for another caller's load (or
	// refresh) of their key; they are in Hits or Misses as well.
	Waits uint64
	// NotFoundHits counts lookups of Load, LoadAll and Take answered by a
	// remembered not-found result (see Options.NotFoundTTL), without a
	// load; they are in Hits as well.
	NotFoundHits uint64
	// Sets counts values stored: by Set, SetWithExpire (ttl > 0),
	// SetIfAbsent and GetOrSet when they store, a load or refresh storing
	// what it loaded, and Compute's Store. Writes that store nothing (after Close, or of a key not
	// equal to itself) are not counted.
	Sets uint64
	// Loads counts keys loaded, by Take's fetch, Loader or BulkLoader
	// (refreshes included), each when its load ended.
	Loads uint64
	// LoadErrors counts the loads of Loads that failed: an error, a panic
	// or a runtime.Goexit. No error is cached.
	LoadErrors uint64
	// LoadsNotFound counts the loads of Loads that found nothing
	// (Loaded.NotFound, or a key a BulkLoader left out).
	LoadsNotFound uint64
	// BulkLoads counts BulkLoader calls; each loads one or more keys.
	BulkLoads uint64
	// LoadTime is how long loader calls ran, each counted when it ended
	// (returned, panicked or exited the goroutine). A BulkLoader call
	// counts once however many keys it loaded, so LoadTime.Count is Loads
	// when no BulkLoader runs. A waiter's wait is not counted.
	LoadTime timingwheel.Durations
	// Refreshes counts background reloads (RefreshAfter, Refresh) that
	// ended; they are in Loads as well. RefreshErrors counts those that
	// failed and kept the old value.
	Refreshes, RefreshErrors uint64

	Expired  uint64 // entries removed because their deadline passed
	Evicted  uint64 // entries removed to respect Limit
	Deleted  uint64 // entries removed by Delete or SetWithExpire(ttl <= 0)
	Replaced uint64 // values overwritten by a later write
}

// HitRatio returns Hits / (Hits + Misses), or 0 before the first lookup.
func (s Stats) HitRatio() float64 {
	if n := s.Hits + s.Misses; n > 0 {
		return float64(s.Hits) / float64(n)
	}
	return 0
}
