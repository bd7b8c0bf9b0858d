package cache

import (
	"errors"
	"fmt"
	"math"
	"time"
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
	// maxTTL caps TTLs, after jitter, so that a deadline shifted into a
	// node's stamp (deadline<<stampShift) never overflows: about 36 years.
	maxTTL = time.Duration(1 << 60)
)

// Options configures New. The zero value of each field except TTL means
// its default; TTL is required.
type Options[K comparable, V any] struct {
	// TTL is the time to live of entries written by Set and Take: an entry
	// is never returned after TTL (times the jitter factor, see Jitter) has
	// passed since it was last written. It must be positive. Every TTL,
	// this one or a per-call ttl, is capped at about 36 years after jitter,
	// so math.MaxInt64 means "until evicted or deleted".
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
	// instant. MaxWeight is split evenly across the cache's shards (see
	// Limit), so one entry may weigh at most MaxWeight divided by the
	// number of shards, and at most 2^30-1: a heavier entry is never
	// stored (Set drops it and removes the key's previous entry; TrySet
	// returns an error wrapping ErrTooHeavy that says the bound). 0 means
	// no bound by weight; a negative MaxWeight is an error.
	MaxWeight int64

	// Weigher returns the weight of an entry, such as the size of its value
	// in bytes. It is required with MaxWeight and an error without it. It
	// is called once per write (Set, SetWithExpire, TrySet, GetOrSet and
	// SetIfAbsent when they store, and Take storing what it fetched), on
	// the writing goroutine, with no lock held. A weight below 1 counts as
	// 1.
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
	// OnPanic as ErrGoexit and ends the goroutine that ran it: the
	// caller's for call-driven events; for Expired ones, a new delivery
	// goroutine takes over, so later events are still delivered.
	OnEvict func(Event[K, V])

	// OnPanic receives the panics recovered from OnEvict, on the goroutine
	// that ran OnEvict, and must not panic itself. nil means the default:
	// log the panic and its stack with log/slog at error level.
	OnPanic func(Panic[K, V])
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
type Stats struct {
	Hits   uint64 // Get or Take found a live entry
	Misses uint64 // Get or Take found none (Take then loads or waits)
	// Sets counts values stored: by Set, SetWithExpire (ttl > 0),
	// SetIfAbsent and GetOrSet when they store, and Take storing what it
	// fetched. Writes that store nothing (after Close, or of a key not
	// equal to itself) are not counted.
	Sets  uint64
	Loads uint64 // fetch functions run by Take and its variants
	// LoadErrors counts fetches that returned an error, panicked or exited
	// the goroutine; none of them is cached.
	LoadErrors uint64
	// LoadTime is how long the fetches ran, each counted when it ended
	// (returned, panicked or exited the goroutine): LoadTime.Count is
	// Loads. A waiter's wait is not counted.
	LoadTime Durations

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

// DurationBounds are the upper bounds of Durations.Buckets, in order; the
// last bucket counts what is longer than the last bound. They are those of
// timingwheel.LatenessBounds and jobs.DurationBounds.
var DurationBounds = [...]time.Duration{
	100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond,
	100 * time.Millisecond, time.Second, 10 * time.Second,
}

// Durations summarizes durations, such as how long fetches ran.
type Durations struct {
	Count uint64        // durations counted
	Sum   time.Duration // their sum
	Max   time.Duration // the longest
	// Buckets[i] counts the durations at most DurationBounds[i] and more
	// than DurationBounds[i-1] (any, for i=0); the last bucket counts
	// those longer than every bound.
	Buckets [len(DurationBounds) + 1]uint64
}
