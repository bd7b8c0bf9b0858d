package sharedcache

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// testServer is an embedded server the test can stop and restart on the
// same port and directory.
type testServer struct {
	t    testing.TB
	dir  string
	addr string
	srv  *server.Server
}

func startTestServer(t testing.TB) *testServer {
	t.Helper()
	s := &testServer{t: t, dir: t.TempDir()}
	s.start("127.0.0.1:0")
	s.addr = s.srv.Addr().(*net.TCPAddr).String()
	t.Cleanup(s.stop)
	return s
}

// start starts the server on listen ("" for in-process only), on the same
// directory each time.
func (s *testServer) start(listen string) {
	s.t.Helper()
	opts := &server.Options{ServerName: "sharedcache-test", JetStream: true, StoreDir: s.dir,
		NoLog: true, NoSigs: true, DontListen: listen == ""}
	if listen != "" {
		host, port, err := net.SplitHostPort(listen)
		if err == nil {
			opts.Host = host
			opts.Port, err = strconv.Atoi(port)
		}
		if err != nil {
			s.t.Fatal(err)
		}
		if opts.Port == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		s.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		s.t.Fatal("the test server did not start")
	}
	s.srv = srv
}

func (s *testServer) url() string { return "nats://" + s.addr }

func (s *testServer) stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// version parses "vN".
func version(t *testing.T, v string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(v, "v"))
	if err != nil {
		t.Fatalf("value %q is not vN", v)
	}
	return n
}

// TestCoherence: three instance processes write one key in turn. After each
// Set returns, the writer reads its own write, and the two others, each
// holding the previous value locally, see the new one (woken by the
// invalidation). It logs the latency from the writer's return to the
// others' first read of the new value.
func TestCoherence(t *testing.T) { forEachBackend(t, testCoherence) }

func testCoherence(t *testing.T, url string, env []string) {
	insts := []*instance{
		startInstance(t, "a", url, env...),
		startInstance(t, "b", url, env...),
		startInstance(t, "c", url, env...),
	}
	rounds := 150
	if testing.Short() {
		rounds = 30
	}
	var lat []time.Duration
	for i := 1; i <= rounds; i++ {
		w := insts[i%3]
		val := fmt.Sprintf("v%d", i)
		var watches []chan string
		for _, o := range insts {
			if o == w {
				continue
			}
			if i > 1 { // each other instance holds the previous value locally
				if got, want := o.call("get k"), fmt.Sprintf("ok v%d", i-1); got != want {
					t.Fatalf("round %d: %s get = %q, want %q", i, o.name, got, want)
				}
			}
			watches = append(watches, o.send("watch k %s", val))
		}
		a := w.call("set k %s", val)
		ret, err := strconv.ParseInt(strings.TrimPrefix(a, "ok "), 10, 64)
		if err != nil {
			t.Fatalf("round %d: %s set: %q", i, w.name, a)
		}
		if got, want := w.call("get k"), "ok "+val; got != want {
			t.Fatalf("round %d: writer %s reads %q after its Set, want %q", i, w.name, got, want)
		}
		for j, ch := range watches {
			seen, err := strconv.ParseInt(strings.TrimPrefix(insts[0].answer(ch), "ok "), 10, 64)
			if err != nil {
				t.Fatalf("round %d: watch %d: %v", i, j, err)
			}
			lat = append(lat, time.Duration(max(seen-ret, 0)))
		}
	}
	var inv uint64
	for _, in := range insts {
		inv += in.stats().Invalidations
	}
	if want := uint64(2 * (rounds - 1)); inv < want {
		t.Errorf("invalidations received = %d, want at least %d", inv, want)
	}
	slices.Sort(lat)
	t.Logf("invalidation seen by the other instances after the writer's return, %d samples: p50 %v, p99 %v, max %v",
		len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
}
