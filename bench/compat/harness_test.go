package compat

import (
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"
	"weak"

	gz "github.com/zeromicro/go-zero/core/collection"
	"github.com/zeromicro/go-zero/core/timex"

	"github.com/ttlkit/ttlkit/collection"
)

// iv is the interval of every wheel in these tests; delays are written as
// multiples of it.
const iv = time.Second

// ticks returns n intervals.
func ticks(n int) time.Duration { return time.Duration(n) * iv }

// wheelAPI is the method set go-zero's *TimingWheel and ours share, so one
// scenario can drive either.
type wheelAPI interface {
	SetTimer(key, value any, delay time.Duration) error
	MoveTimer(key any, delay time.Duration) error
	RemoveTimer(key any) error
	Drain(fn func(key, value any)) error
	Stop()
}

// wheelImpl builds one implementation's wheel. The constructors take a
// plain func for execute: it converts to either package's Execute.
type wheelImpl struct {
	name        string
	withTicker  func(interval time.Duration, slots int, execute func(key, value any), ticker timex.Ticker) (wheelAPI, error)
	realClock   func(interval time.Duration, slots int, execute func(key, value any)) (wheelAPI, error)
	errClosed   error
	errArgument error
}

var (
	goZeroWheel = wheelImpl{
		name: "gozero",
		withTicker: func(interval time.Duration, slots int, execute func(key, value any), ticker timex.Ticker) (wheelAPI, error) {
			return gz.NewTimingWheelWithTicker(interval, slots, execute, ticker)
		},
		realClock: func(interval time.Duration, slots int, execute func(key, value any)) (wheelAPI, error) {
			return gz.NewTimingWheel(interval, slots, execute)
		},
		errClosed:   gz.ErrClosed,
		errArgument: gz.ErrArgument,
	}
	ourWheel = wheelImpl{
		name: "ttlkit",
		withTicker: func(interval time.Duration, slots int, execute func(key, value any), ticker timex.Ticker) (wheelAPI, error) {
			return collection.NewTimingWheelWithTicker(interval, slots, execute, ticker)
		},
		realClock: func(interval time.Duration, slots int, execute func(key, value any)) (wheelAPI, error) {
			return collection.NewTimingWheel(interval, slots, execute)
		},
		errClosed:   collection.ErrClosed,
		errArgument: collection.ErrArgument,
	}
	wheelImpls = []wheelImpl{goZeroWheel, ourWheel}
)

// fire is one run of a wheel's callback: on which tick, with what.
type fire struct {
	tick       int
	key, value any
}

func (f fire) String() string { return fmt.Sprintf("%v=%v@%d", f.key, f.value, f.tick) }

func sortFires(fs []fire) []fire {
	slices.SortFunc(fs, func(a, b fire) int {
		if a.tick != b.tick {
			return a.tick - b.tick
		}
		return strings.Compare(fmt.Sprint(a.key, a.value), fmt.Sprint(b.key, b.value))
	})
	return fs
}

// rig drives one wheel with go-zero's timex fake ticker inside a synctest
// bubble. Every method returns once the wheel has applied the call and every
// callback the call caused has returned (synctest.Wait), so what a scenario
// observes does not depend on scheduling: go-zero's commands are channel
// rendezvous applied after the sender moves on, ours are queued, and both
// run callbacks on other goroutines.
type rig struct {
	t       *testing.T
	w       wheelAPI
	ticker  timex.FakeTicker
	stopped bool

	// then, if set before the first timer, runs after each callback is
	// recorded, on the callback's goroutine.
	then func(w wheelAPI, key, value any)

	mu    sync.Mutex
	tick  int    // ticks sent so far
	fired []fire // callbacks run since the last fires()
}

// newRig must be called inside a synctest bubble; the wheel is stopped when
// the bubble's test ends.
func newRig(t *testing.T, impl wheelImpl, slots int) *rig {
	t.Helper()
	r := &rig{t: t, ticker: timex.NewFakeTicker()}
	w, err := impl.withTicker(iv, slots, r.record, r.ticker)
	if err != nil {
		t.Fatalf("%s: new wheel: %v", impl.name, err)
	}
	r.w = w
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *rig) record(key, value any) {
	r.mu.Lock()
	r.fired = append(r.fired, fire{r.tick, key, value})
	r.mu.Unlock()
	if r.then != nil {
		r.then(r.w, key, value)
	}
}

func (r *rig) settle(err error) error {
	synctest.Wait()
	return err
}

func (r *rig) set(key, value any, delay time.Duration) error {
	return r.settle(r.w.SetTimer(key, value, delay))
}
func (r *rig) move(key any, delay time.Duration) error { return r.settle(r.w.MoveTimer(key, delay)) }
func (r *rig) remove(key any) error                    { return r.settle(r.w.RemoveTimer(key)) }

// advance sends n ticks, one at a time, each fully handled before the next.
func (r *rig) advance(n int) {
	for range n {
		r.mu.Lock()
		r.tick++
		r.mu.Unlock()
		r.ticker.Tick()
		synctest.Wait()
	}
}

// drain calls Drain and returns what it handed over, sorted as fires at the
// current tick, once every fn call has returned (go-zero's Drain returns
// before it runs fn).
func (r *rig) drain() ([]fire, error) {
	var mu sync.Mutex
	var got []fire
	err := r.w.Drain(func(key, value any) {
		mu.Lock()
		got = append(got, fire{r.now(), key, value})
		mu.Unlock()
	})
	synctest.Wait()
	return sortFires(got), err
}

func (r *rig) now() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tick
}

// fires returns the callbacks run since the last call, sorted.
func (r *rig) fires() []fire {
	r.mu.Lock()
	defer r.mu.Unlock()
	fs := r.fired
	r.fired = nil
	return sortFires(fs)
}

// stop stops the wheel once (go-zero's Stop panics when called twice).
// Only the test's goroutine calls it.
func (r *rig) stop() {
	if !r.stopped {
		r.stopped = true
		r.w.Stop()
		synctest.Wait()
	}
}

// op is one step of a wheel script. Keys are small ints; a set's value is
// the index of the op, so a replaced value shows.
type op struct {
	kind  byte // 's' SetTimer, 'm' MoveTimer, 'r' RemoveTimer, 't' advance
	key   int
	ticks int // delay for 's' and 'm', count for 't'
}

func (o op) String() string {
	switch o.kind {
	case 't':
		return fmt.Sprintf("tick×%d", o.ticks)
	case 'r':
		return fmt.Sprintf("remove(%d)", o.key)
	case 'm':
		return fmt.Sprintf("move(%d,%d)", o.key, o.ticks)
	}
	return fmt.Sprintf("set(%d,%d)", o.key, o.ticks)
}

// runScript runs ops on a fresh wheel of impl in its own bubble and returns
// every callback run, sorted.
func runScript(t *testing.T, impl wheelImpl, slots int, ops []op) []fire {
	var all []fire
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, impl, slots)
		for i, o := range ops {
			switch o.kind {
			case 's':
				r.set(o.key, i, ticks(o.ticks))
			case 'm':
				r.move(o.key, ticks(o.ticks))
			case 'r':
				r.remove(o.key)
			case 't':
				r.advance(o.ticks)
			}
		}
		all = r.fires()
	})
	return all
}

// modelScript is the reference: a timer set or moved at tick n with a delay
// of k intervals fires once, on tick n+k, with the value it was last set
// with; a move of a key with no timer does nothing.
func modelScript(ops []op) []fire {
	type timer struct{ due, value int }
	pending := map[int]timer{}
	var out []fire
	now := 0
	for i, o := range ops {
		switch o.kind {
		case 's':
			pending[o.key] = timer{now + o.ticks, i}
		case 'm':
			if tm, ok := pending[o.key]; ok {
				pending[o.key] = timer{now + o.ticks, tm.value}
			}
		case 'r':
			delete(pending, o.key)
		case 't':
			for range o.ticks {
				now++
				for k, tm := range pending {
					if tm.due == now {
						out = append(out, fire{now, k, tm.value})
						delete(pending, k)
					}
				}
			}
		}
	}
	return sortFires(out)
}

// inLeakyBubble runs f in a synctest bubble that is expected to end with
// goroutines blocked forever: go-zero's Cache starts two (its timing wheel
// and a stats logger) and offers no way to stop them, so synctest.Test
// panics with a deadlock report once f returns. inLeakyBubble recovers that
// report and returns it; it returns "" if the bubble ended cleanly and
// re-panics anything else. f's failures reach t as usual.
func inLeakyBubble(t *testing.T, f func(t *testing.T)) (report string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if s := fmt.Sprint(r); strings.Contains(s, "blocked goroutines remain") {
			report = s
			return
		}
		panic(r)
	}()
	synctest.Test(t, f)
	return ""
}

// field returns a pointer to the unexported field name of the struct p
// points to. The tests use it only to reach go-zero's internals for
// observation (its wheel inside a Cache, its SafeMap's lock).
func field[T any](p any, name string) *T {
	v := reflect.ValueOf(p).Elem().FieldByName(name)
	if !v.IsValid() {
		panic(fmt.Sprintf("%T has no field %s", p, name))
	}
	return (*T)(unsafe.Pointer(v.UnsafeAddr()))
}

// payload is a value big enough to get its own allocation, so a weak
// pointer to it tells whether anything still references it.
type payload struct{ b [64]byte }

// released reports whether the payload w points to has been garbage
// collected.
func released(w weak.Pointer[payload]) bool {
	runtime.GC()
	return w.Value() == nil
}

// helperEnv marks a child process started by runHelper.
const helperEnv = "COMPAT_HELPER"

// runHelper re-runs this test binary with only the test named name and
// helperEnv set, and returns its combined output and whether it failed. It
// shows go-zero behaviours that crash the whole process.
func runHelper(t *testing.T, name string) (out string, failed bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run %s: %v", name, err)
		}
	}
	return string(b), err != nil
}

// helperOnly skips a helper test unless it runs as runHelper's child.
func helperOnly(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("runs only as the child process of a TestDiff test")
	}
}
