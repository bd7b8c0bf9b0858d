package timingwheel

import (
	"reflect"
	"runtime"
	"time"

	"github.com/ttlkit/ttlkit/internal/bubble"
)

// item is what the keyed wheel stores in each Timer.
type item[K comparable, V any] struct {
	key   K
	value V
}

// TimingWheel runs execute(key, value) once for each key whose delay has
// passed. It holds at most one timer per key. All methods are safe for
// concurrent use.
//
// SetTimer, MoveTimer and RemoveTimer queue a command for the wheel's owner
// goroutine and return without waiting for it: commands from one goroutine
// take effect in the order they were made, and Len and Drain wait until
// everything queued before them has taken effect.
//
// A TimingWheel that becomes unreachable without Stop is stopped by a
// cleanup after a garbage collection, unless execute keeps it reachable;
// call Stop to release the owner goroutine at a time of your choosing.
// Inside a testing/synctest bubble there is no such cleanup (it would run
// outside the bubble); a wheel left running there is reported by the
// bubble when the test ends.
type TimingWheel[K comparable, V any] struct {
	k *keyed[K, V]
}

// keyed is the state behind a TimingWheel. The owner goroutine and the
// workers reference it, never the TimingWheel, so that a TimingWheel can
// become unreachable and its cleanup stop them.
type keyed[K comparable, V any] struct {
	d        *driver[item[K, V]]
	execute  func(K, V)
	checkKey bool // K can hold values that panic when hashed

	// Owner goroutine only.
	index map[K]*Timer[item[K, V]]
	fired []item[K, V]
	exec  executor[item[K, V]]
}

// New returns a started TimingWheel that advances every interval over
// numSlots slots and runs execute for each timer that falls due.
//
// A timer set with delay d fires at the first tick at or after d has passed:
// never early, and at most one interval late plus the time it takes the
// owner goroutine to get there. One rotation covers interval*numSlots; longer
// delays are exact too, and cost one visit per rotation at most.
//
// execute runs on worker goroutines (see [WithConcurrency]) or, with
// [WithInline], on the owner goroutine. It may call the wheel's methods,
// except under WithInline. A panic in execute is recovered and reported to
// the panic handler; other timers are not affected.
//
// New returns an error wrapping ErrArgument for interval <= 0,
// numSlots <= 0, a nil execute or an invalid option. Call Stop to release
// the owner goroutine.
func New[K comparable, V any](interval time.Duration, numSlots int, execute func(key K, value V), opts ...Option) (*TimingWheel[K, V], error) {
	if err := validateWheel(interval, numSlots); err != nil {
		return nil, err
	}
	if execute == nil {
		return nil, argError("nil execute")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	k := &keyed[K, V]{
		d:        newDriver[item[K, V]](interval, numSlots, cfg),
		execute:  execute,
		checkKey: mayPanicOnHash(reflect.TypeFor[K]()),
		index:    make(map[K]*Timer[item[K, V]]),
	}
	k.exec = executor[item[K, V]]{limit: cfg.concurrency, run: k.runOne}
	go k.d.run(k)
	tw := &TimingWheel[K, V]{k: k}
	if !bubble.Inside() {
		runtime.AddCleanup(tw, func(k *keyed[K, V]) { k.d.signalStop() }, k)
	}
	return tw, nil
}

// SetTimer arms a timer that runs execute(key, value) after delay. If key
// already has a timer, its value is replaced and it is re-armed for the new
// delay, earlier or later. It returns an error wrapping ErrArgument for
// delay <= 0, an unhashable key, or a key not equal to itself (a NaN), and
// ErrClosed after Stop. O(1).
func (tw *TimingWheel[K, V]) SetTimer(key K, value V, delay time.Duration) error {
	if err := tw.k.check(key, delay); err != nil {
		return err
	}
	return tw.k.d.send(cmd[item[K, V]]{op: opSet, data: item[K, V]{key, value}, delay: delay, at: tw.k.d.callerNow()})
}

// MoveTimer re-arms key's timer to fire after delay, measured from now,
// keeping its value; a delay shorter than one interval fires it on the next
// tick, once. It does nothing, and returns nil, when key has no timer (it
// fired, was removed, or never existed), as go-zero does. Errors are as for
// SetTimer. O(1); a later deadline does not even relink the timer.
func (tw *TimingWheel[K, V]) MoveTimer(key K, delay time.Duration) error {
	if err := tw.k.check(key, delay); err != nil {
		return err
	}
	return tw.k.d.send(cmd[item[K, V]]{op: opMove, data: item[K, V]{key: key}, delay: delay, at: tw.k.d.callerNow()})
}

// RemoveTimer cancels key's timer, releasing its key and value at once. It
// returns nil when key has no timer, ErrArgument for a key SetTimer refuses and
// ErrClosed after Stop. A callback that has already started (or been handed
// to a worker) is not recalled. O(1).
func (tw *TimingWheel[K, V]) RemoveTimer(key K) error {
	if err := tw.k.check(key, 1); err != nil {
		return err
	}
	return tw.k.d.send(cmd[item[K, V]]{op: opRemove, data: item[K, V]{key: key}})
}

// Drain removes every pending timer and then calls fn(key, value) for each,
// on the calling goroutine, in no particular order. Timers set concurrently
// with Drain may or may not be included; none is lost. fn may call the
// wheel. Drain returns ErrClosed after Stop.
func (tw *TimingWheel[K, V]) Drain(fn func(key K, value V)) error {
	res, err := tw.k.d.call(cmd[item[K, V]]{op: opDrain})
	if err != nil {
		return err
	}
	for i, it := range res.items {
		res.items[i] = item[K, V]{}
		fn(it.key, it.value)
	}
	return nil
}

// Len returns the number of pending timers, counting every command queued
// before the call. It returns 0 after Stop.
func (tw *TimingWheel[K, V]) Len() int {
	res, err := tw.k.d.call(cmd[item[K, V]]{op: opLen})
	if err != nil {
		return 0
	}
	return res.n
}

// Has reports whether key has a pending timer, counting every command
// queued before the call. It returns false for a key SetTimer refuses and
// after Stop. Like Len, it waits for the owner goroutine: use it for checks
// and tests, not on a hot path.
func (tw *TimingWheel[K, V]) Has(key K) bool {
	if tw.k.check(key, 1) != nil {
		return false
	}
	res, err := tw.k.d.call(cmd[item[K, V]]{op: opHas, data: item[K, V]{key: key}})
	return err == nil && res.n > 0
}

// Stop stops the wheel and returns once its owner goroutine has exited.
// Pending timers are dropped without running (call Drain first to keep
// them); callbacks already handed to workers still run, and Stop does not
// wait for them, so a callback may call Stop (except under WithInline,
// where it would wait for itself). Every later call of another
// method returns ErrClosed; calling Stop again does nothing.
func (tw *TimingWheel[K, V]) Stop() { tw.k.d.shutdown() }

func (tw *keyed[K, V]) check(key K, delay time.Duration) error {
	if err := validDelay(delay); err != nil {
		return err
	}
	if tw.checkKey {
		// A nil interface key is valid; reflect calls it not comparable.
		if v := reflect.ValueOf(any(key)); v.IsValid() && !v.Comparable() {
			return argError("key of type %T is not hashable", key)
		}
	}
	if key != key {
		// NaN, or a struct, array or interface holding one: the map could
		// store it but never find or delete it again.
		return argError("key of type %T is not equal to itself (NaN)", key)
	}
	return nil
}

// apply runs on the owner goroutine.
func (tw *keyed[K, V]) apply(c *cmd[item[K, V]]) {
	w := tw.d.w
	switch c.op {
	case opSet:
		t := tw.index[c.data.key]
		if t == nil {
			t = &Timer[item[K, V]]{Value: c.data}
			tw.index[c.data.key] = t
		} else {
			t.Value.value = c.data.value
		}
		w.schedule(t, tw.d.afterFrom(c.at, c.delay))
	case opMove:
		if t := tw.index[c.data.key]; t != nil {
			w.schedule(t, tw.d.afterFrom(c.at, c.delay))
		}
	case opRemove:
		if t := tw.index[c.data.key]; t != nil {
			w.cancel(t)
			delete(tw.index, c.data.key)
		}
	case opDrain:
		items := make([]item[K, V], 0, len(tw.index))
		w.drain(func(t *Timer[item[K, V]]) { items = append(items, t.Value) })
		tw.index = make(map[K]*Timer[item[K, V]]) // a fresh map gives the memory back
		c.res.items = items
		close(c.res.done)
	case opLen:
		c.res.n = len(tw.index)
		close(c.res.done)
	case opHas:
		if tw.index[c.data.key] != nil {
			c.res.n = 1
		}
		close(c.res.done)
	}
}

// fire runs on the owner goroutine for each due timer.
func (tw *keyed[K, V]) fire(t *Timer[item[K, V]]) int64 {
	delete(tw.index, t.Value.key)
	tw.fired = append(tw.fired, t.Value)
	t.Value = item[K, V]{}
	return 0
}

// flush hands the timers fired in the last slice of work to their callbacks.
func (tw *keyed[K, V]) flush() {
	if len(tw.fired) == 0 {
		return
	}
	if tw.d.cfg.inline {
		for _, it := range tw.fired {
			tw.runOne(it)
		}
	} else {
		tw.exec.submit(tw.fired)
	}
	clear(tw.fired)
	tw.fired = tw.fired[:0]
}

func (tw *keyed[K, V]) runOne(it item[K, V]) {
	defer func() {
		if r := recover(); r != nil {
			tw.d.cfg.onPanic(recovered(it.key, r))
		}
	}()
	tw.execute(it.key, it.value)
}

// mayPanicOnHash reports whether values of type t can panic when used as map
// keys: interfaces, and structs or arrays that contain one.
func mayPanicOnHash(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Array:
		return mayPanicOnHash(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if mayPanicOnHash(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}
