package timingwheel

import (
	"context"
	"hash/maphash"
	"reflect"
	"runtime"
	"time"

	"github.com/ttlkit/ttlkit/internal/bubble"
	"github.com/ttlkit/ttlkit/internal/pool"
	"github.com/ttlkit/ttlkit/internal/table"
)

// TimingWheel runs execute(key, value) once for each key whose delay has
// passed. It holds at most one timer per key. All methods are safe for
// concurrent use.
//
// SetTimer, MoveTimer, RemoveTimer, Len and Has act on the wheel's key
// index at once, under a lock of the key's shard, and never wait for the
// owner goroutine: when a call returns, its effect is visible to every
// later call from any goroutine. Only changes to the wheel's structure (a
// new timer, an earlier deadline, a removal) are handed to the owner, in
// batches that it takes whenever it wakes; a call wakes it only if its
// change cannot wait until then. A later deadline for a pending timer is
// recorded in the timer and checked when its old deadline comes.
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

// entry is what the keyed wheel stores in each Timer: the key and the
// value. The Timer itself is the index's entry, so a pending timer costs
// one allocation.
//
// Ownership. key never changes once the entry is in the index, so
// lock-free lookups may compare keys; the key is released with the entry,
// once the owner has unlinked it. value is guarded by the key's shard lock
// (the owner takes it to hand a fired timer out) and released at once on
// removal. An indexed Timer is armed or firing, never dead: RemoveTimer,
// Drain and the hand-out of a fired timer each take it out of the index
// and store dead under the shard lock.
type entry[K comparable, V any] struct {
	key   K
	value V
}

type node[K comparable, V any] = Timer[entry[K, V]]

// dueItem is a fired timer on its way to execute.
type dueItem[K comparable, V any] struct {
	key   K
	value V
}

// keyShard is one lock's worth of the key index. Its inbox's lock guards
// the table too.
type keyShard[K comparable, V any] struct {
	inbox[entry[K, V]]
	tab table.Table[K, node[K, V]]
	_   [64]byte // keep neighbouring shards' locks off one cache line
}

// keyed is the state behind a TimingWheel: a key index and an executor
// over the driver's owner protocol, beside the Scheduler (a layer of the
// same driver, not a user of the Scheduler). The owner goroutine and the
// workers reference it, never the TimingWheel, so that a TimingWheel can
// become unreachable and its cleanup stop them.
type keyed[K comparable, V any] struct {
	d        *driver[entry[K, V]]
	execute  func(K, V)
	checkKey bool // K can hold values that panic when hashed
	seed     maphash.Seed
	shards   shardSet[keyShard[K, V]]

	// Owner goroutine only.
	fired []dueItem[K, V]
	ran   int // WithInline: fired[:ran] have been run (see flush)
	exec  *pool.Pool[dueItem[K, V], struct{}]
}

func keyOf[K comparable, V any](n *node[K, V]) K { return n.Value.key }

// New returns a started TimingWheel that advances every interval over
// numSlots slots and runs execute for each timer that falls due.
//
// A timer set with delay d fires at the first tick at or after d has passed:
// never early, and at most one interval late plus the time it takes the
// owner goroutine to get there. One rotation covers interval*numSlots; longer
// delays are exact too, and wait in coarser levels: a timer is looked at
// once per level at most, whatever its delay.
//
// execute runs on worker goroutines (see [WithConcurrency]) or, with
// [WithInline], on the owner goroutine. It may call the wheel's methods,
// except Drain and Stop under WithInline. A panic in execute is recovered
// and reported to the panic handler; other timers are not affected.
//
// New returns an error wrapping ErrArgument for interval <= 0,
// numSlots <= 0 or above MaxSlots, a nil execute or an invalid option. Call Stop to release the owner goroutine.
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
		d:        newDriver[entry[K, V]](interval, numSlots, cfg),
		execute:  execute,
		checkKey: mayPanicOnHash(reflect.TypeFor[K]()),
		seed:     maphash.MakeSeed(),
	}
	k.shards = newShardSet(k.d.shards, func(sh *keyShard[K, V]) { sh.tab.InitSeed(keyOf[K, V], 0, k.seed) })
	k.exec = pool.New(pool.Config[dueItem[K, V], struct{}]{
		Workers: cfg.concurrency,
		Run:     func(it dueItem[K, V], _ *struct{}) { k.execute(it.key, it.value) },
		Panic: func(it dueItem[K, V], r any, stack []byte) {
			k.d.cfg.onPanic(&PanicError{Key: it.key, Value: r, Stack: stack})
		},
	})
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
// ErrClosed after Stop. O(1); re-arming a pending timer later does not even
// reach the owner goroutine.
func (tw *TimingWheel[K, V]) SetTimer(key K, value V, delay time.Duration) error {
	return tw.k.set(key, value, delay, true)
}

// MoveTimer re-arms key's timer to fire after delay, measured from now,
// keeping its value; a delay shorter than one interval fires it on the next
// tick, once. It does nothing, and returns nil, when key has no timer (it
// fired, was removed, or never existed), as go-zero does. Errors are as for
// SetTimer. O(1); a later deadline only records it in the timer.
func (tw *TimingWheel[K, V]) MoveTimer(key K, delay time.Duration) error {
	var zero V
	return tw.k.set(key, zero, delay, false)
}

// RemoveTimer cancels key's timer, releasing its value at once and its key
// once the owner goroutine has unlinked it: at its next wake-up, which a
// removal brings forward to within about a second, or one interval if that
// is longer (sooner once 256 changes have queued in the key's shard; under
// WithTicker, at the next tick), not when the timer's slot comes up. It
// returns nil when key has no timer, ErrArgument for a key SetTimer refuses and
// ErrClosed after Stop. A callback that has already started (or been handed
// to a worker) is not recalled. O(1).
func (tw *TimingWheel[K, V]) RemoveTimer(key K) error {
	k := tw.k
	if err := k.check(key, 1); err != nil {
		return err
	}
	if k.d.stopped.Load() {
		return ErrClosed
	}
	h := maphash.Comparable(k.seed, key)
	sh := k.shards.get(table.Shard(h, k.shards.len()))
	if sh == nil {
		return nil // no key ever went to this shard
	}
	sh.mu.Lock()
	notify := false
	if n := sh.tab.Delete(key, h); n != nil {
		n.Value.value = *new(V)
		notify = k.d.cancelLocked(&sh.inbox, n)
	}
	sh.mu.Unlock()
	if notify {
		k.d.signal()
	}
	return nil
}

// set is SetTimer (store) and MoveTimer (!store).
func (k *keyed[K, V]) set(key K, value V, delay time.Duration, store bool) error {
	if err := k.check(key, delay); err != nil {
		return err
	}
	if k.d.stopped.Load() {
		return ErrClosed
	}
	h := maphash.Comparable(k.seed, key)
	i := table.Shard(h, k.shards.len())
	sh := k.shards.get(i)
	if sh != nil {
		// In a large index the lookup below misses the cache: start that
		// load now, so that it overlaps the clock reading.
		sh.tab.Prefetch(h)
	}
	want := k.d.callerDeadline(delay)
	if !store {
		if sh == nil {
			return nil // no key ever went to this shard
		}
		// Lock-free: a later deadline is one CAS (see later); a key
		// with no timer needs nothing.
		n := sh.tab.Get(key, h)
		if n == nil || later(n, want) {
			return nil
		}
	}
	if sh == nil {
		sh = k.shards.open(i)
	}
	notify := false
	sh.mu.Lock()
	n, pos := sh.tab.Find(key, h)
	switch {
	case n != nil:
		if store {
			n.Value.value = value
		}
		notify = k.d.armLocked(&sh.inbox, n, want)
	case store:
		n = &node[K, V]{Value: entry[K, V]{key: key, value: value}}
		sh.tab.Insert(pos, n, h)
		notify = k.d.armLocked(&sh.inbox, n, want)
	}
	sh.mu.Unlock()
	if notify {
		k.d.signal()
	}
	return nil
}

// Drain removes every pending timer and then calls fn(key, value) for each,
// on the calling goroutine, in no particular order. Timers set concurrently
// with Drain may or may not be included; none is lost. fn may call the
// wheel. Drain signals the owner goroutine at most once, after removing
// every timer, so that it unlinks them, and lets go of their keys, all
// at one wake-up (values are let go at once). Drain returns an error
// wrapping ErrArgument for a nil fn, with nothing removed, and ErrClosed
// after Stop.
func (tw *TimingWheel[K, V]) Drain(fn func(key K, value V)) error {
	if fn == nil {
		return argError("nil Drain func")
	}
	k := tw.k
	if k.d.stopped.Load() {
		return ErrClosed
	}
	var items []dueItem[K, V]
	// One signal after every shard, not one per shard: an owner woken by
	// the first shard's removals would sleep at most lazyWait after them,
	// so the later shards' removals would wait for that wake-up, keeping
	// their keys until then (TestReleasesKeyAndValue/drained failed so
	// under qemu-i386). Signalled once, the owner takes them all.
	notify := false
	for i := range k.shards.len() {
		sh := k.shards.get(i)
		if sh == nil {
			continue
		}
		sh.mu.Lock()
		sh.tab.All(func(n *node[K, V]) bool {
			items = append(items, dueItem[K, V]{n.Value.key, n.Value.value})
			n.Value.value = *new(V)
			notify = k.d.cancelLocked(&sh.inbox, n) || notify
			return true
		})
		sh.tab.Clear()
		sh.mu.Unlock()
	}
	if notify {
		k.d.signal()
	}
	for i, it := range items {
		items[i] = dueItem[K, V]{}
		fn(it.key, it.value)
	}
	return nil
}

// Len returns the number of pending timers. It returns 0 after Stop. It
// locks every shard in turn: O(shards).
func (tw *TimingWheel[K, V]) Len() int {
	k := tw.k
	if k.d.stopped.Load() {
		return 0
	}
	n := 0
	for i := range k.shards.len() {
		sh := k.shards.get(i)
		if sh == nil {
			continue
		}
		sh.mu.Lock()
		n += sh.tab.Len()
		sh.mu.Unlock()
	}
	return n
}

// Has reports whether key has a pending timer. It returns false for a key
// SetTimer refuses and after Stop. O(1).
func (tw *TimingWheel[K, V]) Has(key K) bool {
	k := tw.k
	if k.check(key, 1) != nil || k.d.stopped.Load() {
		return false
	}
	h := maphash.Comparable(k.seed, key)
	sh := k.shards.get(table.Shard(h, k.shards.len()))
	if sh == nil {
		return false
	}
	sh.mu.Lock()
	ok := sh.tab.Get(key, h) != nil
	sh.mu.Unlock()
	return ok
}

// Stop stops the wheel and returns once its owner goroutine has exited.
// Pending timers are dropped without running (call Drain first to keep
// them). Callbacks already handed to workers still run, and Stop does not
// wait for them: they may still be running, or about to start, when Stop
// returns (use Shutdown to wait for them). A callback may therefore call
// Stop, except under WithInline, where callbacks run on the owner
// goroutine and Stop would wait for itself. Every later call of another
// method returns ErrClosed (Len, Has and Remaining report nothing
// pending); calling Stop again does nothing.
func (tw *TimingWheel[K, V]) Stop() { tw.k.d.shutdown() }

// Shutdown stops the wheel as Stop does and then waits until no callback
// is running or queued, or until ctx is done. It returns nil once every
// callback has returned, or ctx.Err() if ctx ended first (the wheel is
// stopped either way, and the callbacks still running go on). It may be
// called more than once, and after Stop. It must not be called from a
// callback, which would wait for itself until ctx ends.
func (tw *TimingWheel[K, V]) Shutdown(ctx context.Context) error {
	d := tw.k.d
	d.signalStop()
	select {
	case <-d.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	// The owner has exited, so no callback is handed out any more.
	select {
	case <-tw.k.exec.Idle():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns the wheel's counters, as of the owner goroutine's last
// wake-up, and Len. It never waits for the owner, works after Stop (Pending
// is then 0), and is O(shards), like Len.
func (tw *TimingWheel[K, V]) Stats() Stats {
	s := tw.k.d.stats()
	s.Pending = tw.Len()
	return s
}

// Remaining returns the time left until key's timer is due, and true; or
// 0 and false when key has no pending timer (it fired, was removed or
// drained, or never existed), for a key SetTimer refuses, and after Stop.
// The time left runs to the tick the timer fires at, so it is never less
// than what remains of the delay asked for; a timer that is due but whose
// callback has not been handed out yet reports 0 and true. Under
// WithTicker it is the number of ticks still to receive times the
// interval. O(1); it takes no lock and does not wait for the owner.
func (tw *TimingWheel[K, V]) Remaining(key K) (time.Duration, bool) {
	k := tw.k
	if k.check(key, 1) != nil || k.d.stopped.Load() {
		return 0, false
	}
	h := maphash.Comparable(k.seed, key)
	sh := k.shards.get(table.Shard(h, k.shards.len()))
	if sh == nil {
		return 0, false
	}
	n := sh.tab.Get(key, h) // lock-free, as in MoveTimer
	if n == nil {
		return 0, false
	}
	switch want := n.deadline(); want {
	case dead:
		return 0, false
	case firing:
		return 0, true
	default:
		return k.d.until(want), true
	}
}

func (k *keyed[K, V]) check(key K, delay time.Duration) error {
	if err := validDelay(delay); err != nil {
		return err
	}
	if k.checkKey {
		// A nil interface key is valid; reflect calls it not comparable.
		if v := reflect.ValueOf(any(key)); v.IsValid() && !v.Comparable() {
			return argError("key of type %T is not hashable", key)
		}
	}
	if key != key {
		// NaN, or a struct, array or interface holding one: the index could
		// store it but never find or delete it again.
		return argError("key of type %T is not equal to itself (NaN)", key)
	}
	return nil
}

// inbox returns shard i's inbox, or nil. Owner side of layer.
func (k *keyed[K, V]) inbox(i int) *inbox[entry[K, V]] {
	if sh := k.shards.get(i); sh != nil {
		return &sh.inbox
	}
	return nil
}

// fire runs on the owner goroutine for a timer whose firing it has
// settled. Under the key's lock the timer leaves the index and its value
// goes to execute, unless a SetTimer, MoveTimer, RemoveTimer or Drain took
// the lock first and re-armed or removed it (its state is then no longer
// firing): the call that got there first wins.
func (k *keyed[K, V]) fire(n *node[K, V], due int64) int64 {
	h := maphash.Comparable(k.seed, n.Value.key)
	sh := k.shards.get(table.Shard(h, k.shards.len()))
	sh.mu.Lock()
	if n.deadline() == firing {
		sh.tab.DeleteEntry(n, h)
		n.setDeadline(dead)
		k.fired = append(k.fired, dueItem[K, V]{n.Value.key, n.Value.value})
		n.Value.value = *new(V)
		k.d.fired(due)
	}
	sh.mu.Unlock()
	return 0
}

// flush hands the timers fired in the last slice of work to their callbacks.
func (k *keyed[K, V]) flush() {
	if len(k.fired) == 0 {
		return
	}
	if k.d.cfg.inline {
		// Each item leaves the list before it runs: after a Goexit in
		// one, the new owner goroutine's first flush runs the rest.
		for k.ran < len(k.fired) {
			it := k.fired[k.ran]
			k.fired[k.ran] = dueItem[K, V]{}
			k.ran++
			k.runOne(it)
		}
		k.ran = 0
	} else {
		k.exec.PushAll(k.fired)
		clear(k.fired)
	}
	k.fired = k.fired[:0]
}

// stopped lets the workers run the callbacks already handed to them, then
// exit: nothing is handed out any more.
func (k *keyed[K, V]) stopped() { k.exec.Drain() }

// runOne runs execute for one fired timer and reports a panic or a Goexit
// (see WithPanicHandler).
func (k *keyed[K, V]) runOne(it dueItem[K, V]) {
	returned := false
	defer func() {
		if !returned {
			k.d.cfg.onPanic(recovered(it.key, recover()))
		}
	}()
	k.execute(it.key, it.value)
	returned = true
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
