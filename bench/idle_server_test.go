package bench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttlkit/ttlkit/bench/internal/harness"
	"github.com/ttlkit/ttlkit/idletimeout"
)

// Echo servers for the idletimeout benchmarks (issue 4, Performance). Every
// variant runs the same plain loop per connection, Read then Write what was
// read, behind a different listener. A server runs in this process or in a
// child process (see idle_child_test.go) so that its CPU time can be
// measured apart from the clients'.

// echoTimeout is the timeout of the "ttlkit" and "deadline" echo servers:
// long enough that nothing expires while measuring.
const echoTimeout = time.Minute

// reapConfig is the reap check's server Config (issue 4: "every idle
// connection reaped on time").
var reapConfig = idletimeout.Config{IdleTimeout: 200 * time.Millisecond, Resolution: 10 * time.Millisecond}

// serverImpl is one echo server variant.
type serverImpl struct {
	name string
	// idle, if not nil, wraps the TCP listener in an idletimeout.Listener.
	idle *idletimeout.Config
	// deadlinePerRead sets a read deadline echoTimeout ahead before every
	// Read: the classic way to drop idle connections.
	deadlinePerRead bool
	// forward wraps every accepted connection in a struct that only
	// forwards to it: the cost of any per-connection wrapper, without
	// idletimeout's bookkeeping (a control for BenchmarkIdleEchoRatio).
	forward bool
	// timeReaps records, for every connection closed for idleness, the
	// time from the start of its last successful Write to the return of
	// the Read that failed (serverStats.ReapNs). It reads the clock once
	// per message.
	timeReaps bool
}

var (
	echoImpls = []serverImpl{
		{name: "bare"},
		{name: "ttlkit", idle: &idletimeout.Config{IdleTimeout: echoTimeout}},
		{name: "deadline", deadlinePerRead: true},
	}
	wrapperImpl = serverImpl{name: "wrapper", forward: true}
	reapImpl    = serverImpl{name: "reap", idle: &reapConfig, timeReaps: true}
	// matrixImpl is idletimeout's recommended raw TCP config (issue 25:
	// rates and a first-byte deadline), its idle and first-byte timeouts
	// at echoTimeout so that connections waiting for their variant's turn
	// are not reaped: Read and Write count bytes, and every connection's
	// timer comes up each RateGrace / 4 to judge its transfers (reading
	// tcp_info for the write rate).
	matrixImpl = serverImpl{name: "matrix", idle: &idletimeout.Config{IdleTimeout: echoTimeout, FirstByteTimeout: echoTimeout,
		MinReadRate: 240, MinWriteRate: 240, RateGrace: 5 * time.Second}}
)

// implByName finds an echo or reap server variant by name.
func implByName(name string) (serverImpl, bool) {
	for _, im := range append(echoImpls[:len(echoImpls):len(echoImpls)], wrapperImpl, reapImpl, matrixImpl) {
		if im.name == name {
			return im, true
		}
	}
	return serverImpl{}, false
}

// serverStats is what a server reports about itself, the same in and out
// of process (it travels as JSON from a child).
type serverStats struct {
	// CPUNs is the process's CPU time (user + system, all threads) so far,
	// in ns; -1 where the platform cannot tell. In process it includes
	// the clients.
	CPUNs int64
	// Idle is the idletimeout.Listener's Stats; zero for bare and deadline.
	Idle idletimeout.Stats
	// IdleErrs counts connections whose Read or Write failed with an error
	// that wraps idletimeout.ErrIdle and reports Timeout() true.
	IdleErrs uint64
	// OtherErrs counts connections that ended with any other error than
	// io.EOF or the server's own shutdown.
	OtherErrs uint64
	// ReapNs holds, for the servers that time reaps, one entry per
	// connection closed for idleness: ns from the start of its last
	// successful Write to the return of the Read that failed with ErrIdle,
	// in no particular order. The Write completed after its start and the
	// close came before the Read returned, so an entry below the timeout
	// proves an early reap.
	ReapNs []int64
}

// echoBackend is a running echo server, in this process or a child.
type echoBackend interface {
	// Addr is the 127.0.0.1 address to dial.
	Addr() string
	// Stats returns the server's counters and CPU time so far.
	Stats() (serverStats, error)
	// Finish stops the server, closes its connections, waits for its
	// goroutines and returns its final counters. Call it once, last.
	Finish() (serverStats, error)
}

// echoServer is an in-process echo server. The set of open connections is
// kept only so that Close can end their goroutines; it is touched on accept
// and on exit, never per message.
type echoServer struct {
	ln        net.Listener
	idle      *idletimeout.Listener // nil unless the variant wraps
	deadline  bool
	forward   bool
	timeReaps bool

	idleErrs, otherErrs atomic.Uint64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	reapNs []int64
	wg     sync.WaitGroup // accept loop and connection goroutines
}

var _ echoBackend = (*echoServer)(nil)

// startEchoServer listens on 127.0.0.1 and serves im until Close.
func startEchoServer(im serverImpl) (*echoServer, error) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &echoServer{ln: tcp, deadline: im.deadlinePerRead, forward: im.forward, timeReaps: im.timeReaps, conns: map[net.Conn]struct{}{}}
	if im.idle != nil {
		il, err := idletimeout.NewListener(tcp, *im.idle)
		if err != nil {
			tcp.Close()
			return nil, fmt.Errorf("idletimeout.NewListener: %w", err)
		}
		s.ln, s.idle = il, il
	}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

func (s *echoServer) Addr() string { return s.ln.Addr().String() }

func (s *echoServer) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.otherErrs.Add(1)
			}
			return
		}
		if s.forward {
			c = &forwardConn{c}
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// serve is the echo loop of one connection.
func (s *echoServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer s.forget(c)
	buf := make([]byte, 512)
	var lastWrite time.Time // start of the last successful Write; only with timeReaps
	for {
		if s.deadline {
			c.SetReadDeadline(time.Now().Add(echoTimeout))
		}
		n, err := c.Read(buf)
		if n > 0 {
			var start time.Time
			if s.timeReaps {
				start = time.Now()
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				s.count(werr, time.Time{})
				return
			}
			lastWrite = start
		}
		if err != nil {
			s.count(err, lastWrite)
			return
		}
	}
}

// count classifies the error that ended a connection whose last
// successful Write started at lastWrite (zero if not timed).
func (s *echoServer) count(err error, lastWrite time.Time) {
	var ne net.Error
	switch {
	case errors.Is(err, idletimeout.ErrIdle) && errors.As(err, &ne) && ne.Timeout():
		s.idleErrs.Add(1)
		if s.timeReaps && !lastWrite.IsZero() {
			d := time.Since(lastWrite)
			s.mu.Lock()
			s.reapNs = append(s.reapNs, d.Nanoseconds())
			s.mu.Unlock()
		}
	case err == io.EOF, errors.Is(err, net.ErrClosed) && s.isClosed():
	default:
		s.otherErrs.Add(1)
	}
}

func (s *echoServer) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *echoServer) forget(c net.Conn) {
	c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Stats reports the process CPU time, which in process includes whatever
// else runs in it (the clients).
func (s *echoServer) Stats() (serverStats, error) {
	st := serverStats{CPUNs: -1, IdleErrs: s.idleErrs.Load(), OtherErrs: s.otherErrs.Load()}
	if cpu, ok := harness.ProcessCPU(); ok {
		st.CPUNs = cpu.Nanoseconds()
	}
	if s.idle != nil {
		st.Idle = s.idle.Stats()
	}
	s.mu.Lock()
	st.ReapNs = slices.Clone(s.reapNs)
	s.mu.Unlock()
	return st, nil
}

// Finish closes the server and returns its final counters.
func (s *echoServer) Finish() (serverStats, error) {
	err := s.Close()
	st, _ := s.Stats()
	return st, err
}

// Close closes the listener and every open connection and waits for their
// goroutines. Idempotent.
func (s *echoServer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	err := s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// forwardConn forwards every method to the connection it holds.
type forwardConn struct{ net.Conn }
