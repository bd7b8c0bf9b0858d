package bench

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"
)

// Quick checks of the idletimeout benchmarks' rigs, small enough for every
// `go test ./...`: the echo servers echo, in and out of process, and the
// reap server reaps every idle connection, none early.

func TestIdleEcho(t *testing.T) {
	const (
		conns = 20
		msgs  = 400
	)
	for _, mode := range []string{"inproc", "child"} {
		for _, im := range echoImpls {
			// The echo loop is the same in a child; one variant there
			// checks the protocol (a child takes about a second to start
			// under -race).
			if mode == "child" && im.idle == nil {
				continue
			}
			t.Run(fmt.Sprintf("server=%s/impl=%s", mode, im.name), func(t *testing.T) {
				rig, err := newEchoRig(mode, im, conns, 3, 4, true)
				if err != nil {
					t.Fatal(err)
				}
				before, err := rig.srv.Stats()
				if err != nil {
					t.Fatal(err)
				}
				runErr := rig.clients.run(msgs)
				mid, statsErr := rig.srv.Stats()
				final, finErr := rig.finish()
				for _, err := range []error{runErr, statsErr, finErr} {
					if err != nil {
						t.Fatal(err)
					}
				}
				if before.CPUNs < 0 {
					t.Logf("no process CPU time on this platform")
				} else if mid.CPUNs <= 0 || mid.CPUNs < before.CPUNs {
					t.Errorf("server CPU went from %d ns to %d ns, want a positive, non-decreasing figure", before.CPUNs, mid.CPUNs)
				}
				if final.OtherErrs != 0 || final.IdleErrs != 0 {
					t.Errorf("server saw %d connection errors and %d idle closes, want 0 and 0", final.OtherErrs, final.IdleErrs)
				}
				if im.idle == nil {
					if mid.Idle != (final.Idle) || mid.Idle.Accepted != 0 {
						t.Errorf("Stats of a server without idletimeout = %+v, want zero", mid.Idle)
					}
					return
				}
				if got := mid.Idle; got.Accepted != conns || got.Open != conns || got.ReapedIdle != 0 {
					t.Errorf("Stats while running = %+v, want %d accepted, %d open, 0 reaped", got, conns, conns)
				}
				if got := final.Idle; got.Open != 0 || got.Closed != conns || got.ReapedIdle != 0 {
					t.Errorf("Stats after finish = %+v, want 0 open, %d closed, 0 reaped", got, conns)
				}
			})
		}
	}
}

func TestIdleEchoReap(t *testing.T) {
	tests := []struct {
		name  string
		mode  string
		conns int
	}{
		{"server=inproc", "inproc", 50},
		{"server=child", "child", 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := reapRound(tt.mode, tt.conns)
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.server.Idle.ReapedIdle; got != uint64(tt.conns) {
				t.Errorf("ReapedIdle = %d, want %d", got, tt.conns)
			}
			if got := rep.server.IdleErrs; got != uint64(tt.conns) {
				t.Errorf("server Reads failing with ErrIdle = %d, want %d", got, tt.conns)
			}
			if rep.server.OtherErrs != 0 {
				t.Errorf("server saw %d other connection errors, want 0", rep.server.OtherErrs)
			}
			if rep.early != 0 {
				t.Errorf("%d connections reaped before the timeout, want 0", rep.early)
			}
			if len(rep.toEOF) != tt.conns || len(rep.toClose) != tt.conns {
				t.Errorf("got %d times to EOF and %d server-side reap times, want %d and %d",
					len(rep.toEOF), len(rep.toClose), tt.conns, tt.conns)
			}
			// Server side, an early reap shows as a time below the
			// timeout (see serverStats.ReapNs).
			if len(rep.toClose) > 0 && rep.toClose[0] < reapConfig.IdleTimeout {
				t.Errorf("server-side reap time min %v, want at least %v", rep.toClose[0], reapConfig.IdleTimeout)
			}
			t.Logf("time to EOF: min %v, p50 %v, max %v; late %d",
				quantile(rep.toEOF, 0), quantile(rep.toEOF, 0.5), quantile(rep.toEOF, 1), rep.late)
		})
	}
}

// TestIdleEchoChildClients drives a server child from a client child, as
// BenchmarkIdleEchoRatio does for every variant.
func TestIdleEchoChildClients(t *testing.T) {
	const conns, msgs = 10, 300
	im, _ := implByName("ttlkit")
	srv, err := startChildServer(im, conns)
	if err != nil {
		t.Fatal(err)
	}
	r := &ratioRig{servers: []*childServer{srv}}
	cl, err := startChildClients(srv.Addr(), conns, 2, 3)
	if err == nil {
		r.clients = append(r.clients, cl)
		err = cl.run(msgs)
	}
	mid, statsErr := srv.Stats()
	if err := errors.Join(err, statsErr, r.finish(-1)); err != nil {
		t.Fatal(err)
	}
	if got := mid.Idle; got.Accepted != conns || got.Open != conns {
		t.Errorf("Stats with the client child running = %+v, want %d accepted and open", got, conns)
	}
}

func TestEchoClientsVisitEveryConnection(t *testing.T) {
	tests := []struct {
		name                  string
		conns, clients, depth int
		msgs                  int
		want                  []int // messages per connection
	}{
		{"one round", 5, 2, 2, 5, []int{1, 1, 1, 1, 1}},
		{"two rounds", 3, 1, 2, 6, []int{2, 2, 2}},
		{"depth above group size", 4, 2, 8, 8, []int{2, 2, 2, 2}},
		{"more clients than connections", 2, 5, 1, 4, []int{2, 2}},
		{"partial round", 4, 1, 3, 5, []int{2, 1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conns := make([]net.Conn, tt.conns)
			counts := make([]int, tt.conns)
			for i := range conns {
				conns[i] = &countConn{n: &counts[i]}
			}
			e := newEchoClients(conns, tt.clients, tt.depth, true)
			if err := e.run(tt.msgs); err != nil {
				t.Fatal(err)
			}
			for i := range counts {
				if counts[i] != tt.want[i] {
					t.Errorf("messages per connection = %v, want %v", counts, tt.want)
					break
				}
			}
		})
	}
}

// countConn is a net.Conn that counts Writes and echoes the last one.
type countConn struct {
	net.Conn // nil: other methods panic
	n        *int
	last     []byte
}

func (c *countConn) Write(p []byte) (int, error) {
	*c.n++
	c.last = append(c.last[:0], p...)
	return len(p), nil
}

func (c *countConn) Read(p []byte) (int, error) {
	n := copy(p, c.last)
	c.last = c.last[n:]
	return n, nil
}

// oneTo returns 1, 2, ..., n.
func oneTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func TestQuantile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"min", ms(1, 2, 3, 4), 0, time.Millisecond},
		{"median of four is the second", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"median of five is the third", ms(1, 2, 3, 4, 5), 0.5, 3 * time.Millisecond},
		{"p99 of 100 is the 99th", ms(oneTo(100)...), 0.99, 99 * time.Millisecond},
		{"max", ms(1, 2, 3, 4), 1, 4 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := quantile(tt.sorted, tt.q); got != tt.want {
				t.Errorf("quantile(%v, %v) = %v, want %v", tt.sorted, tt.q, got, tt.want)
			}
		})
	}
}

func TestRatioVariants(t *testing.T) {
	tests := []struct {
		name    string
		list    string
		want    []string // labels
		wantErr bool
	}{
		{name: "default", list: "bare,ttlkit,deadline,wrapper", want: []string{"bare", "ttlkit", "deadline", "wrapper"}},
		{name: "repeats are numbered", list: "bare,ttlkit,bare,bare", want: []string{"bare", "ttlkit", "bare#2", "bare#3"}},
		{name: "unknown name", list: "bare,nginx", wantErr: true},
		{name: "reap server is not an echo variant", list: "bare,reap", wantErr: true},
		{name: "one variant", list: "bare", wantErr: true},
		{name: "empty name", list: "bare,,ttlkit", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := ratioVariants(tt.list)
			if tt.wantErr {
				if err == nil {
					t.Errorf("ratioVariants(%q) = %v, want an error", tt.list, vs)
				}
				return
			}
			if err != nil {
				t.Fatalf("ratioVariants(%q): %v", tt.list, err)
			}
			var got []string
			for _, v := range vs {
				got = append(got, v.label)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("labels = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestHTTPIdleCloses: BenchmarkHTTPIdle's servers that have an idle
// timeout close every idle keep-alive connection, none before the
// timeout, and all three answer keep-alive requests.
func TestHTTPIdleCloses(t *testing.T) {
	for _, im := range httpIdleImpls {
		t.Run(im.name, func(t *testing.T) {
			if im.name != "bare" {
				addr, stop, err := startHTTPIdle(im, httpIdleTimeout)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := httpCloseRound(addr, 20)
				stop()
				if err != nil {
					t.Fatalf("close round: %v", err)
				}
				if rep.early != 0 || len(rep.toEOF) != 20 {
					t.Errorf("%d of %d closed before the timeout, want 0 of 20", rep.early, len(rep.toEOF))
				}
			}
			addr, stop, err := startHTTPIdle(im, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			clients, err := dialHTTPClients(addr, 4)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 12 {
				if err := clients[i%4].roundTrip(); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
			}
			for _, h := range clients {
				h.c.Close()
			}
		})
	}
}
