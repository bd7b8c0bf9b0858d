package idletimeout

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// errNilConn is the error of Wrap and Listener.Wrap for a nil connection.
var errNilConn = errors.New("idletimeout: Wrap of a nil net.Conn")

// Listener is a net.Listener whose accepted connections are *Conn values
// reaped when idle. All its connections share one timing wheel, run by one
// goroutine that the Listener owns from NewListener to Close; a Listener
// with no open connection has no timer armed and sleeps.
//
// A Listener is safe for concurrent use.
type Listener struct {
	inner net.Listener
	cfg   *settings
	tr    *tracker
	once  sync.Once
	err   error
}

var _ net.Listener = (*Listener)(nil)

// NewListener wraps l. It returns an error wrapping ErrInvalidConfig when
// cfg is invalid (see Config). A Config with every timeout zero gives a
// Listener that counts connections but never reaps them and starts no
// goroutine.
func NewListener(l net.Listener, cfg Config) (*Listener, error) {
	s, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	tr := newTracker(s.res, ringSize(s))
	if s.enabled() {
		if err := tr.start(); err != nil {
			return nil, err
		}
	}
	return &Listener{inner: l, cfg: s, tr: tr}, nil
}

// Accept waits for the next connection and returns it as a *Conn, tracked
// from now. Errors of the wrapped listener are returned as they are; after
// Close they wrap net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.AcceptConn()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AcceptConn is Accept returning the *Conn type.
func (l *Listener) AcceptConn() (*Conn, error) {
	nc, err := l.inner.Accept()
	if err != nil {
		return nil, err
	}
	c, err := l.tr.track(nc, l.cfg)
	if err != nil {
		// The Listener closed meanwhile: the connection was never handed
		// out, so it counts as neither accepted nor closed.
		nc.Close()
		return nil, &net.OpError{Op: "accept", Net: l.inner.Addr().Network(), Addr: l.inner.Addr(), Err: net.ErrClosed}
	}
	l.tr.stats.accepted.Add(1)
	return c, nil
}

// Wrap tracks c with the Listener's Config and wheel, as if it had been
// accepted: for instance the upstream side of a proxied connection. It
// fails with an error wrapping net.ErrClosed after Close (whatever the
// Config), and with an error for a nil c.
func (l *Listener) Wrap(c net.Conn) (*Conn, error) {
	if c == nil {
		return nil, errNilConn
	}
	tc, err := l.tr.track(c, l.cfg)
	if err != nil {
		return nil, &net.OpError{Op: "wrap", Net: l.inner.Addr().Network(), Addr: l.inner.Addr(), Err: net.ErrClosed}
	}
	l.tr.stats.wrapped.Add(1)
	return tc, nil
}

// Close closes the wrapped listener, which unblocks Accept, stops the
// wheel and waits for its goroutine and for OnIdle calls in progress to
// return, so it must not be called from OnIdle. Connections already
// accepted stay open but are no longer reaped (as with net/http, closing a
// listener does not close its connections). It returns the wrapped
// listener's Close error; calling it again does nothing and returns nil.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		err = l.inner.Close()
		l.tr.stop()
	})
	return err
}

// Addr returns the wrapped listener's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// Stats counts what a Listener has done. Counters only grow, except Open.
type Stats struct {
	Accepted uint64 // connections returned by Accept
	Wrapped  uint64 // connections tracked by Listener.Wrap
	Open     int64  // tracked connections: neither closed nor released
	Closed   uint64 // tracked connections closed, by Close or by a reap

	// Reaped connections, by the timeout that expired or the limit broken;
	// included in Closed.
	ReapedIdle, ReapedRead, ReapedWrite uint64
	ReapedFirstByte                     uint64 // reaped by FirstByteTimeout
	ReapedReadRate, ReapedWriteRate     uint64 // reaped below MinReadRate, MinWriteRate
	ReapedMaxAge                        uint64 // closed by MaxAge (at a quiet moment or after MaxAgeGrace)
	ReapedHandshake                     uint64 // reaped by HandshakeTimeout

	Released uint64 // connections released from tracking (e.g. hijacked)
	Events   uint64 // expired timeouts found: OnIdle calls and reaps, also those called off by later activity
	Kept     uint64 // events for which OnIdle returned Keep
	Panics   uint64 // OnIdle calls that panicked or called runtime.Goexit
}

// Stats returns the Listener's counters. Each is read atomically, the set
// is not a snapshot. O(1).
func (l *Listener) Stats() Stats {
	s := &l.tr.stats
	return Stats{
		Accepted:    s.accepted.Load(),
		Wrapped:     s.wrapped.Load(),
		Open:        s.open.Load(),
		Closed:      s.closed.Load(),
		ReapedIdle:  s.reaped[ReasonIdle].Load(),
		ReapedRead:  s.reaped[ReasonRead].Load(),
		ReapedWrite: s.reaped[ReasonWrite].Load(),

		ReapedFirstByte: s.reaped[ReasonFirstByte].Load(),
		ReapedReadRate:  s.reaped[ReasonReadRate].Load(),
		ReapedWriteRate: s.reaped[ReasonWriteRate].Load(),
		ReapedMaxAge:    s.reaped[ReasonMaxAge].Load(),
		ReapedHandshake: s.reaped[ReasonHandshake].Load(),
		Released:        s.released.Load(),
		Events:          s.events.Load(),
		Kept:            s.kept.Load(),
		Panics:          s.panics.Load(),
	}
}

// ConnState is ConnState as a method, to read
// `srv.ConnState = l.ConnState`.
func (l *Listener) ConnState(c net.Conn, s http.ConnState) { ConnState(c, s) }

// ConnState is a net/http Server.ConnState hook: it pauses tracking while
// a request is active, so a slow handler is not reaped, resumes it (with
// fresh timeouts) when the connection goes idle, and releases hijacked
// connections. Connections that are not a *Conn, directly or under a
// tls.Conn or other wrapper with a NetConn method, are ignored. Install it
// as
//
//	srv := &http.Server{Handler: h, ConnState: idletimeout.ConnState}
//	srv.Serve(l)
//
// A request is active, and its connection paused, for its whole life: from
// its first byte until its response is done. A client that sends a body
// slowly, or stops reading the response, is therefore never reaped for
// idleness; the minimum rates (MinReadRate, MinWriteRate) judge those,
// or http.Server's ReadTimeout and WriteTimeout. Between requests, an
// HTTP/1 connection's next bytes are a request head, owed in full: its
// silence counts against MinReadRate.
//
// HTTP/2: net/http reports a connection active while any stream is open
// and idle when none is, so it is paused while a stream is open, however
// quiet. Between streams a client sends frames that are no request (PING,
// WINDOW_UPDATE, SETTINGS), so no head is owed: its read transfers are
// measured to their last byte, and a quiet connection is left to the idle
// timeouts. ConnState recognises HTTP/2 by what the client sent: "h2"
// negotiated in the TLS handshake (nc or a wrapper with a
// ConnectionState method), or, unencrypted, HTTP/2's preface as the
// connection's first bytes.
func ConnState(nc net.Conn, s http.ConnState) {
	c, ok := FromNetConn(nc)
	if !ok {
		return
	}
	switch s {
	case http.StateNew:
		c.awaitsHead.Store(true)
	case http.StateActive:
		c.Pause()
	case http.StateIdle:
		// HTTP/2 owes no request head between streams. Judged by what
		// the client sent, not by what the server wrote: net/http's
		// HTTP/2 server flushes its SETTINGS from another goroutine, at
		// any moment around its first ConnState calls.
		if c.counts && c.awaitsHead.Load() && c.h2(nc) {
			c.awaitsHead.Store(false)
		}
		c.Resume()
	case http.StateHijacked:
		c.Release()
	}
}

// FromNetConn finds the *Conn in nc: nc itself, or the connection under
// it through NetConn methods (tls.Conn has one), at most 8 levels deep.
func FromNetConn(nc net.Conn) (*Conn, bool) {
	for range 8 {
		switch v := nc.(type) {
		case *Conn:
			return v, true
		case interface{ NetConn() net.Conn }:
			nc = v.NetConn()
		default:
			return nil, false
		}
	}
	return nil, false
}

// Wrap tracks a connection that no Listener accepted, typically one a
// client dialed. It returns an error wrapping ErrInvalidConfig when cfg is
// invalid, and an error for a nil c.
//
// Connections wrapped with the same Resolution (and timeouts of similar
// length) share one timing wheel, run by one goroutine that exists while
// at least one of them is tracked and exits when the last one is closed or
// released; cfg's other fields stay per connection. With every timeout
// zero, c is wrapped but never reaped and no goroutine is involved.
func Wrap(c net.Conn, cfg Config) (*Conn, error) {
	if c == nil {
		return nil, errNilConn
	}
	s, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if !s.enabled() {
		return disabled.track(c, s)
	}
	tr, err := acquireShared(s)
	if err != nil {
		return nil, err
	}
	return tr.track(c, s) // a failure releases the reference
}

// disabled is the tracker of connections wrapped with no timeout.
var disabled = newTracker(0, 0)

// sharedKey identifies the trackers that Wrap shares.
type sharedKey struct {
	res  time.Duration
	ring int64
}

var (
	sharedMu sync.Mutex
	shared   = map[sharedKey]*tracker{} // guarded by sharedMu, as are refs
)

// acquireShared returns the shared tracker for s with one more reference,
// starting it if needed. A tracker in the map is never stopped.
func acquireShared(s *settings) (*tracker, error) {
	key := sharedKey{res: s.res, ring: ringSize(s)}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	tr := shared[key]
	if tr == nil {
		tr = newTracker(key.res, key.ring)
		if err := tr.start(); err != nil {
			return nil, err
		}
		tr.key = &key
		shared[key] = tr
	}
	tr.refs++
	return tr, nil
}

// releaseShared drops a reference to the shared tracker t, stopping it when
// it was the last. It may run on an event goroutine of t, so it does not
// wait for them.
func releaseShared(t *tracker) {
	sharedMu.Lock()
	t.refs--
	last := t.refs == 0
	if last {
		delete(shared, *t.key)
	}
	sharedMu.Unlock()
	if last {
		t.sched.Stop()
	}
}
