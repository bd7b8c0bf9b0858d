package idletimeout_test

// This file shows how to test your own server that uses idletimeout: with
// testing/synctest, not a fake clock. Inside synctest.Test's bubble,
// time.Sleep moves a fake clock that jumps ahead as soon as every goroutine
// of the bubble is blocked, so five idle minutes pass in no real time, and
// the test can check when a connection was closed to the nanosecond.
//
// One rule: the bubble's clock does not move while a goroutine waits on a
// real socket (the network is outside the bubble), so hand the server
// in-memory connections, net.Pipe behind a net.Listener (pipeListener
// below), and create the idletimeout Listener inside the bubble.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/idletimeout"
)

// pingServer is the code under test: a line protocol that answers PING
// with PONG and hangs up on clients silent for 5 minutes.
type pingServer struct {
	l     *idletimeout.Listener
	wg    sync.WaitGroup
	idled atomic.Int64 // connections ended by the idle timeout
}

const idleAfter = 5 * time.Minute

func newPingServer(inner net.Listener) (*pingServer, error) {
	l, err := idletimeout.NewListener(inner, idletimeout.Config{IdleTimeout: idleAfter})
	if err != nil {
		return nil, err
	}
	s := &pingServer{l: l}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *pingServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *pingServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	in := bufio.NewScanner(c)
	for in.Scan() {
		if in.Text() == "PING" {
			fmt.Fprint(c, "PONG\n")
		} else {
			fmt.Fprint(c, "-ERR unknown command\n")
		}
	}
	if errors.Is(in.Err(), idletimeout.ErrIdle) {
		s.idled.Add(1)
	}
}

// close stops accepting and waits for the connections' goroutines.
func (s *pingServer) close() {
	s.l.Close()
	s.wg.Wait()
}

// TestPingServerHangsUpOnIdleClients tests pingServer inside a synctest
// bubble, over pipes.
func TestPingServerHangsUpOnIdleClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now() // the fake clock starts at midnight UTC, 2000-01-01
		pl := newPipeListener()
		srv, err := newPingServer(pl)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.close()
		client, err := pl.dial()
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		replies := bufio.NewReader(client)
		ping := func() {
			t.Helper()
			fmt.Fprint(client, "PING\n")
			if got, err := replies.ReadString('\n'); got != "PONG\n" || err != nil {
				t.Fatalf("at %v: reply %q, %v; want PONG", time.Since(begin), got, err)
			}
		}

		ping()
		time.Sleep(idleAfter - time.Second)
		ping() // 4m59s of silence: still open, and the timeout starts again

		// Silence from now on. The Read below waits until the server hangs
		// up, and meanwhile the clock moves to that moment.
		quiet := time.Now()
		_, err = replies.ReadString('\n')
		idle := time.Since(quiet)
		if err != io.EOF {
			t.Fatalf("read after the silence: %v, want io.EOF (the server hung up)", err)
		}
		// Never early; at most 2 × Resolution late (default Resolution:
		// the timeout / 16).
		if late := 2 * idleAfter / 16; idle < idleAfter || idle > idleAfter+late {
			t.Errorf("hung up after %v of silence, want within [%v, %v]", idle, idleAfter, idleAfter+late)
		}
		synctest.Wait() // the server's goroutine has finished with the connection
		if got := srv.idled.Load(); got != 1 {
			t.Errorf("connections ended by the idle timeout: got %d, want 1", got)
		}
		if got := srv.l.Stats().ReapedIdle; got != 1 {
			t.Errorf("Stats().ReapedIdle = %d, want 1", got)
		}
	})
}

// pipeListener is a net.Listener of in-memory connections: dial returns
// the client end of a net.Pipe whose server end Accept returns.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) dial() (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
