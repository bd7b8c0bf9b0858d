package collection

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

var (
	// ErrClosed is returned by TimingWheel methods called after Stop. It is
	// timingwheel.ErrClosed, so errors.Is works with either name.
	ErrClosed = timingwheel.ErrClosed
	// ErrArgument is returned, itself and not wrapped, by TimingWheel
	// methods given a nil or unhashable key or a delay <= 0, so code that
	// compares with == as go-zero's callers do keeps working. Constructor
	// errors wrap it with the detail; test those with errors.Is.
	ErrArgument = timingwheel.ErrArgument
)

type (
	// Execute is the callback of a TimingWheel: it runs once for each timer
	// that falls due, with the key and value it was set with.
	Execute func(key, value any)

	// Ticker is the shape of go-zero's timex.Ticker, so a timex.Ticker (a
	// fake one in tests, say) can be passed to NewTimingWheelWithTicker
	// unchanged.
	Ticker interface {
		// Chan returns the channel the ticks arrive on; each value
		// received advances the wheel by one interval.
		Chan() <-chan time.Time
		// Stop stops the ticks; the wheel's Stop calls it.
		Stop()
	}

	// TimingWheel is go-zero's collection.TimingWheel over the
	// timingwheel engine: same names and signatures, exact placement, never
	// early. Safe for concurrent use.
	TimingWheel struct {
		tw       *timingwheel.TimingWheel[any, any]
		ticker   Ticker
		stopOnce sync.Once
	}
)

// NewTimingWheel returns a running TimingWheel that advances every interval
// over numSlots slots and calls execute for each timer that falls due, on a
// worker goroutine. It returns an error wrapping ErrArgument for
// interval <= 0, numSlots <= 0 or a nil execute.
//
// Unlike go-zero's, it reads the clock instead of counting ticker ticks, so
// a timer never fires before its delay has passed.
func NewTimingWheel(interval time.Duration, numSlots int, execute Execute) (*TimingWheel, error) {
	return newTimingWheel(interval, numSlots, execute, nil)
}

// NewTimingWheelWithTicker is NewTimingWheel driven by ticker instead of the
// clock: each value received from ticker.Chan() advances the wheel by one
// interval, and a timer set with delay d fires on the ceil(d/interval)-th
// tick after it was set. Stop stops the ticker. A nil ticker is an
// ErrArgument error.
func NewTimingWheelWithTicker(interval time.Duration, numSlots int, execute Execute, ticker Ticker) (*TimingWheel, error) {
	if ticker == nil {
		return nil, argError("nil ticker")
	}
	return newTimingWheel(interval, numSlots, execute, ticker)
}

func newTimingWheel(interval time.Duration, numSlots int, execute Execute, ticker Ticker) (*TimingWheel, error) {
	if execute == nil {
		return nil, argError("nil execute")
	}
	var opts []timingwheel.Option
	if ticker != nil {
		opts = append(opts, timingwheel.WithTicker(ticker.Chan()))
	}
	tw, err := timingwheel.New(interval, numSlots, func(key, value any) { execute(key, value) }, opts...)
	if err != nil {
		return nil, err
	}
	return &TimingWheel{tw: tw, ticker: ticker}, nil
}

// Drain removes every pending timer and calls fn(key, value) for each on the
// calling goroutine before it returns (go-zero's returns at once and runs fn
// later on its own workers). fn may call the wheel. It returns ErrClosed
// after Stop.
func (tw *TimingWheel) Drain(fn func(key, value any)) error {
	if fn == nil {
		return ErrArgument
	}
	return tw.tw.Drain(fn)
}

// MoveTimer re-arms key's timer to fire after delay, keeping its value. A
// delay shorter than one interval fires it on the next tick, once (go-zero
// runs it at once and again later). An unknown key is ignored. It returns
// ErrArgument for a nil or unhashable key or delay <= 0, and ErrClosed after
// Stop.
func (tw *TimingWheel) MoveTimer(key any, delay time.Duration) error {
	if key == nil {
		return ErrArgument
	}
	return bare(tw.tw.MoveTimer(key, delay))
}

// RemoveTimer cancels key's timer and releases its key and value at once.
// An unknown key is ignored. It returns ErrArgument for a nil or unhashable
// key and ErrClosed after Stop.
func (tw *TimingWheel) RemoveTimer(key any) error {
	if key == nil {
		return ErrArgument
	}
	return bare(tw.tw.RemoveTimer(key))
}

// SetTimer arms a timer that calls execute(key, value) after delay,
// replacing key's earlier timer and value if it has one. It returns
// ErrArgument for a nil or unhashable key or delay <= 0, and ErrClosed after
// Stop.
func (tw *TimingWheel) SetTimer(key, value any, delay time.Duration) error {
	if key == nil {
		return ErrArgument
	}
	return bare(tw.tw.SetTimer(key, value, delay))
}

// Stop stops the wheel, and its ticker if it has one, and returns once the
// wheel's goroutine has exited. Pending timers are dropped. Calling Stop
// again does nothing (go-zero's panics).
func (tw *TimingWheel) Stop() {
	tw.tw.Stop()
	tw.stopOnce.Do(func() {
		if tw.ticker != nil {
			tw.ticker.Stop()
		}
	})
}

// Has reports whether key has a pending timer, counting every call made
// before it. It returns false for a nil or unhashable key and after Stop.
// go-zero has no such method.
func (tw *TimingWheel) Has(key any) bool { return key != nil && tw.tw.Has(key) }

// Len returns the number of pending timers, counting every call made before
// it. It returns 0 after Stop. go-zero has no such method.
func (tw *TimingWheel) Len() int { return tw.tw.Len() }

// bare returns ErrArgument itself for any argument error, as go-zero does.
func bare(err error) error {
	if errors.Is(err, ErrArgument) {
		return ErrArgument
	}
	return err
}

func argError(what string) error {
	return fmt.Errorf("%w: %s", ErrArgument, what)
}
