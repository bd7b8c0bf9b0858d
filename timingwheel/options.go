package timingwheel

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/ttlkit/ttlkit/internal/pool"
)

var (
	// ErrClosed is returned by every method called after Stop.
	ErrClosed = errors.New("timingwheel: closed")
	// ErrArgument is wrapped by the errors returned for invalid arguments:
	// a non-positive interval, slot count or delay, a nil callback, or a key
	// that cannot be used as a map key. Test with errors.Is.
	ErrArgument = errors.New("timingwheel: invalid argument")
)

func argError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrArgument}, args...)...)
}

// ErrGoexit is the Value of the [*PanicError] reported for a callback
// that called runtime.Goexit (as t.Fatal and t.SkipNow do in a test)
// instead of returning; errors.Is(err, ErrGoexit) tells it from a panic.
// It is the module's one such value.
var ErrGoexit = pool.ErrGoexit

// Option configures New and NewScheduler.
type Option func(*config)

type config struct {
	concurrency int
	inline      bool
	budget      int
	ticks       <-chan time.Time
	ticker      bool // WithTicker was given (ticks may still be nil: refused)
	onPanic     func(*PanicError)
	queues      int  // WithQueues's n
	queuesSet   bool // WithQueues was given (else shardCount())
}

func defaultConfig() config {
	return config{
		concurrency: runtime.GOMAXPROCS(0),
		budget:      2048,
		onPanic:     logPanic,
	}
}

// newConfig applies opts to the defaults and validates the result.
func newConfig(opts []Option) (config, error) {
	c := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return config{}, argError("nil option")
		}
		o(&c)
	}
	return c, c.validate()
}

func (c *config) validate() error {
	switch {
	case c.concurrency <= 0:
		return argError("concurrency %d, want > 0", c.concurrency)
	case c.budget <= 0:
		return argError("batch %d, want > 0", c.budget)
	case c.onPanic == nil:
		return argError("nil panic handler")
	case c.queuesSet && (c.queues < 1 || c.queues > maxQueues):
		return argError("queues %d, want 1 to %d", c.queues, maxQueues)
	case c.ticker && c.ticks == nil:
		// A nil channel never delivers: the wheel would never advance.
		return argError("nil ticker channel")
	}
	return nil
}

func logPanic(p *PanicError) {
	slog.Error("timingwheel: callback panicked", "key", p.Key, "panic", p.Value, "stack", string(p.Stack))
}

// WithConcurrency sets how many callbacks of the keyed TimingWheel may run
// at once on worker goroutines. The default is runtime.GOMAXPROCS(0) at
// construction; 1 runs callbacks one at a time in firing order. Workers are
// started when timers fire and exit when none are queued, so an idle wheel
// holds no worker goroutine. n must be positive. Ignored by Scheduler, whose
// callback always runs on the owner goroutine.
func WithConcurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// WithInline makes the keyed TimingWheel run execute on its owner goroutine,
// which saves a hand-off per fired timer. Use it only for callbacks that are
// quick and never block: while one runs, no timer fires and no queued
// change is placed in the wheel. Such a callback may call SetTimer,
// MoveTimer, RemoveTimer, Len and Has, which never wait for the owner, but
// not Drain or Stop, which would wait for the goroutine running it.
func WithInline() Option { return func(c *config) { c.inline = true } }

// WithBatch sets how many timers the owner examines before it serves queued
// commands and changes again, which bounds how long a mass expiry can keep
// a Scheduler's callers waiting and new timers from being placed. The default is 2048. n must be positive.
func WithBatch(n int) Option { return func(c *config) { c.budget = n } }

// WithTicker makes the wheel advance by exactly one interval per value
// received from ticks instead of reading the clock: a timer set with delay d
// fires on the ceil(d/interval)-th tick received after it was set. The wheel
// never sleeps on its own in this mode. Meant for tests and for callers that
// already own a ticker; the values received are ignored. A nil ticks is
// refused (New returns ErrArgument), since it would never deliver; closing
// ticks freezes the wheel.
func WithTicker(ticks <-chan time.Time) Option {
	return func(c *config) { c.ticks, c.ticker = ticks, true }
}

// WithPanicHandler sets the function that receives each callback that
// panicked or called runtime.Goexit, as a *PanicError: Key is the timer's
// key (keyed TimingWheel) or Value (Scheduler), Value the value passed to
// panic or ErrGoexit, Stack the callback's stack. The default logs it with
// log/slog at error level. The handler runs on the goroutine that ran the
// callback, before the wheel goes on, and must not panic itself.
//
// The wheel recovers a panic, keeps every other timer and goes on with
// the next one. A Goexit cannot be stopped: the goroutine running the
// callback ends after the report, as runtime.Goexit promises, and the
// wheel replaces it: a worker of the keyed TimingWheel by a new worker,
// the owner goroutine (which runs the callbacks of a Scheduler and, under
// WithInline, of the keyed wheel) by a new owner that carries on where
// the old one stopped. No timer or callback is lost, and Stop, Len and
// every other method go on working.
func WithPanicHandler(f func(*PanicError)) Option { return func(c *config) { c.onPanic = f } }

// maxQueues is the most Queues WithQueues allows.
const maxQueues = 1 << 16

// WithQueues sets how many Queues (see [Scheduler.Queue]) a Scheduler
// has, and how many shards a TimingWheel's key index has: n rounded up to
// a power of two, from 1 to 1<<16. The default is about eight per
// processor (runtime.GOMAXPROCS(0) at construction), from 8 to 256. A
// caller whose data is sharded under Queues' locks gives its own shard
// count. n must be positive.
func WithQueues(n int) Option {
	return func(c *config) { c.queues, c.queuesSet = n, true }
}
