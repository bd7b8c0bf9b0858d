package cache

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// TestPanicReportsCarryTheKey: every panic the cache reports is the one
// report type, timingwheel.PanicError, keyed by the key it ran for: a
// loader's panic as the caller sees it, a loader's Goexit as a waiter
// sees it, a Compute
// function's, and OnEvict's as OnPanic receives it (a Goexit too, which
// errors.Is tells apart). A BulkLoader's panic has no single key.
func TestPanicReportsCarryTheKey(t *testing.T) {
	recoverLoad := func(f func()) (r any) {
		defer func() { r = recover() }()
		f()
		return nil
	}
	t.Run("Load", func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Minute,
			Loader: func(context.Context, string) (Loaded[int], error) { panic("boom") }})
		r := recoverLoad(func() { c.Load(context.Background(), "k1") })
		var pe *timingwheel.PanicError
		if err, ok := r.(error); !ok || !errors.As(err, &pe) || pe.Key != "k1" || pe.Value != "boom" || len(pe.Stack) == 0 {
			t.Errorf("Load re-panicked with %v, want a *timingwheel.PanicError for k1", r)
		}
	})
	t.Run("Load Goexit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			c := newCache(t, Options[string, int]{TTL: time.Minute,
				Loader: func(context.Context, string) (Loaded[int], error) {
					<-release
					runtime.Goexit()
					return Loaded[int]{}, nil
				}})
			var wg sync.WaitGroup
			wg.Go(func() { c.Load(context.Background(), "k3") })
			synctest.Wait()
			var err error
			wg.Go(func() { _, err = c.Load(context.Background(), "k3") })
			synctest.Wait()
			close(release)
			wg.Wait()
			var pe *timingwheel.PanicError
			if !errors.As(err, &pe) || pe.Key != "k3" || !errors.Is(err, timingwheel.ErrGoexit) || len(pe.Stack) == 0 {
				t.Errorf("waiter got %v, want a *timingwheel.PanicError of timingwheel.ErrGoexit for k3", err)
			}
		})
	})
	t.Run("Compute", func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Minute})
		r := recoverLoad(func() { c.Compute("k2", func(int, bool) (int, Action) { panic("boom") }) })
		if pe, ok := r.(*timingwheel.PanicError); !ok || pe.Key != "k2" {
			t.Errorf("Compute re-panicked with %v, want a *timingwheel.PanicError for k2", r)
		}
	})
	t.Run("BulkLoader", func(t *testing.T) {
		c := newCache(t, Options[string, int]{TTL: time.Minute,
			BulkLoader: func(context.Context, []string) (map[string]Loaded[int], error) { panic("boom") }})
		r := recoverLoad(func() { c.LoadAll(context.Background(), []string{"a", "b"}) })
		if pe, ok := r.(*timingwheel.PanicError); !ok || pe.Key != nil || pe.Value != "boom" {
			t.Errorf("LoadAll re-panicked with %v, want a *timingwheel.PanicError without a key", r)
		}
	})
	t.Run("OnEvict", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			var reports []*timingwheel.PanicError
			c := newCache(t, Options[string, int]{TTL: time.Minute,
				OnEvict: func(e Event[string, int]) {
					if e.Key == "exit" {
						runtime.Goexit()
					}
					panic("boom")
				},
				OnPanic: func(e Event[string, int], p *timingwheel.PanicError) {
					if e.Key != p.Key {
						t.Errorf("OnPanic got event key %v and report key %v, want the same", e.Key, p.Key)
					}
					mu.Lock()
					reports = append(reports, p)
					mu.Unlock()
				}})
			c.Set("bad", 1)
			c.Delete("bad") // reported on this goroutine
			c.Set("exit", 1)
			var wg sync.WaitGroup
			wg.Go(func() { c.Delete("exit") }) // OnEvict ends this goroutine
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			if len(reports) != 2 {
				t.Fatalf("%d reports, want 2", len(reports))
			}
			if r := reports[0]; r.Key != "bad" || r.Value != "boom" || errors.Is(r, timingwheel.ErrGoexit) || len(r.Stack) == 0 {
				t.Errorf("panic report %+v, want key bad, value boom, a stack", r)
			}
			if r := reports[1]; r.Key != "exit" || !errors.Is(r, timingwheel.ErrGoexit) {
				t.Errorf("Goexit report %+v, want key exit and timingwheel.ErrGoexit", r)
			}
		})
	})
}
