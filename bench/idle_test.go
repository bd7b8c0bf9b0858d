package bench

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/ttlkit/ttlkit/bench/internal/harness"
)

// idletimeout benchmarks (issue 4, Performance): a loopback echo server
// with many connections, without any timeout, with idletimeout and with a
// read deadline set before every Read, and a check that idle connections
// are all reaped on time. See README.md, section "idletimeout".

var (
	idleConnsFlag = flag.Int("idle.conns", 0,
		"connections of the idletimeout benchmarks; 0 means $"+idleConnsEnv+", else 10000 (200 with -short)")
	idleClientsFlag = flag.Int("idle.clients", 4, "client goroutines of BenchmarkIdleEcho")
	idleDepthFlag   = flag.Int("idle.depth", 16,
		"BenchmarkIdleEcho: messages a client goroutine has in flight, each on its own connection")
	idleServerFlag = flag.String("idle.server", "child",
		"where the idletimeout benchmarks run the server: child (a child process, whose CPU is measured alone), inproc, or both")
)

// idleConnsEnv sets the number of connections when -idle.conns is not given.
const idleConnsEnv = "TTLKIT_IDLE_CONNS"

// idleDialers is how many goroutines open BenchmarkIdleEcho's connections.
const idleDialers = 8

// idleConns returns the number of connections to use.
func idleConns(tb testing.TB) int {
	if *idleConnsFlag > 0 {
		return *idleConnsFlag
	}
	if v := os.Getenv(idleConnsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			tb.Fatalf("%s=%q, want a positive integer", idleConnsEnv, v)
		}
		return n
	}
	if testing.Short() {
		return 200
	}
	return 10_000
}

// idleServerModes returns the server placements -idle.server asks for.
func idleServerModes(tb testing.TB) []string {
	switch *idleServerFlag {
	case "child", "inproc":
		return []string{*idleServerFlag}
	case "both":
		return []string{"child", "inproc"}
	}
	tb.Fatalf("-idle.server=%q, want child, inproc or both", *idleServerFlag)
	return nil
}

// idleConnsFor returns idleConns, or fewer if this process cannot hold
// that many for a server in mode: it raises the open-file limit if it may,
// and otherwise logs how many connections fit and uses those. A child
// server holds one descriptor per connection, and so does the client
// process; in process both ends are in one process.
func idleConnsFor(tb testing.TB, mode string) int {
	want := idleConns(tb)
	perConn := 1
	if mode == "inproc" {
		perConn = 2
	}
	lim := raiseNoFile(perConn*want + fdSlack)
	if lim < 0 || lim >= perConn*want+fdSlack {
		return want
	}
	n := (lim - fdSlack) / perConn
	if n < 1 {
		tb.Fatalf("RLIMIT_NOFILE is %d: no room for connections", lim)
	}
	tb.Logf("server=%s: RLIMIT_NOFILE is %d and cannot be raised: %d connections instead of %d", mode, lim, n, want)
	return n
}

// startBackend starts an echo server variant in a child process ("child")
// or in this one ("inproc"), with room for conns connections.
func startBackend(mode string, im serverImpl, conns int) (echoBackend, error) {
	switch mode {
	case "child":
		return startChildServer(im, conns)
	case "inproc":
		return startEchoServer(im)
	}
	return nil, fmt.Errorf("unknown server mode %q", mode)
}

// echoRig is a server with its connections open, reused by every run of
// one sub-benchmark (the testing package calls it with growing b.N).
type echoRig struct {
	srv     echoBackend
	conns   []net.Conn
	clients *echoClients
}

// newEchoRig starts the server, dials n connections and sends one message
// on each, so that every connection is accepted and served before timing.
func newEchoRig(mode string, im serverImpl, n, clients, depth int, verify bool) (*echoRig, error) {
	srv, err := startBackend(mode, im, n)
	if err != nil {
		return nil, err
	}
	conns, err := dialAll(srv.Addr(), n, idleDialers)
	if err != nil {
		_, ferr := srv.Finish()
		return nil, fmt.Errorf("%w (server: %v)", err, ferr)
	}
	r := &echoRig{srv: srv, conns: conns, clients: newEchoClients(conns, clients, depth, verify)}
	if err := r.clients.run(n); err != nil {
		_, ferr := r.finish()
		return nil, fmt.Errorf("warm-up: %w (server: %v)", err, ferr)
	}
	return r, nil
}

// finish closes the clients' connections, then the server, and returns
// the server's final counters.
func (r *echoRig) finish() (serverStats, error) {
	closeAll(r.conns)
	return r.srv.Finish()
}

// BenchmarkIdleEcho is one small message echoed over loopback TCP with
// many connections open: BenchmarkIdleEcho/server=<child,inproc>/impl=<bare,ttlkit,deadline>.
// One op is one message: written by a client, read and written back by the
// server's Read/Write loop, read by the client.
//
//   - ns/op: wall time per message, over all client goroutines.
//   - cpu-ns/op: CPU time of this process per message (harness.Meter).
//     With server=child that is the clients alone; with server=inproc it is
//     clients and server together.
//   - srv-cpu-ns/op (server=child only): the server process's own CPU time
//     per message, from getrusage in the child.
func BenchmarkIdleEcho(b *testing.B) {
	for _, mode := range idleServerModes(b) {
		n := idleConnsFor(b, mode)
		for _, im := range echoImpls {
			var rig *echoRig
			b.Run(fmt.Sprintf("server=%s/impl=%s", mode, im.name), func(b *testing.B) {
				if rig == nil {
					r, err := newEchoRig(mode, im, n, *idleClientsFlag, *idleDepthFlag, false)
					if err != nil {
						b.Fatal(err)
					}
					rig = r
				}
				benchEcho(b, rig, mode)
				b.ReportMetric(float64(n), "conns")
			})
			if rig != nil {
				st, err := rig.finish()
				if err != nil {
					b.Errorf("%s/%s: finish: %v", mode, im.name, err)
				}
				if st.OtherErrs != 0 || st.IdleErrs != 0 {
					b.Errorf("%s/%s: server saw %d connection errors and %d idle closes, want 0 and 0",
						mode, im.name, st.OtherErrs, st.IdleErrs)
				}
				if im.idle != nil && (st.Idle.Accepted != uint64(n) || st.Idle.ReapedIdle != 0) {
					b.Errorf("%s/%s: Stats = %+v, want %d accepted and none reaped", mode, im.name, st.Idle, n)
				}
			}
		}
	}
}

// benchEcho times b.N messages on rig.
func benchEcho(b *testing.B, rig *echoRig, mode string) {
	before, err := rig.srv.Stats()
	if err != nil {
		b.Fatal(err)
	}
	m := harness.Start(b, nil)
	err = rig.clients.run(b.N)
	m.Stop()
	if err != nil {
		b.Fatal(err)
	}
	after, err := rig.srv.Stats()
	if err != nil {
		b.Fatal(err)
	}
	if mode == "child" && before.CPUNs >= 0 {
		b.ReportMetric(float64(after.CPUNs-before.CPUNs)/float64(b.N), "srv-cpu-ns/op")
	}
}

// BenchmarkIdleReap checks that idle connections are all reaped on time:
// BenchmarkIdleReap/server=<child,inproc>, n connections against a server
// with IdleTimeout 200 ms and Resolution 10 ms, one message each and then
// idle (see idle_reap_test.go for the timing). One round per process;
// reports no ns/op.
//
//   - reaped: the server's Stats().ReapedIdle; must equal conns.
//   - early: connections closed before the timeout; must be 0.
//   - late: EOF later than timeout + 2 × Resolution after the echo.
//   - min/p50/p99/max-ms: time from the echo to EOF, as the client saw it.
//   - idle-err: server Reads that failed with idletimeout.ErrIdle
//     (Timeout() true); must equal conns.
func BenchmarkIdleReap(b *testing.B) {
	for _, mode := range idleServerModes(b) {
		n := idleConnsFor(b, mode)
		b.Run("server="+mode, func(b *testing.B) {
			reportOneShot(b, func() map[string]float64 {
				rep, err := reapRound(mode, n)
				if err != nil {
					b.Fatal(err)
				}
				if got := rep.server.Idle.ReapedIdle; got != uint64(n) || rep.server.IdleErrs != uint64(n) {
					b.Errorf("ReapedIdle = %d, idle errors = %d, want %d and %d", got, rep.server.IdleErrs, n, n)
				}
				if rep.early != 0 {
					b.Errorf("%d connections reaped before the timeout, want 0", rep.early)
				}
				return rep.metrics()
			})
		})
	}
}
