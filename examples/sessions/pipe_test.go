package main

import (
	"context"
	"net"
	"sync"
)

// pipeListener is an in-memory net.Listener: DialContext makes a net.Pipe
// and hands its server side to Accept. Inside a synctest bubble, where a
// real socket would keep the fake clock from advancing, an http.Server can
// serve on it and an http.Transport can dial it.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept returns the server side of the next dialed pipe, or net.ErrClosed
// after Close.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close makes Accept and DialContext fail; it may be called more than once.
func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr returns a placeholder address, usable as the host of a URL.
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// DialContext connects to l whatever the address, waiting for Accept.
func (l *pipeListener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "sessions.test" }
