package cache

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// model is the reference: a map with deadlines, an ordered slice of keys
// (most recently written first), and exact knowledge of when the wheel
// reclaims an entry (at the first tick at or after its deadline). It is
// only valid for caches with one shard (Limit 0, or Limit < 128).
//
// Which entry a full cache evicts is the policy's choice (policy_test.go
// pins the policy itself): the model takes the victim the cache reported
// (chosen, the events of the step so far) and checks that the choice is
// legal: a key it holds, other than the one being written, with its value,
// reported Expired if its deadline passed and Evicted otherwise. A cache
// that evicts when not full, or does not when full, differs from the
// model in its events or its Len.
type model struct {
	limit  int
	res    time.Duration
	now    time.Duration // since the cache's origin
	m      map[int]*mentry
	order  []int // head (most recently written) first
	chosen func() []Event[int, int]
}

type mentry struct {
	v        int
	deadline time.Duration
	mark     bool
}

func newModel(limit int, res time.Duration) *model {
	return &model{limit: limit, res: res, m: map[int]*mentry{}}
}

func (m *model) unlink(k int) {
	m.order = slices.DeleteFunc(m.order, func(x int) bool { return x == k })
}

func (m *model) remove(k int) {
	delete(m.m, k)
	m.unlink(k)
}

// due returns the deadline ttl from now as the cache keeps it: rounded
// down to a tick of 8 ns (see dueAt).
func (m *model) due(ttl time.Duration) time.Duration { return (m.now + ttl) &^ 7 }

// endReason is the reason an entry leaving by a call is reported with.
func (m *model) endReason(e *mentry, r Reason) Reason {
	if e.deadline <= m.now {
		return Expired
	}
	return r
}

func (m *model) set(k, v int, ttl time.Duration) []Event[int, int] {
	if ttl <= 0 {
		return m.delete(k)
	}
	var ev []Event[int, int]
	if e := m.m[k]; e != nil {
		ev = append(ev, Event[int, int]{k, e.v, m.endReason(e, Replaced)})
		e.v, e.deadline, e.mark = v, m.due(ttl), false
		m.unlink(k)
		m.order = slices.Insert(m.order, 0, k)
		return ev
	}
	if m.limit > 0 && len(m.m) >= m.limit {
		victim := Event[int, int]{Key: -1} // none reported: the events differ
		for _, got := range m.chosen() {
			if e := m.m[got.Key]; e != nil && got.Key != k && (got.Reason == Evicted || got.Reason == Expired) {
				victim = Event[int, int]{got.Key, e.v, m.endReason(e, Evicted)}
				m.remove(got.Key)
				break
			}
		}
		ev = append(ev, victim)
	}
	m.m[k] = &mentry{v: v, deadline: m.due(ttl)}
	m.order = slices.Insert(m.order, 0, k)
	return ev
}

func (m *model) delete(k int) []Event[int, int] {
	e := m.m[k]
	if e == nil {
		return nil
	}
	m.remove(k)
	return []Event[int, int]{{k, e.v, m.endReason(e, Deleted)}}
}

func (m *model) get(k int) (int, bool) {
	if e := m.m[k]; e != nil && e.deadline > m.now {
		e.mark = true
		return e.v, true
	}
	return 0, false
}

// peek is get without the mark; it also returns the time left.
func (m *model) peek(k int) (int, time.Duration, bool) {
	if e := m.m[k]; e != nil && e.deadline > m.now {
		return e.v, e.deadline - m.now, true
	}
	return 0, 0, false
}

// clear removes every entry, head of the list first.
func (m *model) clear() []Event[int, int] {
	var ev []Event[int, int]
	for _, k := range m.order {
		ev = append(ev, Event[int, int]{k, m.m[k].v, m.endReason(m.m[k], Deleted)})
	}
	m.m, m.order = map[int]*mentry{}, nil
	return ev
}

// advance moves the model's clock and returns the entries the wheel
// reclaims meanwhile, sorted by key.
func (m *model) advance(d time.Duration) []Event[int, int] {
	m.now += d
	var ev []Event[int, int]
	for k, e := range m.m {
		tick := (e.deadline + m.res - 1) / m.res
		if tick*m.res <= m.now {
			ev = append(ev, Event[int, int]{k, e.v, Expired})
			m.remove(k)
		}
	}
	slices.SortFunc(ev, func(a, b Event[int, int]) int { return cmp.Compare(a.Key, b.Key) })
	return ev
}

func (m *model) live() map[int]int {
	out := map[int]int{}
	for k, e := range m.m {
		if e.deadline > m.now {
			out[k] = e.v
		}
	}
	return out
}

// step is one operation of a script.
type step struct {
	op  uint8 // see runScript
	key int
	arg int64
}

func (s step) String() string {
	return fmt.Sprintf("%s(%d, %d)", opNames[int(s.op)%numOps], s.key, s.arg)
}

// opNames are the operations of a script, by op.
var opNames = [...]string{"Set", "SetWithExpire", "Delete", "Get", "Take", "TakeError", "Sleep", "All",
	"Peek", "GetOrSet", "SetIfAbsent", "Clear", "Remaining", "Touch"}

const numOps = len(opNames)

const (
	modelTTL = 100 * time.Millisecond
	modelRes = 10 * time.Millisecond
)

// runScript runs steps against a cache and the model in a synctest bubble
// and fails at the first difference: a result, an event (synchronous ones
// in order, expired ones as a set per sleep), Len, or an invariant. It
// runs them twice: with int values, which are word values on 64-bit
// platforms (see wordValue), and with the same numbers as strings, which
// are boxed when overwritten (see boxed), and with pointers to them, word
// values stored as pointers (see pointerValue).
func runScript(t *testing.T, limit int, steps []step) {
	runScriptOf(t, limit, steps, func(v int) int { return v }, func(v int) int { return v })
	runScriptOf(t, limit, steps, strconv.Itoa, func(v string) int { n, _ := strconv.Atoi(v); return n })
	ptrs := map[int]*int{} // one pointer per number, so that == compares numbers
	ptr := func(v int) *int {
		if ptrs[v] == nil {
			ptrs[v] = &v
		}
		return ptrs[v]
	}
	runScriptOf(t, limit, steps, ptr, func(v *int) int { return *v })
}

// runScriptOf is runScript with values of type V: val(i) is the value
// numbered i, num its inverse.
func runScriptOf[V comparable](t *testing.T, limit int, steps []step, val func(int) V, num func(V) int) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder[int, V]{}
		c, err := New(Options[int, V]{TTL: modelTTL, Limit: limit, Resolution: modelRes, OnEvict: rec.on})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		m := newModel(limit, modelRes)
		// as returns the value numbered n, or the zero V if not ok.
		as := func(n int, ok bool) V {
			if !ok {
				return *new(V)
			}
			return val(n)
		}
		nums := func(evs []Event[int, V]) []Event[int, int] {
			var out []Event[int, int]
			for _, e := range evs {
				out = append(out, Event[int, int]{e.Key, num(e.Value), e.Reason})
			}
			return out
		}
		m.chosen = func() []Event[int, int] { return nums(rec.peek()) }
		boom := errors.New("boom")
		for i, s := range steps {
			var want []Event[int, int]
			v := i + 1
			vv := val(v)
			switch int(s.op) % numOps {
			case 0:
				c.Set(s.key, vv)
				want = m.set(s.key, v, modelTTL)
			case 1:
				ttl := time.Duration(s.arg)
				c.SetWithExpire(s.key, vv, ttl)
				want = m.set(s.key, v, ttl)
			case 2:
				c.Delete(s.key)
				want = m.delete(s.key)
			case 3:
				got, ok := c.Get(s.key)
				wv, wok := m.get(s.key)
				if got != as(wv, wok) || ok != wok {
					t.Fatalf("step %d %v at %v: Get = %v, %v; want %d, %v", i, s, m.now, got, ok, wv, wok)
				}
			case 4, 5:
				fail := int(s.op)%numOps == 5
				got, err := c.Take(s.key, func() (V, error) {
					if fail {
						return val(0), boom
					}
					return vv, nil
				})
				wv, wok := m.get(s.key)
				var werr error
				if !wok {
					if fail {
						werr = boom
					} else {
						wv = v
						want = m.set(s.key, v, modelTTL)
					}
				}
				if got != as(wv, werr == nil) || !errors.Is(err, werr) {
					t.Fatalf("step %d %v at %v: Take = %v, %v; want %d, %v", i, s, m.now, got, err, wv, werr)
				}
			case 6:
				d := time.Duration(s.arg)
				time.Sleep(d)
				synctest.Wait()
				want = m.advance(d)
				got := nums(rec.take())
				slices.SortFunc(got, func(a, b Event[int, int]) int { return cmp.Compare(a.Key, b.Key) })
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("step %d %v at %v: expired %v, want %v", i, s, m.now, got, want)
				}
				want = nil
				checkInvariants(t, c, limit, true)
			case 7:
				got := map[int]V{}
				for k, v := range c.All() {
					got[k] = v
				}
				gotNums := map[int]int{}
				for k, v := range got {
					gotNums[k] = num(v)
				}
				if w := m.live(); fmt.Sprint(gotNums) != fmt.Sprint(w) {
					t.Fatalf("step %d %v at %v: All = %v, want %v", i, s, m.now, got, w)
				}
				keys, values := map[int]int{}, map[V]int{}
				for k := range c.Keys() {
					keys[k]++
				}
				for v := range c.Values() {
					values[v]++
				}
				for k, v := range got {
					keys[k]--
					values[v]--
				}
				for k, n := range keys {
					if n != 0 {
						t.Fatalf("step %d %v: Keys yields %d more times %d than All", i, s, n, k)
					}
				}
				for v, n := range values {
					if n != 0 {
						t.Fatalf("step %d %v: Values yields %d more times %v than All", i, s, n, v)
					}
				}
			case 8, 12:
				got, ok := c.Peek(s.key)
				left, lok := c.Remaining(s.key)
				wv, wleft, wok := m.peek(s.key)
				if got != as(wv, wok) || ok != wok || left != wleft || lok != wok {
					t.Fatalf("step %d %v at %v: Peek, Remaining = %v, %v, %v, %v; want %d, %v, %v, %v",
						i, s, m.now, got, ok, left, lok, wv, wok, wleft, wok)
				}
			case 9:
				got, loaded := c.GetOrSet(s.key, vv)
				wv, wok := m.get(s.key)
				if !wok {
					wv = v
					want = m.set(s.key, v, modelTTL)
				}
				if got != val(wv) || loaded != wok {
					t.Fatalf("step %d %v at %v: GetOrSet = %v, %v; want %d, %v", i, s, m.now, got, loaded, wv, wok)
				}
			case 10:
				stored := c.SetIfAbsent(s.key, vv)
				_, _, live := m.peek(s.key)
				if !live {
					want = m.set(s.key, v, modelTTL)
				}
				if stored != !live {
					t.Fatalf("step %d %v at %v: SetIfAbsent = %v, want %v", i, s, m.now, stored, !live)
				}
			case 11:
				c.Clear()
				want = m.clear()
				// Shard by shard, queue by queue: compared as sets.
				got := nums(rec.take())
				byKey := func(a, b Event[int, int]) int { return cmp.Compare(a.Key, b.Key) }
				slices.SortStableFunc(got, byKey)
				slices.SortStableFunc(want, byKey)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("step %d %v at %v: events %v, want %v", i, s, m.now, got, want)
				}
				want = nil
			case 13:
				ok := c.Touch(s.key)
				e := m.m[s.key]
				wok := e != nil && e.deadline > m.now
				if wok {
					e.deadline, e.mark = m.due(modelTTL), true
				}
				if ok != wok {
					t.Fatalf("step %d %v at %v: Touch = %v, want %v", i, s, m.now, ok, wok)
				}
			}
			if got := nums(rec.take()); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("step %d %v at %v: events %v, want %v", i, s, m.now, got, want)
			}
			if got, w := c.Len(), len(m.m); got != w {
				t.Fatalf("step %d %v at %v: Len() = %d, want %d", i, s, m.now, got, w)
			}
		}
		checkInvariants(t, c, limit, true)
	})
}

// randomScript draws n steps over keys [0, keys): mostly writes and reads,
// with sleeps short enough that entries expire mid-script.
func randomScript(r *rand.Rand, n, keys int) []step {
	steps := make([]step, n)
	for i := range steps {
		s := step{op: uint8(r.IntN(numOps)), key: r.IntN(keys)}
		if opNames[s.op] == "Clear" && r.IntN(4) != 0 {
			s.op = 3 // Get: a Clear in most scripts, not every few steps
		}
		switch s.op {
		case 1:
			s.arg = r.Int64N(int64(3*modelTTL)) - int64(modelTTL/4)
		case 6:
			// Whole milliseconds half the time, so that reads land
			// exactly on deadlines.
			s.arg = r.Int64N(int64(modelTTL / 3))
			if r.IntN(2) == 0 {
				s.arg = s.arg / 1e6 * 1e6
			}
		}
		steps[i] = s
	}
	return steps
}

func TestAgainstModel(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		keys  int
	}{
		{"unbounded", 0, 24},
		{"limit 1", 1, 6},
		{"limit 4", 4, 12},
		{"limit 16", 16, 40},
		{"limit 127", 127, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(20) {
				r := rand.New(rand.NewPCG(seed, uint64(tt.limit)))
				runScript(t, tt.limit, randomScript(r, 400, tt.keys))
			}
		})
	}
}

// FuzzCache decodes the input into a limit and a script of operations and
// compares the cache with the model.
func FuzzCache(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{2, 0, 1, 0, 1, 1, 1, 2, 0, 3, 6, 0, 200, 3, 1, 0, 6, 3, 100, 0, 4, 0})
	f.Add([]byte{1, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 6, 0, 255, 0, 5, 0, 4, 1, 7, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		limits := [...]int{0, 1, 2, 3, 8}
		limit := limits[int(data[0])%len(limits)]
		data = data[1:]
		var steps []step
		for len(data) >= 3 && len(steps) < 300 {
			s := step{op: uint8(int(data[0]) % numOps), key: int(data[1] % 10)}
			switch s.op {
			case 1:
				// -12.5ms .. ~306ms in 1.2ms steps: around 0, the
				// resolution and the TTL.
				s.arg = (int64(data[2]) - 10) * int64(modelTTL/80)
			case 6:
				s.arg = int64(data[2]) * int64(modelTTL/100)
			}
			steps = append(steps, s)
			data = data[3:]
		}
		runScript(t, limit, steps)
	})
}
