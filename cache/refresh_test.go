package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// gatedLoader is a Loader whose calls block until the test answers them,
// one answer per call.
type gatedLoader struct {
	calls   atomic.Int32
	answers chan Loaded[string]
	errs    chan error
	ctxs    chan context.Context // each call's context, if not nil
}

func newGatedLoader() *gatedLoader {
	return &gatedLoader{answers: make(chan Loaded[string]), errs: make(chan error)}
}

func (g *gatedLoader) load(ctx context.Context, _ string) (Loaded[string], error) {
	g.calls.Add(1)
	if g.ctxs != nil {
		g.ctxs <- ctx
	}
	select {
	case l := <-g.answers:
		return l, nil
	case err := <-g.errs:
		return Loaded[string]{}, err
	}
}

// TestRefreshAfterServesOldWhileReloading: a read of an entry older than
// RefreshAfter returns the current value and starts one reload in the
// background; reads meanwhile keep the current value and start no other;
// the new value replaces it when the reload ends.
func TestRefreshAfterServesOldWhileReloading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		c := newCache(t, Options[string, string]{TTL: time.Minute, RefreshAfter: 30 * time.Second, Loader: g.load})
		go func() { g.answers <- Loaded[string]{Value: "v1"} }()
		if v, err := c.Load(context.Background(), "k"); v != "v1" || err != nil {
			t.Fatalf("Load = %q, %v", v, err)
		}
		time.Sleep(30*time.Second - 1)
		wantGet(t, c, "k", "v1", true)
		synctest.Wait()
		if n := g.calls.Load(); n != 1 {
			t.Fatalf("loader calls before RefreshAfter = %d, want 1 (no refresh yet)", n)
		}
		time.Sleep(1)
		for range 5 {
			wantGet(t, c, "k", "v1", true) // due: the first read starts the reload
			if v, err := c.Load(context.Background(), "k"); v != "v1" || err != nil {
				t.Errorf("Load during the reload = %q, %v; want v1", v, err)
			}
		}
		synctest.Wait()
		if n := g.calls.Load(); n != 2 {
			t.Fatalf("loader calls = %d, want 2 (one reload for ten reads)", n)
		}
		g.answers <- Loaded[string]{Value: "v2"}
		synctest.Wait()
		wantGet(t, c, "k", "v2", true)
		if left, _ := c.Remaining("k"); left != time.Minute {
			t.Errorf("Remaining after the reload = %v, want a fresh TTL %v", left, time.Minute)
		}
		if st := c.Stats(); st.Refreshes != 1 || st.RefreshErrors != 0 || st.Loads != 2 || st.Replaced != 1 {
			t.Errorf("Stats %+v; want 1 refresh, 0 errors, 2 loads, 1 replaced", st)
		}
	})
}

// TestRefreshFailureKeepsOldValue: a failed reload keeps the old value
// until its deadline, counts in RefreshErrors and reaches OnRefreshError.
func TestRefreshFailureKeepsOldValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		var events []RefreshError[string, string]
		var mu sync.Mutex
		c := newCache(t, Options[string, string]{TTL: time.Minute, RefreshAfter: 30 * time.Second, Loader: g.load,
			OnRefreshError: func(e RefreshError[string, string]) {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}})
		go func() { g.answers <- Loaded[string]{Value: "v1"} }()
		c.Load(context.Background(), "k")
		time.Sleep(45 * time.Second)
		wantGet(t, c, "k", "v1", true)
		synctest.Wait()
		down := errors.New("down")
		g.errs <- down
		synctest.Wait()
		wantGet(t, c, "k", "v1", true) // kept; this read starts another reload
		synctest.Wait()
		if left, _ := c.Remaining("k"); left != 15*time.Second {
			t.Errorf("Remaining after the failed reload = %v, want the old deadline's 15s", left)
		}
		st := c.Stats()
		if st.Refreshes != 1 || st.RefreshErrors != 1 || st.LoadErrors != 1 {
			t.Errorf("Stats %+v; want 1 refresh, 1 refresh error, 1 load error", st)
		}
		mu.Lock()
		if len(events) != 1 || events[0].Key != "k" || events[0].Value != "v1" || !errors.Is(events[0].Err, down) {
			t.Errorf("OnRefreshError events = %+v, want one {k v1 down}", events)
		}
		mu.Unlock()
		g.errs <- down // the second reload fails too
		time.Sleep(15 * time.Second)
		wantGet(t, c, "k", "", false)
	})
}

// TestRefreshExplicit: Refresh reloads a key in the background, once at a
// time, loading it if absent.
func TestRefreshExplicit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		c := newCache(t, Options[string, string]{TTL: time.Minute, Loader: g.load})
		c.Set("k", "v1")
		if !c.Refresh("k") {
			t.Fatal("Refresh = false, want true")
		}
		synctest.Wait()
		if c.Refresh("k") {
			t.Error("second Refresh while one is in flight = true, want false")
		}
		wantGet(t, c, "k", "v1", true)
		g.answers <- Loaded[string]{Value: "v2"}
		synctest.Wait()
		wantGet(t, c, "k", "v2", true)

		if !c.Refresh("absent") {
			t.Fatal("Refresh of an absent key = false, want true")
		}
		g.answers <- Loaded[string]{Value: "loaded"}
		synctest.Wait()
		wantGet(t, c, "absent", "loaded", true)
		if n := g.calls.Load(); n != 2 {
			t.Errorf("loader calls = %d, want 2", n)
		}
	})
}

// TestRefreshOvertakenBySet: a Set during a reload wins over it.
func TestRefreshOvertakenBySet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		c := newCache(t, Options[string, string]{TTL: time.Minute, Loader: g.load})
		c.Set("k", "v1")
		c.Refresh("k")
		synctest.Wait()
		c.Set("k", "set")
		g.answers <- Loaded[string]{Value: "reloaded"}
		synctest.Wait()
		wantGet(t, c, "k", "set", true)
	})
}

// TestRefreshJoinedByLoad: a Load of a key whose entry expired while its
// reload runs waits for that reload instead of loading again.
func TestRefreshJoinedByLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		c := newCache(t, Options[string, string]{TTL: time.Minute, Loader: g.load})
		c.Set("k", "v1")
		c.Refresh("k")
		synctest.Wait()
		time.Sleep(time.Minute) // v1 expires
		var v string
		done := make(chan struct{})
		go func() { v, _ = c.Load(context.Background(), "k"); close(done) }()
		synctest.Wait()
		g.answers <- Loaded[string]{Value: "v2"}
		<-done
		if v != "v2" || g.calls.Load() != 1 {
			t.Errorf("Load during the reload = %q after %d loader calls; want v2 after 1", v, g.calls.Load())
		}
	})
}

// TestRefreshNotFoundRemovesEntry: a reload that finds nothing removes the
// old value and, with NotFoundTTL, remembers the answer.
func TestRefreshNotFoundRemovesEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		rec := &recorder[string, string]{}
		c := newCache(t, Options[string, string]{TTL: time.Minute, NotFoundTTL: time.Second, Loader: g.load, OnEvict: rec.on})
		c.Set("k", "v1")
		c.Refresh("k")
		synctest.Wait()
		g.answers <- Loaded[string]{NotFound: true}
		synctest.Wait()
		wantGet(t, c, "k", "", false)
		if _, err := c.Load(context.Background(), "k"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Load after a not-found reload: err = %v, want ErrNotFound", err)
		}
		if got := rec.take(); len(got) != 1 || got[0].Reason != Deleted || got[0].Value != "v1" {
			t.Errorf("OnEvict events %v, want one Deleted v1", got)
		}
	})
}

// TestRefreshPanicIsReported: a panicking loader in a reload does not
// crash the program; it reaches OnRefreshError as a *timingwheel.PanicError.
func TestRefreshPanicIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := make(chan error, 1)
		c := newCache(t, Options[string, string]{TTL: time.Minute,
			Loader:         func(context.Context, string) (Loaded[string], error) { panic("boom") },
			OnRefreshError: func(e RefreshError[string, string]) { got <- e.Err }})
		c.Set("k", "v1")
		c.Refresh("k")
		var pe *timingwheel.PanicError
		if err := <-got; !errors.As(err, &pe) || pe.Value != "boom" {
			t.Errorf("OnRefreshError got %v, want *timingwheel.PanicError(boom)", err)
		}
		synctest.Wait()
		wantGet(t, c, "k", "v1", true)
	})
}

// TestCloseCancelsRefresh: Close cancels a reload's context and waits for
// it; the reload's result is not stored.
func TestCloseCancelsRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{})
		var sawCancel atomic.Bool
		c, err := New(Options[string, string]{TTL: time.Minute,
			Loader: func(ctx context.Context, _ string) (Loaded[string], error) {
				close(started)
				<-ctx.Done()
				sawCancel.Store(true)
				return Loaded[string]{}, ctx.Err()
			}})
		if err != nil {
			t.Fatal(err)
		}
		c.Refresh("k")
		<-started
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if !sawCancel.Load() {
			t.Error("Close returned before the reload saw its context canceled")
		}
		if c.Refresh("k") {
			t.Error("Refresh after Close = true, want false")
		}
	})
}

// TestGetOfDueEntryTakesNoLock: a read of an entry due for refresh, with
// its reload in flight, takes no lock: it returns while the test holds
// every shard lock and the refresher's. (A read that locked would
// deadlock here.)
func TestGetOfDueEntryTakesNoLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedLoader()
		c := newCache(t, Options[string, string]{TTL: time.Minute, RefreshAfter: time.Second, Loader: g.load})
		c.Set("k", "v1")
		time.Sleep(2 * time.Second)
		wantGet(t, c, "k", "v1", true) // starts the reload
		synctest.Wait()
		for s := range c.c.made() {
			s.mu.Lock()
		}
		c.c.refr.mu.Lock()
		v, ok := c.Get("k")
		c.c.refr.mu.Unlock()
		for s := range c.c.made() {
			s.mu.Unlock()
		}
		if v != "v1" || !ok {
			t.Errorf("Get = %q, %v; want v1, true", v, ok)
		}
		g.answers <- Loaded[string]{Value: "v2"}
	})
}
