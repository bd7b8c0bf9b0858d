package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// version is one Add or Replace of an ID, as the reference model sees it.
type version struct {
	n       int
	id      string
	added   time.Time
	period  time.Duration
	trigger int // successful Triggers
	dead    atomic.Bool

	starts  atomic.Int64
	running atomic.Int64
	atDeath int64 // starts when it was cancelled or replaced
	badCtx  atomic.Int64
}

func (v *version) fn(work time.Duration) Func {
	return func(ctx context.Context, r Run) error {
		v.starts.Add(1)
		v.running.Add(1)
		defer v.running.Add(-1)
		if v.dead.Load() && context.Cause(ctx) != ErrCanceled {
			// Started after Cancel or Replace returned, with a live context.
			v.badCtx.Add(1)
		}
		select {
		case <-time.After(work):
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
}

// TestModelCancelReplaceTrigger drives random Add, Replace, Cancel and
// Trigger calls, with runs overlapping them (OverlapAllow, runs of up to
// three periods), against a reference model: after each step, Len, Info
// and each version's run count equal the model's, and no version runs
// after it was cancelled or replaced.
func TestModelCancelReplaceTrigger(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runModel(t, seed, 300) })
		})
	}
}

func runModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	s, err := New(Options{Workers: 256})
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]*version{}
	var all []*version
	ids := []string{"a", "b", "c", "d"}
	add := func(id string, replace bool) {
		v := &version{n: len(all), id: id, added: time.Now(), period: time.Duration(1+rng.IntN(3)) * time.Second}
		work := time.Duration(rng.Int64N(int64(3 * v.period)))
		call := s.Add
		if replace {
			call = s.Replace
		}
		err := call(id, Every(v.period), v.fn(work), JobOptions{Overlap: OverlapAllow})
		old := live[id]
		switch {
		case old != nil && !replace:
			if !errors.Is(err, ErrDuplicate) {
				t.Fatalf("Add(%s) over a live job = %v, want ErrDuplicate", id, err)
			}
			return
		case err != nil:
			t.Fatalf("Add/Replace(%s) = %v", id, err)
		}
		if old != nil {
			old.atDeath = old.starts.Load()
			old.dead.Store(true)
		}
		live[id] = v
		all = append(all, v)
	}
	for step := range steps {
		id := ids[rng.IntN(len(ids))]
		switch op := rng.IntN(10); {
		case op < 3:
			add(id, false)
		case op < 5:
			add(id, true)
		case op < 7:
			_, ok := live[id]
			if got := s.Cancel(id); got != ok {
				t.Fatalf("step %d: Cancel(%s) = %v, want %v", step, id, got, ok)
			}
			if v := live[id]; v != nil {
				v.atDeath = v.starts.Load()
				v.dead.Store(true)
				delete(live, id)
			}
		default:
			err := s.Trigger(id)
			if v := live[id]; v != nil {
				if err != nil {
					t.Fatalf("step %d: Trigger(%s) = %v, want nil", step, id, err)
				}
				v.trigger++
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatalf("step %d: Trigger(%s) = %v, want ErrNotFound", step, id, err)
			}
		}
		// Whole ticks, so that every due time falls on a tick and the
		// model need not round.
		time.Sleep(time.Duration(rng.Int64N(2500)) * time.Millisecond)
		synctest.Wait()
		checkModel(t, step, s, live, all)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var starts int64
	for _, v := range all {
		starts += v.starts.Load()
	}
	st := s.Stats()
	if ended := st.Succeeded + st.Retried + st.Failed + st.Interrupted; ended != uint64(starts) {
		t.Fatalf("Stats count %d ended attempts, runs started %d", ended, starts)
	}
}

func checkModel(t *testing.T, step int, s *Scheduler, live map[string]*version, all []*version) {
	t.Helper()
	now := time.Now()
	if s.Len() != len(live) {
		t.Fatalf("step %d: Len = %d, want %d", step, s.Len(), len(live))
	}
	for _, v := range all {
		if n := v.badCtx.Load(); n > 0 {
			t.Fatalf("step %d: version %d of %s started %d runs after its end with a live context", step, v.n, v.id, n)
		}
		if v.dead.Load() {
			if got := v.starts.Load(); got != v.atDeath {
				t.Fatalf("step %d: version %d of %s: %d runs, %d when it ended", step, v.n, v.id, got, v.atDeath)
			}
			if r := v.running.Load(); r != 0 {
				t.Fatalf("step %d: version %d of %s: %d runs still going after cancellation", step, v.n, v.id, r)
			}
			continue
		}
		k := now.Sub(v.added) / v.period
		if want := int64(k) + int64(v.trigger); v.starts.Load() != want {
			t.Fatalf("step %d: version %d of %s: %d runs, want %d", step, v.n, v.id, v.starts.Load(), want)
		}
		info, ok := s.Info(v.id)
		if want := v.added.Add((k + 1) * v.period); !ok || !info.Next.Equal(want) {
			t.Fatalf("step %d: Info(%s) = %+v, %v; want Next %v", step, v.id, info, ok, want.Sub(v.added))
		}
	}
}

// TestRaceCancelReplaceTrigger runs Add, Replace, Cancel and Trigger from
// several goroutines on the real clock against jobs firing every
// millisecond, for the race detector; every run that starts after its
// job's Cancel or Replace returned must find its context cancelled.
func TestRaceCancelReplaceTrigger(t *testing.T) {
	s, err := New(Options{Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	ops := 2000
	if testing.Short() {
		ops = 300
	}
	var (
		mu   sync.Mutex
		live = map[string]*version{}
		all  []*version
		wg   sync.WaitGroup
	)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			for range ops {
				id := fmt.Sprint(rng.IntN(4))
				switch rng.IntN(4) {
				case 0, 1:
					v := &version{id: id}
					// The model's lock makes each call and its model
					// update one step; runs go on concurrently.
					mu.Lock()
					if err := s.Replace(id, Every(time.Duration(1+rng.IntN(3))*time.Millisecond), v.fn(time.Duration(rng.IntN(3))*time.Millisecond)); err != nil {
						t.Errorf("Replace: %v", err)
					}
					if old := live[id]; old != nil {
						old.dead.Store(true)
					}
					live[id] = v
					all = append(all, v)
					mu.Unlock()
				case 2:
					mu.Lock()
					s.Cancel(id)
					if old := live[id]; old != nil {
						old.dead.Store(true)
						delete(live, id)
					}
					mu.Unlock()
				default:
					_ = s.Trigger(id)
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, v := range all {
		if n := v.badCtx.Load(); n > 0 {
			t.Fatalf("a version of %s started %d runs after its end with a live context", v.id, n)
		}
	}
}
