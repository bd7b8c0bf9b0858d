package bench

import (
	"fmt"
	"sync"
	"time"

	"github.com/zeromicro/go-zero/core/collection"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// wheel is the keyed timer API every implementation is driven through. Keys
// are strings and values ints in all benchmarks.
type wheel interface {
	Set(key string, value int, delay time.Duration) error
	Move(key string, delay time.Duration) error
	Remove(key string) error
	// Sync returns once every operation this goroutine submitted before it
	// has been applied, so that asynchronous work lands in the timed region.
	Sync()
	Close()
}

// impl names one implementation and builds it. fire is called once per timer
// that falls due, from whatever goroutine the implementation uses.
type impl struct {
	name  string
	fires bool // false for the floor, which has no clock
	new   func(interval time.Duration, slots int, fire func(key string, value int)) (wheel, error)
}

// impls lists the implementations in the order they are reported.
var impls = []impl{
	{name: "ttlkit", fires: true, new: newTTLKit},
	{name: "gozero", fires: true, new: newGoZero},
	{name: "afterfunc", fires: true, new: newAfterFunc},
	{name: "floor", fires: false, new: newFloor},
	{name: "floor+clock", fires: false, new: newFloorClock},
}

// ttlkit: our wheel. Commands are queued to the owner goroutine; Len waits
// for everything queued before it.

type ttlkitWheel struct {
	tw *timingwheel.TimingWheel[string, int]
}

func newTTLKit(interval time.Duration, slots int, fire func(string, int)) (wheel, error) {
	tw, err := timingwheel.New[string, int](interval, slots, fire)
	if err != nil {
		return nil, err
	}
	return ttlkitWheel{tw}, nil
}

func (w ttlkitWheel) Set(key string, value int, d time.Duration) error {
	return w.tw.SetTimer(key, value, d)
}
func (w ttlkitWheel) Move(key string, d time.Duration) error { return w.tw.MoveTimer(key, d) }
func (w ttlkitWheel) Remove(key string) error                { return w.tw.RemoveTimer(key) }
func (w ttlkitWheel) Sync()                                  { w.tw.Len() }
func (w ttlkitWheel) Close()                                 { w.tw.Stop() }

// gozero: go-zero's collection.TimingWheel. Each call is an unbuffered
// channel rendezvous with the owner goroutine, which then applies the
// command while the caller goes on. The owner takes one command at a time,
// so once a further command has been received every earlier one is done:
// Sync sends a removal of a key that is never used.

type gozeroWheel struct {
	tw *collection.TimingWheel
}

const syncKey = "\x00bench-sync"

func newGoZero(interval time.Duration, slots int, fire func(string, int)) (wheel, error) {
	tw, err := collection.NewTimingWheel(interval, slots, func(k, v any) {
		fire(k.(string), v.(int))
	})
	if err != nil {
		return nil, err
	}
	return gozeroWheel{tw}, nil
}

func (w gozeroWheel) Set(key string, value int, d time.Duration) error {
	return w.tw.SetTimer(key, value, d)
}
func (w gozeroWheel) Move(key string, d time.Duration) error { return w.tw.MoveTimer(key, d) }
func (w gozeroWheel) Remove(key string) error                { return w.tw.RemoveTimer(key) }
func (w gozeroWheel) Sync()                                  { _ = w.tw.RemoveTimer(syncKey) }
func (w gozeroWheel) Close()                                 { w.tw.Stop() }

// afterfunc: one runtime timer per key, map[string]*time.Timer under a
// mutex, AfterFunc / Reset / Stop. All operations are synchronous.

type afterFuncWheel struct {
	mu     sync.Mutex
	timers map[string]*time.Timer // guarded by mu
	fire   func(string, int)
}

func newAfterFunc(_ time.Duration, _ int, fire func(string, int)) (wheel, error) {
	return &afterFuncWheel{timers: make(map[string]*time.Timer), fire: fire}, nil
}

func (w *afterFuncWheel) Set(key string, value int, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.timers[key]; ok {
		old.Stop()
	}
	var t *time.Timer // written and read under mu only
	t = time.AfterFunc(d, func() {
		w.mu.Lock()
		current := w.timers[key] == t
		if current {
			delete(w.timers, key)
		}
		w.mu.Unlock()
		if current {
			w.fire(key, value)
		}
	})
	w.timers[key] = t
	return nil
}

func (w *afterFuncWheel) Move(key string, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.timers[key]; ok {
		t.Reset(d)
	}
	return nil
}

func (w *afterFuncWheel) Remove(key string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.timers[key]; ok {
		t.Stop()
		delete(w.timers, key)
	}
	return nil
}

func (w *afterFuncWheel) Sync() {}

func (w *afterFuncWheel) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, t := range w.timers {
		t.Stop()
		delete(w.timers, k)
	}
}

// floor: the least a keyed timer index can cost. A map from key to an entry
// that carries its own list links, one doubly linked list with a sentinel,
// no clock, no goroutine, no lock. Nothing ever fires. Deadlines are stored
// as the raw delay, so ordering is not maintained: this bounds the bookkeeping
// every real implementation must at least do (hash, allocate, link).

type floorEntry struct {
	key        string
	value      int
	deadline   time.Duration
	prev, next *floorEntry
}

type floorWheel struct {
	index map[string]*floorEntry
	root  floorEntry // sentinel: root.next is the front, root.prev the back
}

func newFloor(time.Duration, int, func(string, int)) (wheel, error) {
	w := &floorWheel{index: make(map[string]*floorEntry)}
	w.root.prev, w.root.next = &w.root, &w.root
	return w, nil
}

func (w *floorWheel) pushBack(e *floorEntry) {
	last := w.root.prev
	e.prev, e.next = last, &w.root
	last.next = e
	w.root.prev = e
}

func (w *floorWheel) unlink(e *floorEntry) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
}

func (w *floorWheel) Set(key string, value int, d time.Duration) error {
	if e, ok := w.index[key]; ok {
		e.value, e.deadline = value, d
		w.unlink(e)
		w.pushBack(e)
		return nil
	}
	e := &floorEntry{key: key, value: value, deadline: d}
	w.index[key] = e
	w.pushBack(e)
	return nil
}

func (w *floorWheel) Move(key string, d time.Duration) error {
	if e, ok := w.index[key]; ok {
		e.deadline = d
		w.unlink(e)
		w.pushBack(e)
	}
	return nil
}

func (w *floorWheel) Remove(key string) error {
	if e, ok := w.index[key]; ok {
		w.unlink(e)
		delete(w.index, key)
	}
	return nil
}

func (w *floorWheel) Sync() {}

func (w *floorWheel) Close() {
	clear(w.index)
	w.root.prev, w.root.next = &w.root, &w.root
}

// floor+clock: the floor plus the one clock reading per operation that any
// exact design must make (a deadline is now + delay), stored as the
// absolute deadline. Still no ordering, no goroutine, no lock.

type floorClockWheel struct{ *floorWheel }

func newFloorClock(time.Duration, int, func(string, int)) (wheel, error) {
	w, _ := newFloor(0, 0, nil)
	return floorClockWheel{w.(*floorWheel)}, nil
}

// clockDeadline returns the deadline now + d, in ns since the Unix epoch.
func clockDeadline(d time.Duration) time.Duration { return time.Duration(time.Now().UnixNano()) + d }

func (w floorClockWheel) Set(key string, value int, d time.Duration) error {
	return w.floorWheel.Set(key, value, clockDeadline(d))
}

func (w floorClockWheel) Move(key string, d time.Duration) error {
	return w.floorWheel.Move(key, clockDeadline(d))
}

func (w floorClockWheel) Remove(key string) error {
	_ = time.Now() // a removal reads the clock too in the designs compared
	return w.floorWheel.Remove(key)
}

// check verifies the floor's invariants: the list is a consistent ring
// through the sentinel and holds exactly the indexed entries.
func (w *floorWheel) check() error {
	n := 0
	for e := w.root.next; e != &w.root; e = e.next {
		if e.next.prev != e || e.prev.next != e {
			return fmt.Errorf("entry %q: broken links", e.key)
		}
		if w.index[e.key] != e {
			return fmt.Errorf("entry %q on the list is not the indexed one", e.key)
		}
		n++
		if n > len(w.index) {
			return fmt.Errorf("list longer than index (%d entries)", len(w.index))
		}
	}
	if n != len(w.index) {
		return fmt.Errorf("list has %d entries, index %d", n, len(w.index))
	}
	return nil
}
