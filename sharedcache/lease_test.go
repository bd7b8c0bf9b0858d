package sharedcache

import "testing"

// awaitAny waits until one of insts reports ev and returns it.
func awaitAny(t *testing.T, ev string, insts ...*instance) *instance {
	t.Helper()
	got := make(chan *instance, len(insts))
	stop := make(chan struct{})
	defer close(stop)
	for _, in := range insts {
		go func() {
			for {
				select {
				case e := <-in.events:
					if e == ev {
						got <- in
						return
					}
				case <-in.exited:
					return
				case <-stop:
					return
				}
			}
		}()
	}
	return <-got
}

// releaseAll lets the loaders of key return on every instance, those that
// start later included: an instance that loads a second time then answers
// with its own value (a failed check naming it) instead of hanging.
func releaseAll(insts []*instance, key string) {
	for _, in := range insts {
		in.call("release %s", key)
	}
}

// TestLoadOnce: three instances Take one cold key at once; the loader runs
// on one of them, the two others wait for its write, and all three return
// its value.
func TestLoadOnce(t *testing.T) { forEachBackend(t, testLoadOnce) }

func testLoadOnce(t *testing.T, url string, env []string) {
	env = append(env, "SHAREDCACHE_LEASE_WAIT=60s") // see testLeaseholderCrash
	insts := []*instance{
		startInstance(t, "a", url, env...),
		startInstance(t, "b", url, env...),
		startInstance(t, "c", url, env...),
	}
	var takes []chan string
	for _, in := range insts {
		takes = append(takes, in.send("take cold"))
	}
	loader := awaitAny(t, "loading cold", insts...)
	for _, in := range insts {
		if in != loader {
			in.await("waiting cold")
		}
	}
	releaseAll(insts, "cold")
	want := "ok loaded-by-" + loader.name
	for i, ch := range takes {
		if got := insts[i].answer(ch); got != want {
			t.Errorf("%s take = %q, want %q", insts[i].name, got, want)
		}
	}
	var loads, waits uint64
	for _, in := range insts {
		s := in.stats()
		loads += s.Loads
		waits += s.LeaseWaits
	}
	if loads != 1 || waits != 2 {
		t.Errorf("loads = %d, lease waits = %d across 3 instances, want 1 and 2", loads, waits)
	}
}

// TestLeaseholderCrash: the instance holding a cold key's lease is killed
// while loading; its lease expires (LeaseTTL 3s) and exactly one of the two
// waiting instances loads the key, the other gets that value.
func TestLeaseholderCrash(t *testing.T) { forEachBackend(t, testLeaseholderCrash) }

func testLeaseholderCrash(t *testing.T, url string, env []string) {
	// The waiters must start waiting within LeaseTTL of a's lease, even
	// on a loaded machine under the race detector: all three are started
	// first, and the lease is 3s. LeaseWait is long: with the default
	// (LeaseTTL + 1s from the Take's start) the waiter that does not take
	// a's expired lease stops waiting for the new holder within a second,
	// and loads too if the test is slow to release the loader.
	env = append(env, "SHAREDCACHE_LEASE_TTL=3s", "SHAREDCACHE_LEASE_WAIT=60s")
	a := startInstance(t, "a", url, env...)
	b := startInstance(t, "b", url, env...)
	c := startInstance(t, "c", url, env...)
	a.send("take k")
	a.await("loading k")
	tb, tc := b.send("take k"), c.send("take k")
	b.await("waiting k")
	c.await("waiting k")
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	loader := awaitAny(t, "loading k", b, c)
	releaseAll([]*instance{b, c}, "k")
	want := "ok loaded-by-" + loader.name
	for _, r := range []struct {
		in *instance
		ch chan string
	}{{b, tb}, {c, tc}} {
		if got := r.in.answer(r.ch); got != want {
			t.Errorf("%s take = %q, want %q", r.in.name, got, want)
		}
	}
	if loads := b.stats().Loads + c.stats().Loads; loads != 1 {
		t.Errorf("loads after the crash = %d across b and c, want 1", loads)
	}
}
