package timingwheel

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// goexits collects the reports of callbacks that called runtime.Goexit.
type goexits struct {
	mu   sync.Mutex
	keys []string
}

func (g *goexits) handler(t *testing.T) Option {
	return WithPanicHandler(func(p *PanicError) {
		if p.Value != ErrGoexit {
			t.Errorf("report for %v: Value = %v, want ErrGoexit", p.Key, p.Value)
		}
		g.mu.Lock()
		g.keys = append(g.keys, p.Key.(string))
		g.mu.Unlock()
	})
}

func (g *goexits) got() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Sorted(slices.Values(g.keys))
}

// goexitWheel starts a keyed wheel whose callback calls runtime.Goexit for
// keys starting with "exit" and records the others.
func goexitWheel(t *testing.T, g *goexits, opts ...Option) (*TimingWheel[string, int], *recorder) {
	r := newRecorder()
	tw, err := New(iv, 8, func(key string, value int) {
		if strings.HasPrefix(key, "exit") {
			runtime.Goexit()
		}
		r.execute(key, value)
	}, append(opts, g.handler(t))...)
	must(t, err)
	return tw, r
}

// TestGoexitInCallbackKeepsWorkers pins issue 12 item 6: each Goexit in a
// callback (t.Fatal, say) leaked a worker slot, so with WithConcurrency(2)
// two of them stopped every later callback. Each is reported as ErrGoexit
// and its worker replaced.
func TestGoexitInCallbackKeepsWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g goexits
		tw, r := goexitWheel(t, &g, WithConcurrency(2))
		for _, k := range []string{"exit1", "exit2", "exit3"} {
			must(t, tw.SetTimer(k, 0, iv))
		}
		must(t, tw.SetTimer("a", 1, 2*iv))
		time.Sleep(2 * iv)
		if got, want := r.take(), []event{{"a", 1, 2 * iv}}; !slices.Equal(got, want) {
			t.Errorf("runs %v, want %v", got, want)
		}
		must(t, tw.SetTimer("b", 2, iv))
		time.Sleep(iv)
		if got, want := r.take(), []event{{"b", 2, 3 * iv}}; !slices.Equal(got, want) {
			t.Errorf("runs after the Goexits %v, want %v", got, want)
		}
		if got, want := g.got(), []string{"exit1", "exit2", "exit3"}; !slices.Equal(got, want) {
			t.Errorf("reported %v, want %v", got, want)
		}
		tw.Stop()
	})
}

// TestGoexitInInlineCallbackKeepsOwner pins issue 12 item 6 under
// WithInline: a Goexit ended the owner goroutine, after which SetTimer
// returned nil and nothing fired again, and Stop waited forever. A new
// owner takes over, runs the callbacks fired on the same tick, and the
// wheel goes on.
func TestGoexitInInlineCallbackKeepsOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g goexits
		tw, r := goexitWheel(t, &g, WithInline())
		must(t, tw.SetTimer("exit", 0, iv))
		must(t, tw.SetTimer("same tick", 1, iv))
		time.Sleep(iv)
		if got, want := r.take(), []event{{"same tick", 1, iv}}; !slices.Equal(got, want) {
			t.Errorf("runs %v, want %v", got, want)
		}
		must(t, tw.SetTimer("later", 2, iv))
		must(t, tw.SetTimer("exit again", 0, 2*iv))
		must(t, tw.SetTimer("last", 3, 3*iv))
		time.Sleep(3 * iv)
		if got, want := r.take(), []event{{"later", 2, 2 * iv}, {"last", 3, 4 * iv}}; !slices.Equal(got, want) {
			t.Errorf("runs after the Goexit %v, want %v", got, want)
		}
		if got, want := g.got(), []string{"exit", "exit again"}; !slices.Equal(got, want) {
			t.Errorf("reported %v, want %v", got, want)
		}
		if n := tw.Len(); n != 0 {
			t.Errorf("Len = %d, want 0", n)
		}
		tw.Stop() // must not hang
		if err := tw.SetTimer("after stop", 0, iv); err != ErrClosed {
			t.Errorf("SetTimer after Stop = %v, want ErrClosed", err)
		}
	})
}

// TestGoexitInSchedulerFire: a Scheduler's fire runs on the owner
// goroutine; a Goexit there is reported with the Timer's Value, leaves that
// Timer unscheduled, and a new owner goes on with the rest.
func TestGoexitInSchedulerFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g goexits
		var fired []string // owner goroutine only; read after synctest.Wait
		s, err := NewScheduler(iv, 8, func(tm *Timer[string], now time.Time) time.Duration {
			if strings.HasPrefix(tm.Value, "exit") {
				runtime.Goexit()
			}
			fired = append(fired, tm.Value)
			return 0
		}, g.handler(t))
		must(t, err)
		timers := map[string]*Timer[string]{}
		for _, c := range []struct {
			name  string
			delay time.Duration
		}{{"exit", iv}, {"same tick", iv}, {"later", 3 * iv}} {
			timers[c.name] = &Timer[string]{Value: c.name}
			must(t, s.Schedule(timers[c.name], c.delay))
		}
		time.Sleep(3 * iv)
		synctest.Wait()
		if want := []string{"same tick", "later"}; !slices.Equal(fired, want) {
			t.Errorf("fired %v, want %v", fired, want)
		}
		if got, want := g.got(), []string{"exit"}; !slices.Equal(got, want) {
			t.Errorf("reported %v, want %v", got, want)
		}
		if timers["exit"].scheduled() {
			t.Error("the Timer whose fire called Goexit is still scheduled")
		}
		if n := s.Len(); n != 0 {
			t.Errorf("Len = %d, want 0", n)
		}
		s.Stop()
	})
}

// TestGoexitInInlineCallbackThenStop: an inline callback that stops the
// wheel and then calls runtime.Goexit. The timers fired on the same tick
// have left the index (they are not pending, Drain cannot return them), so
// the owner that takes over runs them before it exits instead of dropping
// them.
func TestGoexitInInlineCallbackThenStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tw *TimingWheel[string, int]
		var ran []string
		exited := false
		tw, err := New(iv, 8, func(key string, _ int) {
			if !exited {
				exited = true
				tw.k.d.signalStop()
				runtime.Goexit()
			}
			ran = append(ran, key)
		}, WithInline(), WithPanicHandler(func(*PanicError) {}))
		must(t, err)
		must(t, tw.SetTimer("a", 0, iv))
		must(t, tw.SetTimer("b", 1, iv))
		time.Sleep(iv)
		tw.Stop()
		if len(ran) != 1 {
			t.Errorf("callbacks run after the Goexit: %v, want the other of a, b", ran)
		}
		if st := tw.Stats(); st.Fired != 2 {
			t.Errorf("Fired = %d, want 2", st.Fired)
		}
	})
}
