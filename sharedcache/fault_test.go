package sharedcache

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// putDirect writes value for key into the test bucket over an in-process
// connection, as another instance would.
func putDirect(t *testing.T, s *testServer, key, value string) {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(s.srv))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(value)
	if _, err := kv.Put(ctx, encodeKey(key), makeRecord(kindValue, time.Now().Add(time.Hour), b)); err != nil {
		t.Fatal(err)
	}
}

// TestStoreRestart: with the server stopped, an instance serves its local
// copy and its writes fail with ErrUnavailable; a write made while it was
// away (here: while the server ran without a listener, so no instance could
// see it) is what it reads once its watch resumes, never the old copy.
func TestStoreRestart(t *testing.T) {
	t.Parallel()
	srv := startTestServer(t)
	a := startInstance(t, "a", srv.url())
	b := startInstance(t, "b", srv.url())
	if got := a.call("set k v1"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("a set = %q", got)
	}
	if got, want := b.call("get k"), "ok v1"; got != want {
		t.Fatalf("b get = %q, want %q", got, want)
	}

	srv.stop()
	if got, want := b.call("get k"), "ok v1"; got != want {
		t.Errorf("b get with the store down = %q, want %q (its local copy)", got, want)
	}
	if got := a.call("set k v2"); !strings.Contains(got, "store unavailable") {
		t.Errorf("a set with the store down = %q, want an error naming the store unavailable", got)
	}

	// Another writer's update, which neither instance can see.
	srv.start("")
	putDirect(t, srv, "k", "v3")
	srv.stop()
	srv.start(srv.addr)

	a.await("resumed")
	b.await("resumed")
	for _, in := range []*instance{a, b} {
		if got, want := in.call("get k"), "ok v3"; got != want {
			t.Errorf("%s get after recovery = %q, want %q", in.name, got, want)
		}
	}
	if s := b.stats(); s.StaleDrops == 0 {
		t.Errorf("b stale drops = 0, want its copy of k dropped on reconnect")
	}
	// Writes work again and reach the other instance.
	wb := b.send("watch k v4")
	if got := a.call("set k v4"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("a set after recovery = %q", got)
	}
	if got := b.answer(wb); !strings.HasPrefix(got, "ok ") {
		t.Errorf("b watch after recovery = %q", got)
	}
}

// TestStaleIfErrorStoreDown: with the server stopped, an instance with
// StaleIfError serves its copy past its deadline (LocalTTL 300ms) by Get
// and by Take (whose loader would answer "loaded-by-a"), while an instance
// without the option reports the store unavailable; once the server is
// back, with a write made meanwhile, the stale copy is gone and the new
// value is read.
func TestStaleIfErrorStoreDown(t *testing.T) {
	t.Parallel()
	srv := startTestServer(t)
	a := startInstance(t, "a", srv.url(), "SHAREDCACHE_LOCAL_TTL=300ms", "SHAREDCACHE_STALE_IF_ERROR=1h")
	b := startInstance(t, "b", srv.url(), "SHAREDCACHE_LOCAL_TTL=300ms")
	if got := a.call("set k v1"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("a set = %q", got)
	}
	for _, in := range []*instance{a, b} {
		if got, want := in.call("get k"), "ok v1"; got != want {
			t.Fatalf("%s get = %q, want %q", in.name, got, want)
		}
	}

	srv.stop()
	for _, in := range []*instance{a, b} {
		if got := in.call("pastfresh k"); got != "ok " {
			t.Fatalf("%s pastfresh k = %q, want its copy to reach its deadline", in.name, got)
		}
	}
	if got, want := a.call("get k"), "ok v1"; got != want {
		t.Errorf("a (StaleIfError 1h) get past the deadline, store down = %q, want %q", got, want)
	}
	a.call("release k") // a loader, if Take ran one, returns at once
	if got, want := a.call("take k"), "ok v1"; got != want {
		t.Errorf("a (StaleIfError 1h) take past the deadline, store down = %q, want %q without loading", got, want)
	}
	if got := b.call("get k"); !strings.Contains(got, "store unavailable") {
		t.Errorf("b (no StaleIfError) get past the deadline, store down = %q, want an error naming the store unavailable", got)
	}
	if s := a.stats(); s.StaleHits != 2 || s.Loads != 0 {
		t.Errorf("a stale hits = %d, loads = %d; want 2 and 0", s.StaleHits, s.Loads)
	}

	srv.start("")
	putDirect(t, srv, "k", "v3")
	srv.stop()
	srv.start(srv.addr)
	a.await("resumed")
	if got, want := a.call("get k"), "ok v3"; got != want {
		t.Errorf("a get after recovery = %q, want %q (the write made meanwhile, never the stale copy)", got, want)
	}
}
