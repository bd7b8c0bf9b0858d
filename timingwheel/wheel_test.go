package timingwheel

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// checkWheel verifies every structural invariant of w and returns the first
// violation, or nil. It is O(numSlots + timers) and is run after every
// operation by the tests of the pure core.
//
//   - Every list (slots and scan list) is a consistent circular list: each
//     entry's prev is the entry before it, and no entry is on two lists.
//   - count is the number of entries on all lists.
//   - visit[s] is never exactly when slot s is empty and is not being
//     refilled; otherwise visit[s] ≡ s (mod n), visit[s] > cur, and for each
//     entry e of slot s, visit[s] is at most the last tick ≡ s (mod n) that
//     is not after e.when (the slot is scanned no later than the entry's
//     deadline).
//   - Every entry in a slot is due strictly after cur.
//   - next is at most the smallest visit.
//   - When the scan list is not empty, scanAt == cur and every entry on it
//     is due at or after scanAt.
func checkWheel[T any](w *wheel[T]) error {
	// An entry has one pair of links, so an entry on two lists breaks a prev
	// link or a head.prev of one of them, and a cycle that misses the head
	// runs past count: the walk needs no set of seen entries.
	var list []*Timer[T]
	walk := func(slot int, head *Timer[T]) error {
		list = list[:0]
		prev := head
		for e := head.next; e != head; e = e.next {
			if e == nil {
				return fmt.Errorf("list %d: nil link after %d entries", slot, len(list))
			}
			if e.prev != prev {
				return fmt.Errorf("list %d: entry %d: prev link broken", slot, len(list))
			}
			list = append(list, e)
			prev = e
			if len(list) > w.count {
				return fmt.Errorf("list %d: more entries than count %d", slot, w.count)
			}
		}
		if head.prev != prev {
			return fmt.Errorf("list %d: head.prev is not the last entry", slot)
		}
		return nil
	}
	total := 0
	minVisit := int64(never)
	for s := range w.slots {
		if err := walk(s, &w.slots[s]); err != nil {
			return err
		}
		total += len(list)
		v := w.visit[s]
		minVisit = min(minVisit, v)
		if v == never {
			if len(list) > 0 {
				return fmt.Errorf("slot %d: %d entries but visit = never", s, len(list))
			}
			continue
		}
		if got := floorMod(v, w.n); got != int64(s) {
			return fmt.Errorf("slot %d: visit %d ≡ %d (mod %d), want ≡ %d", s, v, got, w.n, s)
		}
		if v <= w.cur {
			return fmt.Errorf("slot %d: visit %d not after cur %d", s, v, w.cur)
		}
		for i, e := range list {
			if e.when <= w.cur {
				return fmt.Errorf("slot %d entry %d: due at %d, not after cur %d", s, i, e.when, w.cur)
			}
			if last := e.when - floorMod(e.when-int64(s), w.n); v > last {
				return fmt.Errorf("slot %d entry %d: visit %d after %d, the last tick of the slot not after its deadline %d", s, i, v, last, e.when)
			}
		}
	}
	if err := walk(-1, &w.scan); err != nil {
		return err
	}
	scan := list
	total += len(scan)
	if len(scan) > 0 && w.scanAt != w.cur {
		return fmt.Errorf("scan list of %d entries at tick %d, but cur = %d", len(scan), w.scanAt, w.cur)
	}
	for i, e := range scan {
		if e.when < w.scanAt {
			return fmt.Errorf("scan entry %d: due at %d, before the scanned tick %d", i, e.when, w.scanAt)
		}
	}
	if total != w.count {
		return fmt.Errorf("count = %d, but %d entries are linked", w.count, total)
	}
	if w.next > minVisit {
		return fmt.Errorf("next = %d, after the smallest visit %d", w.next, minVisit)
	}
	return nil
}

func floorMod(a, n int64) int64 {
	m := a % n
	if m < 0 {
		m += n
	}
	return m
}

// harness drives a wheel of numbered timers next to a trivially correct
// reference model: a map from timer to absolute deadline. Every timer must
// fire exactly at the tick the model says, exactly once, and the invariant
// checker runs after every operation.
type harness struct {
	t      testing.TB
	w      *wheel[int]
	timers []*Timer[int]
	model  map[int]int64 // timer id → deadline tick, for armed timers
	now    int64         // the target of the last advance
	last   int64         // tick of the last firing: firings never go back
	fired  []firing
	rearm  map[int]int64 // id → delay in ticks to re-arm with when it fires
}

type firing struct {
	id   int
	tick int64
}

func newHarness(t testing.TB, numSlots, numTimers int) *harness {
	h := &harness{
		t:     t,
		w:     newWheel[int](numSlots),
		model: make(map[int]int64),
		rearm: make(map[int]int64),
	}
	for i := range numTimers {
		h.timers = append(h.timers, &Timer[int]{Value: i})
	}
	h.check("new")
	return h
}

// check runs the invariant checker and compares the wheel with the model;
// what and args describe the last operation, formatted only on failure.
func (h *harness) check(what string, args ...any) {
	if err := checkWheel(h.w); err != nil {
		h.t.Fatalf("after %s: %v", fmt.Sprintf(what, args...), err)
	}
	if got, want := h.w.count, len(h.model); got != want {
		h.t.Fatalf("after %s: count = %d, want %d", fmt.Sprintf(what, args...), got, want)
	}
	for id, when := range h.model {
		tm := h.timers[id]
		if !tm.scheduled() {
			h.t.Fatalf("after %s: timer %d due at %d is not scheduled", fmt.Sprintf(what, args...), id, when)
		}
		if tm.when != when {
			h.t.Fatalf("after %s: timer %d due at %d, want %d", fmt.Sprintf(what, args...), id, tm.when, when)
		}
	}
}

// schedule arms timer id at absolute tick when; the model clamps a deadline
// that has passed to the tick after the last one processed.
func (h *harness) schedule(id int, when int64) {
	h.model[id] = max(when, h.w.cur+1)
	h.w.schedule(h.timers[id], when)
	h.check("schedule(%d, %d)", id, when)
}

func (h *harness) cancel(id int) {
	_, want := h.model[id]
	delete(h.model, id)
	if got := h.w.cancel(h.timers[id]); got != want {
		h.t.Fatalf("cancel(%d) = %v, want %v", id, got, want)
	}
	h.check("cancel(%d)", id)
}

func (h *harness) fire(tm *Timer[int]) int64 {
	id := tm.Value
	tick := h.w.scanAt
	want, ok := h.model[id]
	switch {
	case tm.scheduled():
		h.t.Fatalf("timer %d fired while still linked", id)
	case !ok:
		h.t.Fatalf("timer %d fired at tick %d, but it is not armed", id, tick)
	case tick != want:
		h.t.Fatalf("timer %d fired at tick %d, want %d", id, tick, want)
	case tick > h.now:
		h.t.Fatalf("timer %d fired at tick %d, after the advance target %d", id, tick, h.now)
	case tick < h.last:
		h.t.Fatalf("timer %d fired at tick %d, after a firing at tick %d", id, tick, h.last)
	}
	h.last = tick
	delete(h.model, id)
	h.fired = append(h.fired, firing{id, tick})
	if d, ok := h.rearm[id]; ok {
		h.model[id] = tick + d
		return tick + d
	}
	return 0
}

// step makes one advance call towards now with the given budget and
// reports whether work remains.
func (h *harness) step(now int64, budget int) bool {
	h.now = max(h.now, now)
	more := h.w.advance(now, budget, h.fire)
	h.check("advance(%d, budget %d)", now, budget)
	if !more {
		h.settled()
	}
	return more
}

// advance processes every tick up to now in calls of the given budget.
func (h *harness) advance(now int64, budget int) {
	for h.step(now, budget) {
	}
}

// settled checks the state after an advance finished: nothing due is left.
func (h *harness) settled() {
	for id, when := range h.model {
		if when <= h.now {
			h.t.Fatalf("advance to %d done, but timer %d due at %d did not fire", h.now, id, when)
		}
	}
	if next := h.w.nextVisit(); next <= h.now {
		h.t.Fatalf("advance to %d done, but nextVisit = %d", h.now, next)
	}
	if h.w.cur > h.now {
		h.t.Fatalf("advance to %d done, but cur = %d", h.now, h.w.cur)
	}
}

func TestWheelEmpty(t *testing.T) {
	h := newHarness(t, 4, 0)
	if got := h.w.nextVisit(); got != never {
		t.Fatalf("nextVisit of an empty wheel = %d, want never", got)
	}
	h.advance(1000, 1)
	if len(h.fired) != 0 {
		t.Fatalf("an empty wheel fired %v", h.fired)
	}
}

// TestWheelSweepMoves is the exhaustive sweep of small wheels: for every
// slot count 1..8, cursor position, old delay, elapsed ticks and new delay up
// to three rotations, a timer is armed, the wheel advanced, the timer moved
// (later, earlier, same, or re-armed after it fired) or re-set, and every
// timer must fire exactly at the tick the reference model says, once.
// Companion timers share the old and new slots at other rotations and the
// new deadline's tick, so the relinking has neighbours to get wrong. The
// advance budget cycles through 1, 2, 3 and unlimited, and in half the cases
// the move happens while a scan is unfinished.
func TestWheelSweepMoves(t *testing.T) {
	const (
		a       = iota // the timer under test
		sameOld        // in the old slot, one rotation later
		sameNew        // in the new slot, one rotation later
		tieNew         // due at the same tick as the new deadline
		nTimers
	)
	budgets := []int{1, 2, 3, 1 << 30}
	cases := 0
	for n := int64(1); n <= 8; n++ {
		for cursor := int64(0); cursor < n; cursor++ {
			for oldDelay := int64(1); oldDelay <= 3*n; oldDelay++ {
				for elapsed := int64(0); elapsed <= oldDelay; elapsed++ {
					for newDelay := int64(1); newDelay <= 3*n; newDelay++ {
						cases++
						budget := budgets[cases%len(budgets)]
						midScan := cases%2 == 0
						reset := cases%3 == 0 // cancel, then arm afresh: a SetTimer of a new timer
						name := func() string {
							return fmt.Sprintf("n=%d cursor=%d old=%d elapsed=%d new=%d budget=%d midScan=%v reset=%v",
								n, cursor, oldDelay, elapsed, newDelay, budget, midScan, reset)
						}
						sweepCase(t, name, n, cursor, oldDelay, elapsed, newDelay, budget, midScan, reset)
						if t.Failed() {
							return
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases", cases)
}

func sweepCase(t *testing.T, name func() string, n, cursor, oldDelay, elapsed, newDelay int64, budget int, midScan, reset bool) {
	ht := &namedTB{TB: t, name: name}
	h := newHarness(ht, int(n), 4)
	h.advance(cursor, budget)
	oldAt := cursor + oldDelay
	h.schedule(0, oldAt)
	h.schedule(1, oldAt+n)
	// Advance by elapsed ticks; in midScan cases stop after the first
	// call that leaves work, so the move lands in the middle of a scan.
	now := cursor + elapsed
	for h.step(now, budget) && !midScan {
	}
	before := len(h.fired) // 1 if the timer fired at its old deadline already
	newAt := now + newDelay
	h.schedule(2, newAt+n)
	h.schedule(3, newAt)
	if reset {
		h.cancel(0)
	}
	h.schedule(0, newAt)
	h.advance(max(oldAt, newAt)+2*n, budget)
	if len(h.model) != 0 {
		ht.Fatalf("timers %v never fired", h.model)
	}
	got := 0
	for _, f := range h.fired {
		if f.id == 0 {
			got++
		}
	}
	want := 1 + before // re-armed after it fired: once more
	if before == 0 && oldAt < now {
		ht.Fatalf("timer due at %d had not fired by %d", oldAt, now)
	}
	if got != want {
		ht.Fatalf("timer fired %d times, want %d (firings %v)", got, want, h.fired)
	}
}

// TestWheelSweepRemove arms, advances and removes in every small
// configuration: a removed timer never fires, its slot neighbours do.
func TestWheelSweepRemove(t *testing.T) {
	for n := int64(1); n <= 8; n++ {
		for cursor := int64(0); cursor < n; cursor++ {
			for oldDelay := int64(1); oldDelay <= 3*n; oldDelay++ {
				for elapsed := int64(0); elapsed < oldDelay; elapsed++ {
					for _, budget := range []int{1, 2, 1 << 30} {
						name := func() string {
							return fmt.Sprintf("n=%d cursor=%d old=%d elapsed=%d budget=%d", n, cursor, oldDelay, elapsed, budget)
						}
						h := newHarness(&namedTB{TB: t, name: name}, int(n), 3)
						h.advance(cursor, budget)
						h.schedule(0, cursor+oldDelay)
						h.schedule(1, cursor+oldDelay)   // same tick
						h.schedule(2, cursor+oldDelay+n) // same slot, next rotation
						h.step(cursor+elapsed, budget)   // possibly mid-scan
						h.cancel(0)
						h.advance(cursor+oldDelay+2*n, budget)
						for _, f := range h.fired {
							if f.id == 0 {
								t.Fatalf("%s: removed timer fired at tick %d", name(), f.tick)
							}
						}
						if len(h.fired) != 2 {
							t.Fatalf("%s: firings %v, want timers 1 and 2", name(), h.fired)
						}
					}
				}
			}
		}
	}
}

// namedTB prefixes failures with the case name, so the sweep need not start
// a subtest for each of its cases.
type namedTB struct {
	testing.TB
	name func() string
}

func (n *namedTB) Fatalf(format string, args ...any) {
	n.TB.Helper()
	n.TB.Fatalf("%s: %s", n.name(), fmt.Sprintf(format, args...))
}

// TestWheelClampsPastDeadlines: a deadline at or before the last processed
// tick fires on the next tick, also when set in the middle of a scan.
func TestWheelClampsPastDeadlines(t *testing.T) {
	cases := []struct {
		name   string
		when   int64
		midRun bool
	}{
		{"deadline is the current tick", 10, false},
		{"deadline in the past", 3, false},
		{"deadline zero", 0, false},
		{"negative deadline", -5, false},
		{"past deadline in the middle of a catch-up", 3, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 4, 4)
			h.schedule(1, 5)
			h.schedule(2, 5)
			if c.midRun {
				h.step(10, 1) // fires timer 1 at tick 5; timer 2 still on the scan list
			} else {
				h.advance(10, 1)
			}
			h.schedule(0, c.when) // the model says cur+1
			h.advance(20, 1)
			if got := h.fired[len(h.fired)-1]; got.id != 0 {
				t.Fatalf("last firing %v, want timer 0", got)
			}
		})
	}
}

// TestWheelRearmFromFire: a fire callback that returns a tick re-arms the
// timer there, exactly once per arming.
func TestWheelRearmFromFire(t *testing.T) {
	for _, n := range []int{1, 3, 8} {
		for _, period := range []int64{1, 2, 5, 17} {
			t.Run(fmt.Sprintf("slots=%d period=%d", n, period), func(t *testing.T) {
				h := newHarness(t, n, 2)
				h.rearm[0] = period
				h.schedule(0, period)
				h.schedule(1, 3)
				h.advance(100, 2)
				var ticks []int64
				for _, f := range h.fired {
					if f.id == 0 {
						ticks = append(ticks, f.tick)
					}
				}
				if got, want := int64(len(ticks)), 100/period; got != want {
					t.Fatalf("fired %d times, want %d: %v", got, want, ticks)
				}
				for i, tick := range ticks {
					if want := int64(i+1) * period; tick != want {
						t.Fatalf("firing %d at tick %d, want %d", i, tick, want)
					}
				}
			})
		}
	}
}

// TestWheelFirePanicKeepsWheel: a panic out of fire leaves the wheel
// consistent, the timer unlinked and counted out, and the next advance goes
// on with the rest.
func TestWheelFirePanicKeepsWheel(t *testing.T) {
	h := newHarness(t, 4, 3)
	h.schedule(0, 2)
	h.schedule(1, 2)
	h.schedule(2, 6)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("advance did not panic")
			}
		}()
		h.w.advance(10, 100, func(tm *Timer[int]) int64 { panic("boom") })
	}()
	delete(h.model, 0) // it was handed to fire, so it counts as fired
	h.check("panicking advance")
	h.advance(10, 100)
	if got, want := fmt.Sprint(h.fired), "[{1 2} {2 6}]"; got != want {
		t.Fatalf("firings after the panic %s, want %s", got, want)
	}
}

// TestWheelDrain takes every timer, from the slots and from an unfinished
// scan, exactly once.
func TestWheelDrain(t *testing.T) {
	h := newHarness(t, 4, 20)
	for id := range 20 {
		h.schedule(id, int64(1+id%5)+int64(id/5)*7)
	}
	h.step(3, 1) // leaves a scan unfinished
	took := map[int]int{}
	h.w.drain(func(tm *Timer[int]) {
		if tm.scheduled() {
			t.Fatalf("drain handed over timer %d still linked", tm.Value)
		}
		took[tm.Value]++
	})
	for id := range h.model {
		if took[id] != 1 {
			t.Errorf("timer %d drained %d times, want 1", id, took[id])
		}
	}
	if len(took) != len(h.model) {
		t.Errorf("drained %d timers, want %d", len(took), len(h.model))
	}
	clear(h.model)
	h.check("drain")
	if got := h.w.nextVisit(); got != never {
		t.Fatalf("nextVisit after drain = %d, want never", got)
	}
}

// TestWheelRandomOps runs random operation sequences against the model; the
// fuzz target explores further.
func TestWheelRandomOps(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		ops := make([]byte, 300)
		for i := range ops {
			ops[i] = byte(r.Uint32())
		}
		runOps(&namedTB{TB: t, name: func() string { return fmt.Sprintf("seed %d", seed) }}, ops)
		if t.Failed() {
			return
		}
	}
}

// runOps interprets data as a sequence of wheel operations on a wheel of
// 1..16 slots and 16 timers, checking the model after each.
func runOps(t testing.TB, data []byte) {
	if len(data) == 0 {
		return
	}
	n := int(data[0]%16) + 1
	h := newHarness(t, n, 16)
	data = data[1:]
	for len(data) >= 3 {
		op, a, b := data[0], data[1], data[2]
		data = data[3:]
		id := int(a % 16)
		switch op % 6 {
		case 0, 1: // schedule, up to 4 rotations ahead
			h.schedule(id, h.now+1+int64(b)%int64(4*n+2))
		case 2: // schedule at or before now: clamped
			h.schedule(id, h.now-int64(b%3))
		case 3:
			h.cancel(id)
		case 4: // one advance call, possibly leaving a scan unfinished
			h.step(h.now+int64(b%8), int(a%4)+1)
		case 5: // a full advance
			if b%4 == 0 {
				h.rearm[id] = int64(b%7) + 1
			} else {
				delete(h.rearm, id)
			}
			h.advance(h.now+int64(b%(3*uint8(n)+1)), int(a%3)+1)
		}
	}
	clear(h.rearm)
	horizon := h.now
	for _, when := range h.model {
		horizon = max(horizon, when)
	}
	h.advance(horizon, 5)
	if len(h.model) != 0 {
		t.Fatalf("timers %v never fired", h.model)
	}
}
