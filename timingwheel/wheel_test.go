package timingwheel

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// checkWheel verifies every structural invariant of w and returns the first
// violation, or nil. It is O(slots + timers) and is run after every
// operation by the tests of the pure core.
//
//   - Every list (slots and scan list) is a consistent circular list: each
//     entry's prev is the entry before it, and no entry is on two lists.
//   - count is the number of entries on all lists.
//   - Occupancy: every non-empty slot has its bit set; no bit is set beyond
//     a level's slots; below the top level, every set bit is for a slot of
//     cur's block at that level that starts after cur.
//   - Every entry in a slot is due after cur, and its slot is visited no
//     later than its deadline (it is never late). placed, if not nil, is told
//     for each entry whether it sits exactly where link puts its deadline
//     (its level and slot), and may reject it.
//   - next is at most the earliest visit.
//   - When the scan list is not empty, scanAt == cur and every entry on it
//     is due at or after scanAt.
func checkWheel[T any](w *wheel[T], placed func(t *Timer[T], exact bool) error) error {
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
	if got := w.block(w.cur); got != w.curQ {
		return fmt.Errorf("curQ = %d, want %d for cur %d", w.curQ, got, w.cur)
	}
	for k, x := range w.occ {
		valid := w.m
		if k < w.words0 {
			valid = min(64, w.n-int64(k)*64)
		}
		if valid < 64 && x>>valid != 0 {
			return fmt.Errorf("occupancy word %d = %#x: bits beyond its %d slots", k, x, valid)
		}
	}
	total := 0
	for idx := range int(w.n) + w.top*int(w.m) {
		level, i, set := slotInfo(w, idx)
		head := w.head(idx)
		if head == nil {
			if set {
				return fmt.Errorf("level %d slot %d: bit set, but the level was never made", level, i)
			}
			continue
		}
		if err := walk(idx, head); err != nil {
			return err
		}
		total += len(list)
		if len(list) > 0 && !set {
			return fmt.Errorf("level %d slot %d: %d entries but its bit is clear", level, i, len(list))
		}
		if !set {
			continue
		}
		at := visitOf(w, level, i)
		if at <= w.cur {
			return fmt.Errorf("level %d slot %d: bit set, visit %d not after cur %d", level, i, at, w.cur)
		}
		for j, e := range list {
			if e.deadline() <= w.cur {
				return fmt.Errorf("level %d slot %d entry %d: due at %d, not after cur %d", level, i, j, e.deadline(), w.cur)
			}
			if at > e.deadline() {
				return fmt.Errorf("level %d slot %d entry %d: visit %d after its deadline %d", level, i, j, at, e.deadline())
			}
			if placed != nil {
				wantLevel, wantIdx, _ := w.place(e.deadline())
				exact := wantLevel == level && wantIdx == idx
				if err := placed(e, exact); err != nil {
					return fmt.Errorf("level %d slot %d entry %d due at %d (cur %d): %v", level, i, j, e.deadline(), w.cur, err)
				}
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
		if e.deadline() < w.scanAt {
			return fmt.Errorf("scan entry %d: due at %d, before the scanned tick %d", i, e.deadline(), w.scanAt)
		}
	}
	if total != w.count {
		return fmt.Errorf("count = %d, but %d entries are linked", w.count, total)
	}
	if first, _ := w.first(); w.next > first {
		return fmt.Errorf("next = %d, after the earliest visit %d", w.next, first)
	}
	return nil
}

// slotInfo returns the level and the index within the level of slots[idx],
// and whether its occupancy bit is set.
func slotInfo[T any](w *wheel[T], idx int) (level int, i int64, set bool) {
	if int64(idx) < w.n {
		return 0, int64(idx), w.occ[idx/64]>>(idx%64)&1 != 0
	}
	rel := int64(idx) - w.n
	level, i = int(rel/w.m)+1, rel%w.m
	return level, i, w.occ[w.words0+level-1]>>i&1 != 0
}

// visitOf returns the first tick after cur at which slot i of level starts,
// computed from first principles: level 0's slots are single ticks of cur's
// block of n, a coarse level's slots split cur's block at that level, and
// the top level wraps.
func visitOf[T any](w *wheel[T], level int, i int64) int64 {
	width := w.n // ticks per slot of level 1
	for range level - 1 {
		width *= w.m
	}
	if level == 0 {
		return w.cur - floorMod(w.cur, w.n) + i
	}
	span := width * w.m
	start := w.cur - floorMod(w.cur, span) + i*width
	if level == w.top && start <= w.cur {
		start += span
	}
	return start
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
	fired  []firedAt
	rearm  map[int]int64 // id → delay in ticks to re-arm with when it fires
	// lazy marks the timers moved later since they were last seen at their
	// exact place: only they may sit elsewhere (further up, or in an
	// earlier slot), waiting for that place to come up.
	lazy map[int]bool
}

type firedAt struct {
	id   int
	tick int64
}

// newHarness drives a production-shaped wheel of numSlots base slots.
func newHarness(t testing.TB, numSlots, numTimers int) *harness {
	return newHarnessOf(t, newWheel[int](numSlots), numTimers)
}

// newHarnessShape drives a small wheel: numSlots base slots and top coarse
// levels of 2^levelBits slots, the top one wrapping.
func newHarnessShape(t testing.TB, numSlots, levelBits, top, numTimers int) *harness {
	return newHarnessOf(t, newWheelShape[int](numSlots, levelBits, top), numTimers)
}

func newHarnessOf(t testing.TB, w *wheel[int], numTimers int) *harness {
	h := &harness{
		t:     t,
		w:     w,
		model: make(map[int]int64),
		rearm: make(map[int]int64),
		lazy:  make(map[int]bool),
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
	if err := checkWheel(h.w, h.placed); err != nil {
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
		if tm.deadline() != when {
			h.t.Fatalf("after %s: timer %d due at %d, want %d", fmt.Sprintf(what, args...), id, tm.deadline(), when)
		}
	}
}

// placed is the checker's placement rule: a timer not moved later since it
// was last seen in place must be exactly where its deadline belongs.
func (h *harness) placed(t *Timer[int], exact bool) error {
	if exact {
		delete(h.lazy, t.Value)
		return nil
	}
	if !h.lazy[t.Value] {
		return fmt.Errorf("timer %d is not where its deadline belongs, and was not moved later", t.Value)
	}
	return nil
}

// schedule arms timer id at absolute tick when; the model clamps a deadline
// that has passed to the tick after the last one processed.
func (h *harness) schedule(id int, when int64) {
	want := max(when, h.w.cur+1)
	if tm := h.timers[id]; tm.scheduled() && want >= tm.deadline() {
		h.lazy[id] = true
	} else {
		delete(h.lazy, id)
	}
	h.model[id] = want
	h.w.schedule(h.timers[id], when)
	h.check("schedule(%d, %d)", id, when)
}

func (h *harness) cancel(id int) {
	_, want := h.model[id]
	delete(h.model, id)
	delete(h.lazy, id)
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
	delete(h.lazy, id)
	h.fired = append(h.fired, firedAt{id, tick})
	if d, ok := h.rearm[id]; ok {
		h.model[id] = tick + d
		tm.setDeadline(tick + d) // the caller of advance stores the word
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

// shape is a small wheel for the sweeps: n base slots and top coarse
// levels of 2^bits slots, the top one wrapping.
type shape struct{ n, bits, top int }

// span is the ticks one rotation of the top level covers.
func (s shape) span() int64 { return int64(s.n) << (s.bits * s.top) }

func (s shape) String() string { return fmt.Sprintf("n=%d levels=%d×%d", s.n, s.top, 1<<s.bits) }

// sweepShapes returns every small shape: 1 to 8 base slots under one level
// of 2 or 4 slots (2 levels in all) or two levels of 2 slots (3 levels).
// Under -short, and under the race detector (the core is single-threaded:
// the plain run sweeps it whole, the race run is for the layers above), 1
// to 4 base slots.
func sweepShapes() []shape {
	var shapes []shape
	maxN := 8
	if testing.Short() || raceEnabled {
		maxN = 4
	}
	for n := 1; n <= maxN; n++ {
		shapes = append(shapes, shape{n, 1, 1}, shape{n, 2, 1}, shape{n, 1, 2})
	}
	return shapes
}

// elapsedSamples returns the ticks to advance between arming a timer due in
// d ticks and moving or removing it: none, one, half way, one before its
// deadline and its deadline (the full range is left to the fuzz target).
func elapsedSamples(d int64) []int64 {
	var out []int64
	for _, e := range []int64{0, 1, d / 2, d - 1, d} {
		if e >= 0 && e <= d && (len(out) == 0 || e > out[len(out)-1]) {
			out = append(out, e)
		}
	}
	return out
}

// TestWheelSweepMoves is the exhaustive sweep of small wheels: for every
// small shape (see sweepShapes), every cursor position in one top rotation
// (so every combination of slot positions at every level), every old and
// new delay up to one top rotation and one base rotation beyond (across
// every level boundary and the top level's wrap), and a sample of elapsed
// ticks, a timer is armed, the wheel advanced, the timer moved (later,
// earlier, same, or re-armed after it fired) or re-set, and every timer
// must fire exactly at the tick the reference model says, once. Moves go up
// and down between levels. Companion timers share the old and new slots one
// base rotation later, the new deadline's tick, and the old deadline one
// top rotation later, so the relinking has neighbours to get wrong. The
// advance budget cycles through 1, 2, 3 and unlimited, and in half the cases
// the move happens while a visit is unfinished.
func TestWheelSweepMoves(t *testing.T) {
	budgets := []int{1, 2, 3, 1 << 30}
	cases := 0
	for _, s := range sweepShapes() {
		span, n := s.span(), int64(s.n)
		for cursor := int64(0); cursor < span; cursor++ {
			for oldDelay := int64(1); oldDelay <= span+n; oldDelay++ {
				for _, elapsed := range elapsedSamples(oldDelay) {
					for newDelay := int64(1); newDelay <= span+n; newDelay++ {
						cases++
						budget := budgets[cases%len(budgets)]
						midScan := cases%2 == 0
						reset := cases%3 == 0 // cancel, then arm afresh: a SetTimer of a new timer
						name := func() string {
							return fmt.Sprintf("%v cursor=%d old=%d elapsed=%d new=%d budget=%d midScan=%v reset=%v",
								s, cursor, oldDelay, elapsed, newDelay, budget, midScan, reset)
						}
						sweepCase(t, name, s, cursor, oldDelay, elapsed, newDelay, budget, midScan, reset)
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

func sweepCase(t *testing.T, name func() string, s shape, cursor, oldDelay, elapsed, newDelay int64, budget int, midScan, reset bool) {
	ht := &namedTB{TB: t, name: name}
	n, span := int64(s.n), s.span()
	h := newHarnessShape(ht, s.n, s.bits, s.top, 5)
	h.advance(cursor, budget)
	oldAt := cursor + oldDelay
	h.schedule(0, oldAt)
	h.schedule(1, oldAt+n)
	h.schedule(4, oldAt+span)
	// Advance by elapsed ticks; in midScan cases stop after the first
	// call that leaves work, so the move lands in the middle of a visit.
	now := cursor + elapsed
	for h.step(now, budget) && !midScan {
	}
	before := len(h.fired) // 1 if the timer fired at its old deadline already
	for _, f := range h.fired {
		if f.id != 0 {
			ht.Fatalf("companion %d fired at %d, before the move", f.id, f.tick)
		}
	}
	newAt := now + newDelay
	h.schedule(2, newAt+n)
	h.schedule(3, newAt)
	if reset {
		h.cancel(0)
	}
	h.schedule(0, newAt)
	h.advance(max(oldAt, newAt)+span+n, budget)
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

// TestWheelSweepRemove arms, advances and removes in every small shape,
// cursor position and delay up to one top rotation and a base rotation
// beyond, so removals happen at every level and from unfinished visits: a
// removed timer never fires, its neighbours (same tick, same base slot one
// rotation later, same top slot one top rotation later) do.
func TestWheelSweepRemove(t *testing.T) {
	for _, s := range sweepShapes() {
		span, n := s.span(), int64(s.n)
		for cursor := int64(0); cursor < span; cursor++ {
			for oldDelay := int64(1); oldDelay <= span+n; oldDelay++ {
				for _, elapsed := range elapsedSamples(oldDelay - 1) {
					for _, budget := range []int{1, 2, 1 << 30} {
						name := func() string {
							return fmt.Sprintf("%v cursor=%d old=%d elapsed=%d budget=%d", s, cursor, oldDelay, elapsed, budget)
						}
						h := newHarnessShape(&namedTB{TB: t, name: name}, s.n, s.bits, s.top, 4)
						h.advance(cursor, budget)
						h.schedule(0, cursor+oldDelay)
						h.schedule(1, cursor+oldDelay)      // same tick
						h.schedule(2, cursor+oldDelay+n)    // same base slot, next rotation
						h.schedule(3, cursor+oldDelay+span) // same top slot, next rotation
						h.step(cursor+elapsed, budget)      // possibly mid-visit
						h.cancel(0)
						h.advance(cursor+oldDelay+2*span, budget)
						for _, f := range h.fired {
							if f.id == 0 {
								t.Fatalf("%s: removed timer fired at tick %d", name(), f.tick)
							}
						}
						if len(h.fired) != 3 {
							t.Fatalf("%s: firings %v, want timers 1, 2 and 3", name(), h.fired)
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
			h := newHarness(t, 8, 4) // ticks 0..7 are all in level 0
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
// 1..16 base slots and 16 timers, checking the model after each. The
// second byte picks the levels: the production shape (64-slot levels up to
// every int64 deadline) or a small one whose top level wraps (one level of
// 2 or 4 slots, two of 2 or three of 2).
func runOps(t testing.TB, data []byte) {
	if len(data) < 2 {
		return
	}
	n := int(data[0]%16) + 1
	var h *harness
	span := int64(n) << 7 // deadlines span two 64-slot rotations of level 1
	switch sel := data[1] % 5; sel {
	case 0:
		h = newHarness(t, n, 16)
	default:
		s := []shape{{n, 1, 1}, {n, 2, 1}, {n, 1, 2}, {n, 1, 3}}[sel-1]
		h = newHarnessShape(t, n, s.bits, s.top, 16)
		span = s.span()
	}
	reach := span + int64(n) + 2 // past one top rotation
	// far bounds the far deadlines and jumps: 2^40 ticks in the production
	// shape; a small shape's top level wraps, so there a timer waits a
	// rotation per visit, and they stay within 8 rotations.
	far := func(x byte, shift byte) int64 { return int64(x) << (shift % 41) }
	if data[1]%5 != 0 {
		far = func(x byte, shift byte) int64 { return int64(x) * int64(shift%8+1) * span / 256 }
	}
	data = data[2:]
	for len(data) >= 3 {
		op, a, b := data[0], data[1], data[2]
		data = data[3:]
		id := int(a % 16)
		switch op % 8 {
		case 0, 1: // schedule, up to a top rotation and a base rotation ahead
			h.schedule(id, h.now+1+int64(b)%reach)
		case 2: // schedule at or before now: clamped
			h.schedule(id, h.now-int64(b%3))
		case 3:
			h.cancel(id)
		case 4: // one advance call, possibly leaving a visit unfinished
			h.step(h.now+int64(b%8), int(a%4)+1)
		case 5: // a full advance
			if b%4 == 0 {
				h.rearm[id] = int64(b%7) + 1
			} else {
				delete(h.rearm, id)
			}
			h.advance(h.now+int64(b)%reach, int(a%3)+1)
		case 6: // schedule far off: up to 2^40 ticks, many levels up
			h.schedule(id, h.now+1+far(b, a))
		case 7: // a jump far ahead, with no timer re-arming every few ticks
			clear(h.rearm)
			h.advance(h.now+far(b, a/2), int(a%3)+1)
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

// TestWheelTouchesEachTimerOncePerLevel: a timer that waits at level L is
// examined at most L+1 times in its life (each visit moves it at least one
// level down, the last one fires it), whatever the delay and the other
// traffic: here 2,000 timers due up to 2^24 ticks ahead and a timer
// re-armed every 300 ticks, advanced in uneven steps one entry at a time.
// Every timer fires exactly at its deadline. (Issue 11: before the levels,
// a timer waiting many rotations was relinked whenever anything in its
// slot fell due; 1M far timers cost 35 ms/s of CPU at 10 ms × 1024.)
func TestWheelTouchesEachTimerOncePerLevel(t *testing.T) {
	for _, numSlots := range []int{1024, 1000, 1} {
		t.Run(fmt.Sprintf("slots=%d", numSlots), func(t *testing.T) {
			const timers, period = 2000, 300
			r := rand.New(rand.NewPCG(uint64(numSlots), 11))
			w := newWheel[int](numSlots)
			all := make([]Timer[int], timers+1)
			bound, horizon := 0, int64(0)
			for i := range timers {
				when := 1 + r.Int64N(1<<24)
				// Its level from first principles: the lowest whose first
				// block (n, n*64, n*64^2, ... ticks) holds the deadline.
				level := 0
				for span := int64(numSlots); when >= span; span *= 64 {
					level++
				}
				bound += level + 1
				all[i].Value = i
				w.schedule(&all[i], when)
				horizon = max(horizon, when)
			}
			traffic := &all[timers]
			traffic.Value = timers
			w.schedule(traffic, period)
			// A call that returns true examined exactly one entry.
			fired, rearms, examined := 0, 0, 0
			fire := func(tm *Timer[int]) int64 {
				if tm.deadline() != w.scanAt {
					t.Fatalf("timer %d due at %d fired at %d", tm.Value, tm.deadline(), w.scanAt)
				}
				if tm == traffic {
					rearms++
					if w.scanAt+period <= horizon {
						tm.setDeadline(w.scanAt + period)
						return w.scanAt + period
					}
					return 0
				}
				fired++
				return 0
			}
			for now := int64(0); now < horizon; {
				now = min(horizon, now+1+r.Int64N(1<<16))
				for w.advance(now, 1, fire) {
					examined++
				}
			}
			if fired != timers {
				t.Fatalf("%d timers fired, want %d", fired, timers)
			}
			if limit := bound + 2*rearms; examined > limit {
				t.Fatalf("%d entries examined, want at most %d: level+1 per timer, 2 per re-arm", examined, limit)
			}
			t.Logf("%d entries examined for %d timers (level bound %d) and %d re-arms", examined, timers, bound, rearms)
		})
	}
}

// TestWheelDesignExample replays the worked example of doc/design/timingwheel.md
// ("Levels: where a timer waits"): 8 base slots, coarse levels of 4.
func TestWheelDesignExample(t *testing.T) {
	h := newHarnessShape(t, 8, 2, 2, 3)
	const a, b, c = 0, 1, 2
	where := func(id int) string {
		found := "not in a slot"
		h.w.heads(func(idx int, head *Timer[int]) {
			for e := head.next; e != head; e = e.next {
				if e == h.timers[id] {
					level, i, _ := slotInfo(h.w, idx)
					found = fmt.Sprintf("level %d slot %d", level, i)
				}
			}
		})
		return found
	}
	expect := func(at string, id int, want string) {
		t.Helper()
		if got := where(id); got != want {
			t.Fatalf("%s: timer %d at %s, want %s", at, id, got, want)
		}
	}
	h.advance(13, 100)
	h.schedule(c, 14)
	h.schedule(a, 23)
	h.schedule(b, 100)
	expect("tick 13", c, "level 0 slot 6")
	expect("tick 13", a, "level 1 slot 2")
	expect("tick 13", b, "level 2 slot 3")
	h.advance(16, 100)
	expect("tick 16", a, "level 0 slot 7")
	h.advance(18, 100)
	h.schedule(a, 40)
	expect("tick 18", a, "level 0 slot 7")
	h.advance(23, 100)
	expect("tick 23", a, "level 2 slot 1")
	h.advance(32, 100)
	expect("tick 32", a, "level 1 slot 1")
	h.advance(96, 100)
	expect("tick 96", b, "level 0 slot 4")
	h.advance(100, 100)
	if got, want := fmt.Sprint(h.fired), "[{2 14} {0 40} {1 100}]"; got != want {
		t.Fatalf("firings %s, want %s", got, want)
	}
}
