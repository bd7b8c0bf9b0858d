package timingwheel

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// Tests of the owner protocol's state transitions, one named test per
// transition of a Timer's deadline word (doc/design/timingwheel-protocol.md):
// schedule, later, earlier, cancel, and a firing racing each of them. They
// drive the protocol's functions directly on a driver whose owner goroutine
// is not running, so every interleaving is chosen by the test.

// probe is a layer whose fire records the Timers handed to it and runs
// during, standing for a caller racing with the callback.
type probe struct {
	b      inbox[int]
	fired  []int64 // due ticks handed out
	during func(t *Timer[int])
	rearm  int64
}

func (p *probe) inbox(int) *inbox[int] { return &p.b }
func (p *probe) fire(t *Timer[int], due int64) int64 {
	if got := t.deadline(); got != firing {
		panic("fire called with a deadline that is not firing")
	}
	p.fired = append(p.fired, due)
	if p.during != nil {
		p.during(t)
	}
	return p.rearm
}
func (p *probe) flush()   {}
func (p *probe) stopped() {}

// newProbe returns a driver (its owner not started) and a layer for it.
func newProbe(t *testing.T) (*driver[int], *probe) {
	t.Helper()
	cfg, err := newConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := newDriver[int](time.Millisecond, 8, cfg)
	d.shards = 1
	return d, &probe{}
}

// advanceTo takes the inbox and advances the wheel to tick now.
func advanceTo(d *driver[int], p *probe, now int64) {
	d.nowTick = now
	d.takeAll(p)
	d.fireDue(p)
}

func wantDeadline(t *testing.T, tm *Timer[int], want int64) {
	t.Helper()
	if got := tm.deadline(); got != want {
		t.Fatalf("deadline = %d, want %d", got, want)
	}
}

func wantInbox(t *testing.T, b *inbox[int], want int) {
	t.Helper()
	if got := len(b.items); got != want {
		t.Fatalf("inbox holds %d Timers, want %d", got, want)
	}
}

// TestStateScheduleQueuesOnce: a new deadline is stored and the Timer
// appended once, however many changes follow before the owner takes it.
func TestStateScheduleQueuesOnce(t *testing.T) {
	d, p := newProbe(t)
	tm := &Timer[int]{}
	wantDeadline(t, tm, dead) // the zero Timer is not armed
	p.b.mu.Lock()
	d.armLocked(&p.b, tm, 10)
	d.armLocked(&p.b, tm, 5) // earlier, still queued: no second append
	p.b.mu.Unlock()
	wantDeadline(t, tm, 5)
	wantInbox(t, &p.b, 1)
	if got, want := tm.queued(), true; got != want {
		t.Fatalf("queued = %v, want %v", got, want)
	}
	advanceTo(d, p, 0)
	wantInbox(t, &p.b, 0)
	if got, want := tm.queued(), false; got != want {
		t.Fatalf("queued after the take = %v, want %v", got, want)
	}
	if got, want := tm.scheduled(), true; got != want {
		t.Fatalf("linked after the take = %v, want %v", got, want)
	}
	wantDeadline(t, tm, 5)
}

// TestStateLaterIsLazy: a later deadline is one CAS, with no append; the
// owner meets the Timer at its old slot, relinks it, and fires it at the
// new deadline, never at the old one.
func TestStateLaterIsLazy(t *testing.T) {
	d, p := newProbe(t)
	tm := &Timer[int]{}
	p.b.mu.Lock()
	d.armLocked(&p.b, tm, 5)
	p.b.mu.Unlock()
	advanceTo(d, p, 0)
	if got, want := later(tm, 9), true; got != want {
		t.Fatalf("later(9) = %v, want %v", got, want)
	}
	if got, want := later(tm, 7), false; got != want {
		t.Fatalf("later(7) after 9 = %v, want %v (earlier goes to the inbox)", got, want)
	}
	wantDeadline(t, tm, 9)
	wantInbox(t, &p.b, 0)
	advanceTo(d, p, 8)
	if got := len(p.fired); got != 0 {
		t.Fatalf("fired %v by tick 8, want nothing before 9", p.fired)
	}
	advanceTo(d, p, 9)
	if got, want := len(p.fired), 1; got != want || p.fired[0] != 9 {
		t.Fatalf("fired %v, want one firing due at 9", p.fired)
	}
	wantDeadline(t, tm, dead)
}

// TestStateEarlierRelinks: an earlier deadline is stored and queued; the
// owner relinks the Timer and fires it there.
func TestStateEarlierRelinks(t *testing.T) {
	d, p := newProbe(t)
	tm := &Timer[int]{}
	p.b.mu.Lock()
	d.armLocked(&p.b, tm, 50)
	p.b.mu.Unlock()
	advanceTo(d, p, 0)
	d.pickup.Store(50) // the owner sleeps until the Timer's slot
	p.b.mu.Lock()
	if got, want := d.armLocked(&p.b, tm, 3), true; got != want {
		t.Fatalf("armLocked(3) notify = %v, want %v (due before the owner's wake-up)", got, want)
	}
	p.b.mu.Unlock()
	wantInbox(t, &p.b, 1)
	advanceTo(d, p, 3)
	if got, want := len(p.fired), 1; got != want || p.fired[0] != 3 {
		t.Fatalf("fired %v, want one firing due at 3", p.fired)
	}
}

// TestStateCancelStoresDead: a cancel stores dead and queues the Timer once
// for unlinking; it is counted as a removal once, however often repeated.
func TestStateCancelStoresDead(t *testing.T) {
	d, p := newProbe(t)
	tm := &Timer[int]{}
	p.b.mu.Lock()
	d.armLocked(&p.b, tm, 5)
	p.b.mu.Unlock()
	advanceTo(d, p, 0)
	p.b.mu.Lock()
	d.cancelLocked(&p.b, tm)
	d.cancelLocked(&p.b, tm)
	p.b.mu.Unlock()
	wantDeadline(t, tm, dead)
	wantInbox(t, &p.b, 1)
	if got, want := later(tm, 9), false; got != want {
		t.Fatalf("later on a cancelled Timer = %v, want %v", got, want)
	}
	advanceTo(d, p, 10)
	if got, want := tm.scheduled(), false; got != want {
		t.Fatalf("linked after the cancel was taken = %v, want %v", got, want)
	}
	if got := len(p.fired); got != 0 {
		t.Fatalf("fired %v, want nothing", p.fired)
	}
	if got, want := d.st.st.Removed, uint64(1); got != want {
		t.Fatalf("Removed = %d, want %d", got, want)
	}
}

// TestStateCancelBeforeSettle: a cancel that lands after the Timer's slot
// came due but before the owner's settle swap stops the firing, even
// though the owner meets the Timer in its slot before taking the inbox.
func TestStateCancelBeforeSettle(t *testing.T) {
	d, p := newProbe(t)
	tm := &Timer[int]{}
	p.b.mu.Lock()
	d.armLocked(&p.b, tm, 5)
	p.b.mu.Unlock()
	advanceTo(d, p, 0)
	p.b.mu.Lock()
	d.cancelLocked(&p.b, tm)
	p.b.mu.Unlock()
	d.nowTick = 5
	d.fireDue(p) // the slot first, the inbox not yet taken
	if got := len(p.fired); got != 0 {
		t.Fatalf("fired %v, want nothing: the cancel came before the settle", p.fired)
	}
	if got, want := d.w.count, 0; got != want {
		t.Fatalf("wheel count = %d, want %d", got, want)
	}
	d.takeAll(p) // finds it dead and unlinked: nothing to do
	wantInbox(t, &p.b, 0)
}

// TestStateCancelDuringFire: a cancel made while the callback runs drops
// the re-arm the callback returns.
func TestStateCancelDuringFire(t *testing.T) {
	d, p := newProbe(t)
	tm := &Timer[int]{}
	p.b.mu.Lock()
	d.armLocked(&p.b, tm, 5)
	p.b.mu.Unlock()
	p.rearm = 20
	p.during = func(tm *Timer[int]) {
		p.b.mu.Lock()
		if got, want := d.cancelLocked(&p.b, tm), false; got != want {
			t.Errorf("cancel of a firing Timer notify = %v, want %v (nothing to unlink)", got, want)
		}
		p.b.mu.Unlock()
	}
	advanceTo(d, p, 5)
	wantDeadline(t, tm, dead)
	if got, want := tm.scheduled(), false; got != want {
		t.Fatalf("linked after a cancel during its callback = %v, want %v", got, want)
	}
	if got, want := d.st.st.Removed, uint64(0); got != want {
		t.Fatalf("Removed = %d, want %d (it fired)", got, want)
	}
}

// TestStateScheduleDuringFire: a Schedule made while the callback runs wins
// over the re-arm the callback returns: the Timer fires at the Schedule's
// deadline.
func TestStateScheduleDuringFire(t *testing.T) {
	d, p := newProbe(t)
	tm := &Timer[int]{}
	p.b.mu.Lock()
	d.armLocked(&p.b, tm, 5)
	p.b.mu.Unlock()
	p.rearm = 20
	p.during = func(tm *Timer[int]) {
		p.during = nil
		p.b.mu.Lock()
		d.armLocked(&p.b, tm, 12)
		p.b.mu.Unlock()
	}
	advanceTo(d, p, 5)
	wantDeadline(t, tm, 12)
	if got, want := tm.scheduled(), false; got != want {
		t.Fatalf("linked by the re-arm = %v, want %v (the Schedule won)", got, want)
	}
	p.rearm = 0
	advanceTo(d, p, 20)
	if got, want := len(p.fired), 2; got != want || p.fired[1] != 12 {
		t.Fatalf("fired %v, want the second firing due at 12", p.fired)
	}
}

// TestStateRearm: a callback's re-arm stores the tick and links the Timer
// when no caller touched it meanwhile.
func TestStateRearm(t *testing.T) {
	d, p := newProbe(t)
	tm := &Timer[int]{}
	p.b.mu.Lock()
	d.armLocked(&p.b, tm, 5)
	p.b.mu.Unlock()
	p.rearm = 8
	advanceTo(d, p, 5)
	wantDeadline(t, tm, 8)
	if got, want := tm.scheduled(), true; got != want {
		t.Fatalf("linked after a re-arm = %v, want %v", got, want)
	}
}

// TestStateLaterBeforeSettle: a later deadline that lands before the
// settle swap makes the owner relink instead of firing.
func TestStateLaterBeforeSettle(t *testing.T) {
	d, p := newProbe(t)
	tm := &Timer[int]{}
	p.b.mu.Lock()
	d.armLocked(&p.b, tm, 5)
	p.b.mu.Unlock()
	advanceTo(d, p, 0)
	d.nowTick = 5
	later(tm, 6) // after tick 5 came, before the owner got to the slot
	d.fireDue(p)
	if got := len(p.fired); got != 0 {
		t.Fatalf("fired %v at tick 5, want nothing: moved to 6", p.fired)
	}
	if got, want := tm.scheduled(), true; got != want {
		t.Fatalf("linked = %v, want %v", got, want)
	}
}

// TestKeyedHandOutRaces: between the owner's settle swap and its hand-out
// under the key's lock, a SetTimer re-arms the timer and a RemoveTimer
// removes it; either wins over the hand-out, and an untouched settled timer
// is handed out once and leaves the index.
func TestKeyedHandOutRaces(t *testing.T) {
	for _, c := range []struct {
		name     string
		between  func(tw *TimingWheel[string, int]) error
		wantRun  int
		wantHas  bool
		wantLine int64 // deadline after the hand-out
	}{
		{"untouched", func(*TimingWheel[string, int]) error { return nil }, 1, false, dead},
		{"SetTimer", func(tw *TimingWheel[string, int]) error { return tw.SetTimer("a", 2, time.Hour) }, 0, true, -2},
		{"RemoveTimer", func(tw *TimingWheel[string, int]) error { return tw.RemoveTimer("a") }, 0, false, dead},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ticks := make(chan time.Time)
				tw, r := newTestWheel(t, iv, 8, WithTicker(ticks))
				must(t, tw.SetTimer("a", 1, iv))
				synctest.Wait()
				k := tw.k
				var n *node[string, int]
				must(t, k.d.call(func() {
					for i := range k.shards.len() {
						if sh := k.shards.get(i); sh != nil {
							sh.tab.All(func(e *node[string, int]) bool { n = e; return true })
						}
					}
				}))
				due := n.deadline()
				if !n.casDeadline(due, firing) { // the owner's settle swap
					t.Fatalf("settle swap failed on deadline %d", due)
				}
				must(t, c.between(tw))
				must(t, k.d.call(func() { k.fire(n, due) }))
				synctest.Wait()
				if got := len(r.take()); got != c.wantRun {
					t.Errorf("ran %d callbacks, want %d", got, c.wantRun)
				}
				if got := tw.Has("a"); got != c.wantHas {
					t.Errorf("Has = %v, want %v", got, c.wantHas)
				}
				got := n.deadline()
				if c.wantLine < 0 {
					if got <= dead && got > relativeTop {
						t.Errorf("deadline = %d, want a re-armed one", got)
					}
				} else if got != c.wantLine {
					t.Errorf("deadline = %d, want %d", got, c.wantLine)
				}
			})
		})
	}
}

// TestStateTakeLeavesTheBitsToThePlacing pins where the owner clears the
// queued bits: not under the inbox's lock, where one atomic operation per
// Timer on a line another core had just written held up every caller of
// the shard (RemoveTimer of 1M pending ran 1.2x the code before the
// issue-22 rewrite), but while placing, after the unlock. A change made
// between the take and the placing finds the bit set, appends nothing,
// and is placed all the same: a cancel, and an earlier deadline.
func TestStateTakeLeavesTheBitsToThePlacing(t *testing.T) {
	d, p := newProbe(t)
	a, b, c := &Timer[int]{}, &Timer[int]{}, &Timer[int]{}
	p.b.mu.Lock()
	for _, tm := range []*Timer[int]{a, b, c} {
		d.armLocked(&p.b, tm, 10)
	}
	items := p.b.takeLocked(nil)
	p.b.mu.Unlock()
	for i, tm := range items {
		if !tm.queued() {
			t.Fatalf("Timer %d: queued bit cleared by the take, want it left for the placing", i)
		}
	}
	p.b.mu.Lock()
	d.cancelLocked(&p.b, b) // taken, not placed: nothing appended
	d.armLocked(&p.b, c, 3) // earlier: nothing appended either
	p.b.mu.Unlock()
	wantInbox(t, &p.b, 0)
	d.placeAll(items)
	for i, tm := range items {
		if tm.queued() {
			t.Errorf("Timer %d: still queued after its placing", i)
		}
	}
	if !a.scheduled() || b.scheduled() || !c.scheduled() {
		t.Fatalf("linked after the placing: a %v, b %v, c %v; want true, false, true", a.scheduled(), b.scheduled(), c.scheduled())
	}
	wantDeadline(t, b, dead)
	advanceTo(d, p, 3)
	if got, want := p.fired, []int64{3}; !slices.Equal(got, want) {
		t.Fatalf("fired %v by tick 3, want %v (c, moved earlier while taken)", got, want)
	}
	advanceTo(d, p, 10)
	if got, want := p.fired, []int64{3, 10}; !slices.Equal(got, want) {
		t.Fatalf("fired %v by tick 10, want %v (a; b was cancelled while taken)", got, want)
	}
}
