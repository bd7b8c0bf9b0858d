package sharedcache

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// redisServer is a redis-server process on loopback with no persistence,
// which a test can kill and start again on the same port.
type redisServer struct {
	t    testing.TB
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// startRedis starts redis-server, skipping the test when it is not
// installed, except in CI (CI=true), where it fails.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not installed (CI: .ci/run installs it)")
		}
		t.Skip("redis-server not installed: apt-get install -y redis-server to run the Redis tests")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := &redisServer{t: t, addr: addr}
	r.start()
	t.Cleanup(r.kill)
	return r
}

// start runs the server and waits for its "Ready to accept connections".
func (r *redisServer) start() {
	r.t.Helper()
	_, port, _ := net.SplitHostPort(r.addr)
	r.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port,
		"--save", "", "--appendonly", "no", "--dir", r.t.TempDir(), "--logfile", "")
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	ready := make(chan struct{})
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), "Ready to accept connections") {
				close(ready)
				signalled = true
			}
		}
	}()
	select {
	case <-ready:
	case <-r.done:
		r.t.Fatalf("redis-server on %s exited before it was ready", r.addr)
	case <-time.After(20 * time.Second):
		r.t.Fatalf("redis-server on %s not ready in 20s", r.addr)
	}
}

// kill kills the server with SIGKILL, as a crash would.
func (r *redisServer) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		<-r.done
		r.cmd.Wait()
		r.cmd = nil
	}
}

// backend is a store kind the process tests run against.
type backend struct {
	name  string
	start func(t testing.TB) (url string, env []string)
}

var backends = []backend{
	{"nats", func(t testing.TB) (string, []string) { return startTestServer(t).url(), nil }},
	{"redis", func(t testing.TB) (string, []string) {
		return startRedis(t).addr, []string{"SHAREDCACHE_STORE=redis"}
	}},
}

// forEachBackend runs f as a subtest per backend, in parallel, beside the
// other parallel tests.
func forEachBackend(t *testing.T, f func(t *testing.T, url string, env []string)) {
	t.Parallel() // instance processes on a server of the test's own: they mostly wait
	for _, b := range backends {
		t.Run(fmt.Sprintf("store=%s", b.name), func(t *testing.T) {
			t.Parallel()
			url, env := b.start(t)
			f(t, url, env)
		})
	}
}

// TestRedisKilled: redis-server is killed (SIGKILL) and started again empty.
// Meanwhile an instance serves its local copy and writes fail with an error
// naming the store unavailable; once the connection is back, the copy is
// dropped: the instance reads what the new server holds (nothing), never
// the old copy.
func TestRedisKilled(t *testing.T) {
	t.Parallel()
	r := startRedis(t)
	env := []string{"SHAREDCACHE_STORE=redis"}
	a := startInstance(t, "a", r.addr, env...)
	b := startInstance(t, "b", r.addr, env...)
	if got := a.call("set k v1"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("a set = %q", got)
	}
	// Twice: the first read may overlap the invalidation of a's write, and
	// then keeps no copy (Redis gives no revision to tell them apart); the
	// second overlaps nothing and keeps one.
	for range 2 {
		if got, want := b.call("get k"), "ok v1"; got != want {
			t.Fatalf("b get = %q, want %q", got, want)
		}
	}

	r.kill()
	if got, want := b.call("get k"), "ok v1"; got != want {
		t.Errorf("b get with redis down = %q, want %q (its local copy)", got, want)
	}
	if got := a.call("set k v2"); !strings.Contains(got, "store unavailable") {
		t.Errorf("a set with redis down = %q, want an error naming the store unavailable", got)
	}

	r.start()
	a.await("resumed")
	b.await("resumed")
	for _, in := range []*instance{a, b} {
		if got, want := in.call("get k"), "notfound"; got != want {
			t.Errorf("%s get after recovery = %q, want %q (the new server is empty)", in.name, got, want)
		}
	}
	if s := b.stats(); s.StaleDrops == 0 {
		t.Errorf("b stale drops = 0, want its copy of k dropped on reconnect")
	}
	wb := b.send("watch k v3")
	if got := a.call("set k v3"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("a set after recovery = %q", got)
	}
	if got := b.answer(wb); !strings.HasPrefix(got, "ok ") {
		t.Errorf("b watch after recovery = %q", got)
	}
}
