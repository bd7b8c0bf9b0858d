package idletimeout

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

// pipeListener is an in-memory net.Listener of net.Pipe connections, so
// servers run inside a testing/synctest bubble.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "pipe", Err: net.ErrClosed}
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// Dial returns the client end of a new pipe whose server end Accept returns.
func (l *pipeListener) Dial() (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: net.ErrClosed}
	}
}

func (l *pipeListener) DialContext(context.Context, string, string) (net.Conn, error) {
	return l.Dial()
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// newPipeServer returns an idle Listener over a pipeListener.
func newPipeServer(t *testing.T, cfg Config) (*Listener, *pipeListener) {
	t.Helper()
	pl := newPipeListener()
	l, err := NewListener(pl, cfg)
	if err != nil {
		t.Fatalf("NewListener: %v", err)
	}
	return l, pl
}

// pair dials l and accepts: the tracked server *Conn and the client end.
func pair(t *testing.T, l *Listener, pl *pipeListener) (*Conn, net.Conn) {
	t.Helper()
	type res struct {
		c   *Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := l.AcceptConn()
		ch <- res{c, err}
	}()
	client, err := pl.Dial()
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatalf("Accept: %v", r.err)
	}
	return r.c, client
}

// waitReaped blocks in Read on c until it fails and returns the error and
// how long after start it failed.
func waitReaped(c net.Conn, start time.Time) (error, time.Duration) {
	var b [1]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			return err, time.Since(start)
		}
	}
}

// drain reads and discards from c until it fails, in the background.
func drain(c net.Conn) {
	go func() {
		var b [512]byte
		for {
			if _, err := c.Read(b[:]); err != nil {
				return
			}
		}
	}()
}

// nopConn is a net.Conn whose Read and Write succeed at once.
type nopConn struct{ net.Conn }

func (nopConn) Read(b []byte) (int, error)       { return len(b), nil }
func (nopConn) Write(b []byte) (int, error)      { return len(b), nil }
func (nopConn) Close() error                     { return nil }
func (nopConn) SetReadDeadline(time.Time) error  { return nil }
func (nopConn) SetWriteDeadline(time.Time) error { return nil }
func (nopConn) RemoteAddr() net.Addr             { return pipeAddr{} }
