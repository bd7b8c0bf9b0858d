package idletimeout

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// ErrIdle is wrapped by the errors that Read, Write and the other I/O
// methods of a Conn return once the Conn was closed for idleness. Those
// errors are *IdleError values, whose Timeout method reports true.
var ErrIdle = errors.New("idletimeout: connection closed after idle timeout")

// IdleError is the error of an I/O call on a Conn that was closed for
// idleness. It wraps both ErrIdle and the wrapped connection's error, and
// implements net.Error with Timeout true.
type IdleError struct {
	Op     string // "read", "write", ...
	Reason Reason // the timeout that expired
	Err    error  // what the wrapped connection returned
}

// Error names the operation and the timeout that expired.
func (e *IdleError) Error() string {
	return fmt.Sprintf("idletimeout: %s: connection closed after %s timeout", e.Op, e.Reason)
}

// Unwrap returns ErrIdle and Err (when not nil), so errors.Is and
// errors.As see both.
func (e *IdleError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrIdle}
	}
	return []error{ErrIdle, e.Err}
}

// Timeout reports true: the connection was closed because a timeout expired.
func (e *IdleError) Timeout() bool { return true }

// Temporary reports true, as for other timeout errors.
func (e *IdleError) Temporary() bool { return true }

var _ net.Error = (*IdleError)(nil)

// Conn states. Pause is a state, not a flag beside it, so that a reap
// (tracked to closed) and a Pause (tracked to paused) cannot both win.
const (
	stateTracked  uint32 = iota + 1 // reaped when idle
	statePaused                     // tracked, never reaped: Pause
	stateClosed                     // Close was called, or reaped
	stateReleased                   // Release was called (e.g. hijacked)
)

// transferChunk is the most bytes ReadFrom and WriteTo move per call of the
// wrapped connection's zero-copy path (sendfile, splice), with the stamps
// refreshed after each, and the size above which a Write on a socket
// reports its progress (see Write). A peer that takes at least this much
// per timeout is therefore never idle.
const transferChunk = 64 << 10

// Conn is a net.Conn whose idleness is tracked. It comes from a Listener's
// Accept or Wrap, or from the package-level Wrap.
//
// Read and Write that move at least one byte refresh the connection at the
// cost of an atomic load and compare (no lock, channel or clock read). The
// other methods pass straight through to the wrapped connection:
// SetDeadline, SetReadDeadline and SetWriteDeadline are never used for idle
// tracking and keep their usual meaning. Conn implements io.ReaderFrom, so
// that copying a file to a TCP connection keeps sendfile (refreshing the
// stamp every 64 KiB), and io.WriterTo; CloseRead and CloseWrite reach the
// wrapped connection's methods and return an error wrapping
// errors.ErrUnsupported when it has none. SyscallConn gives a raw
// connection that keeps the stamps fresh and hides the file descriptor
// from the runtime's zero-copy paths, so no copy bypasses idle tracking.
//
// A Conn is safe for concurrent use like any net.Conn.
type Conn struct {
	inner net.Conn
	tr    *tracker
	cfg   *settings

	rstamp, wstamp atomic.Int64 // activity clock values of the last Read / Write
	state          atomic.Uint32
	reaped         atomic.Uint32 // Reason the Conn was closed for, or 0

	// Bytes read and written, when counts, with transferBit set while no
	// byte moved that way since the last transfer boundary; the first
	// byte after one stores the activity clock in rfrom or wfrom.
	rbytes, wbytes atomic.Uint64
	rfrom, wfrom   atomic.Int64
	// Bytes read (without transferBit) when the write transfer's first
	// byte was recorded: a byte read after it shows as a larger count,
	// which orders a read and a write stamped in the same tick.
	wfromRead atomic.Uint64
	// Bytes written (without transferBit) when the read transfer's first
	// byte was recorded: a Write after it shows as a larger count.
	rfromWrote   atomic.Uint64
	counts       bool         // cfg.counts, here to spare the hot path a load
	awaitsHead   atomic.Bool  // set by ConnState: tracked, it awaits a request head
	preface      atomic.Int32 // bytes of h2Preface read first, or more than its length on a mismatch
	handshakeDue atomic.Int64 // NewTLSListener: when HandshakeTimeout ends; 0 once done

	timer timingwheel.Timer[*Conn]

	born, ageDue int64 // activity clock at the wrap, and when MaxAge ends c; set by track

	// Owner goroutine only (and track, before the first Schedule).
	rd, wr side
	base   [numReasons]int64 // activity bound each reason's count refers to
	fired  [numReasons]int   // events reported since base changed
	rs     *rateState        // when a rate is set
}

// read and wrote record n > 0 bytes moved: the stamp, and the count when a
// limit needs it (one atomic add; the first byte of a transfer also
// records its time).
func (c *Conn) read(n int) {
	c.stamp(&c.rstamp)
	if c.counts && c.rbytes.Add(uint64(n))&transferBit != 0 {
		c.began(&c.rbytes, &c.rfrom)
	}
}

func (c *Conn) wrote(n int) {
	c.stamp(&c.wstamp)
	if c.counts && c.wbytes.Add(uint64(n))&transferBit != 0 {
		c.began(&c.wbytes, &c.wfrom)
	}
}

// h2Preface is what an HTTP/2 client sends first on a connection without
// TLS (RFC 9113, section 3.4).
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// matchPreface compares b, read at offset off of the connection, with
// h2Preface: preface counts the bytes that matched, and jumps past the
// preface's length at the first that did not. Only a connection's first
// len(h2Preface) bytes are looked at, once each.
func (c *Conn) matchPreface(b []byte, off uint64) {
	want := h2Preface[off:]
	b = b[:min(len(b), len(want))]
	if string(b) == want[:len(b)] {
		c.preface.Add(int32(len(b)))
	} else {
		c.preface.Add(1 << 16)
	}
}

// h2 reports whether c carries HTTP/2: nc, the connection net/http named
// in its ConnState call, negotiated "h2" in its TLS handshake, or c's
// first bytes were HTTP/2's preface (unencrypted, prior knowledge).
func (c *Conn) h2(nc net.Conn) bool {
	if c.preface.Load() == int32(len(h2Preface)) {
		return true
	}
	t, ok := nc.(interface{ ConnectionState() tls.ConnectionState })
	return ok && t.ConnectionState().NegotiatedProtocol == "h2"
}

var (
	_ net.Conn      = (*Conn)(nil)
	_ io.ReaderFrom = (*Conn)(nil)
	_ io.WriterTo   = (*Conn)(nil)
	_ syscall.Conn  = (*Conn)(nil)
)

// stamp raises p to the activity clock if the clock moved on. Lock-free;
// the stamp never goes backwards, even under concurrent calls.
func (c *Conn) stamp(p *atomic.Int64) {
	if now := c.tr.now.Load(); now > p.Load() {
		raise(p, now)
	}
}

// raise stores v in p unless p already holds v or more.
func raise(p *atomic.Int64, v int64) {
	for {
		old := p.Load()
		if old >= v || p.CompareAndSwap(old, v) {
			return
		}
	}
}

// Read reads from the wrapped connection; when it returns n > 0 the
// connection counts as read from now. After the Conn was closed for
// idleness it returns an *IdleError.
func (c *Conn) Read(b []byte) (int, error) {
	n, err := c.inner.Read(b)
	if n > 0 {
		// c.read(n), spelled out: the helper is over the inlining budget.
		c.stamp(&c.rstamp)
		if c.counts {
			v := c.rbytes.Add(uint64(n))
			if v&transferBit != 0 {
				c.began(&c.rbytes, &c.rfrom)
			}
			if v&^transferBit-uint64(n) < uint64(len(h2Preface)) {
				c.matchPreface(b[:n], v&^transferBit-uint64(n))
			}
		}
	}
	if err != nil {
		err = c.mapErr("read", err)
	}
	return n, err
}

// Write writes to the wrapped connection; when it returns n > 0 the
// connection counts as written to now. A Write of more than 64 KiB on a
// TCP or Unix socket (on Unix systems) also counts each time the kernel
// accepts a part of it, so a peer reading slowly but steadily keeps a long
// Write alive, while one that stops reading does not (the Write then
// fails with an *IdleError once the connection is reaped). On other
// connections a Write counts when it returns. After the Conn was closed
// for idleness it returns an *IdleError.
func (c *Conn) Write(b []byte) (int, error) {
	if len(b) > transferChunk {
		if n, ok, err := c.writeProgress(b); ok {
			return n, c.mapErr("write", err)
		}
	}
	n, err := c.inner.Write(b)
	if n > 0 {
		// c.wrote(n), spelled out: the helper is over the inlining budget.
		c.stamp(&c.wstamp)
		if c.counts && c.wbytes.Add(uint64(n))&transferBit != 0 {
			c.began(&c.wbytes, &c.wfrom)
		}
	}
	if err != nil {
		err = c.mapErr("write", err)
	}
	return n, err
}

// mapErr turns any error after an idle close into an *IdleError; a nil
// error stays nil (the call completed before the close).
func (c *Conn) mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if r := c.reaped.Load(); r != 0 {
		return &IdleError{Op: op, Reason: Reason(r), Err: err}
	}
	return err
}

// Close stops tracking c, removing its timer at once, and closes the
// wrapped connection, returning its error. Calling Close again calls the
// wrapped connection's Close again.
func (c *Conn) Close() error {
	if c.leaveTo(stateClosed) {
		c.left(stateClosed, 0)
	}
	return c.inner.Close()
}

// reap closes c for the limit the owner found broken in v. A rate or a
// hard MaxAge closes c, paused or not, whatever its activity; a first-byte
// timeout is called off by a byte read, a MaxAge end by a Pause. For an
// idle timeout, c is closed unless it changed
// since: activity that restarts v's timeout stamped (a Read for
// ReasonRead, a Write for ReasonWrite, either for ReasonIdle), or a Touch,
// Pause, Resume, Close or Release came. Then c stays open, and its timer,
// still armed, looks again from the new state. It reports whether it
// closed c. Activity in the other direction calls nothing off: a
// connection read from steadily is still reaped for WriteTimeout.
//
// The stamps are compared before the state's compare-and-swap, which also
// fails if c was paused or left tracking meanwhile; only activity in the
// few instructions from that comparison to the close escapes it, as it
// would escape any reaper that closes at some instant.
func (c *Conn) reap(v verdict) bool {
	switch v.Reason {
	case ReasonIdle, ReasonRead, ReasonWrite:
		readMoved := c.rstamp.Load() != v.rstamp && v.Reason != ReasonWrite
		wroteMoved := c.wstamp.Load() != v.wstamp && v.Reason != ReasonRead
		if readMoved || wroteMoved {
			return false
		}
	case ReasonFirstByte:
		if c.rbytes.Load()&^transferBit != 0 {
			return false
		}
	}
	if !c.state.CompareAndSwap(stateTracked, stateClosed) && !(v.hard && c.state.CompareAndSwap(statePaused, stateClosed)) {
		return false
	}
	c.reaped.Store(uint32(v.Reason)) // before the close that fails pending I/O
	c.left(stateClosed, v.Reason)
	if v.Reason == ReasonWriteRate {
		// The peer holds the bytes queued to it, which a plain close
		// would keep sending at its pace: reset instead, so the kernel
		// drops them and the peer learns at once.
		if sl, ok := c.inner.(interface{ SetLinger(int) error }); ok {
			sl.SetLinger(0)
		}
	}
	c.inner.Close()
	return true
}

// leaveTo moves c from tracked or paused to state to and reports whether
// it did; the caller then calls left.
func (c *Conn) leaveTo(to uint32) bool {
	for {
		s := c.state.Load()
		if s != stateTracked && s != statePaused {
			return false
		}
		if c.state.CompareAndSwap(s, to) {
			return true
		}
	}
}

// left does the bookkeeping of c leaving tracking for state to, once, after
// the state change: counters, the timer's cancellation, the tracker's
// count of tracked connections.
func (c *Conn) left(to uint32, reason Reason) {
	st := &c.tr.stats
	st.open.Add(-1)
	if to == stateReleased {
		st.released.Add(1)
	} else {
		st.closed.Add(1)
		if reason != 0 {
			st.reaped[reason].Add(1)
		}
	}
	if c.tr.sched != nil {
		c.tr.sched.Cancel(&c.timer) // ErrClosed after Listener.Close: nothing to cancel
	}
	c.tr.untrack()
}

// Release stops tracking c for good: it will never be reaped, and I/O on it
// no longer costs anything beyond the wrapped connection's. c stays usable
// and Close still closes it. The net/http hook ConnState calls it for
// hijacked connections. Calling it again, or after Close, does nothing. A
// reap that was decided before Release but comes after it does nothing
// either.
func (c *Conn) Release() {
	if c.leaveTo(stateReleased) {
		c.left(stateReleased, 0)
	}
}

// Touch counts c as active now, as a Read and a Write would. It reads the
// clock once.
func (c *Conn) Touch() {
	now := c.tr.since()
	raise(&c.rstamp, now)
	raise(&c.wstamp, now)
}

// Pause suspends idle tracking: c is not reaped however long it stays
// idle, for instance while a request on it is being handled, and a reap
// decided before Pause but not yet done is called off. Pause and Resume do
// not nest; Pause on a paused Conn, or one no longer tracked (closed or
// released), does nothing.
func (c *Conn) Pause() {
	if c.state.CompareAndSwap(stateTracked, statePaused) {
		c.boundary(false)
	}
}

// Resume ends a Pause, counting c as active now (see Touch), so every
// timeout starts afresh; a Conn past its MaxAge is closed instead (the end
// of its request was the quiet moment it waited for), on the wheel's next
// tick, unless it is paused again by then. Resume on a Conn that is not
// paused only touches it (and closes it past MaxAge).
func (c *Conn) Resume() {
	now := c.tr.since()
	raise(&c.rstamp, now)
	raise(&c.wstamp, now)
	if c.state.CompareAndSwap(statePaused, stateTracked) {
		c.boundary(true)
	}
	c.closeAged(now)
}

// Paused reports whether c is paused.
func (c *Conn) Paused() bool { return c.state.Load() == statePaused }

// LastRead returns when a Read last moved a byte (or c was wrapped,
// touched or resumed, if later). It is never later than the truth and at
// most one Resolution (plus scheduling delay) earlier. Without an enabled
// timeout the activity clock does not run and LastRead stays at the wrap.
func (c *Conn) LastRead() time.Time { return c.tr.origin.Add(time.Duration(c.rstamp.Load())) }

// LastWrite is LastRead for Writes.
func (c *Conn) LastWrite() time.Time { return c.tr.origin.Add(time.Duration(c.wstamp.Load())) }

// NetConn returns the wrapped connection. Reading from or writing to it
// directly bypasses idle tracking.
func (c *Conn) NetConn() net.Conn { return c.inner }

// LocalAddr returns the wrapped connection's local address.
func (c *Conn) LocalAddr() net.Addr { return c.inner.LocalAddr() }

// RemoteAddr returns the wrapped connection's remote address.
func (c *Conn) RemoteAddr() net.Addr { return c.inner.RemoteAddr() }

// SetDeadline calls the wrapped connection's SetDeadline.
func (c *Conn) SetDeadline(t time.Time) error { return c.inner.SetDeadline(t) }

// SetReadDeadline calls the wrapped connection's SetReadDeadline.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.inner.SetReadDeadline(t) }

// SetWriteDeadline calls the wrapped connection's SetWriteDeadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.inner.SetWriteDeadline(t) }

// CloseRead calls the wrapped connection's CloseRead (TCP and Unix
// connections have one), or returns an error wrapping
// errors.ErrUnsupported.
func (c *Conn) CloseRead() error {
	if cr, ok := c.inner.(interface{ CloseRead() error }); ok {
		return cr.CloseRead()
	}
	return c.unsupported("CloseRead")
}

// CloseWrite calls the wrapped connection's CloseWrite (TCP, Unix and TLS
// connections have one), or returns an error wrapping
// errors.ErrUnsupported.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.inner.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.unsupported("CloseWrite")
}

// SyscallConn returns a raw connection over the wrapped connection's, or an
// error wrapping errors.ErrUnsupported when it is not a syscall.Conn.
// Control passes straight through. Read and Write count as activity in
// their direction each time their callback runs, since the callback's
// system calls are out of sight. The raw connection does not give the
// runtime the wrapped socket's file descriptor, so os.File's sendfile and
// splice (io.Copy between a file and c, either way) cannot move bytes past
// idle tracking: they go through ReadFrom and Read instead, and a file
// copied to c still goes out by sendfile.
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.inner.(syscall.Conn)
	if !ok {
		return nil, c.unsupported("SyscallConn")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	return rawConn{rc, c}, nil
}

// rawConn is a syscall.RawConn that stamps its Conn. Lacking the PollFD
// method of net's raw connections, it is opaque to os.File's zero-copy
// paths, which look for that method.
type rawConn struct {
	inner syscall.RawConn
	c     *Conn
}

func (r rawConn) Control(f func(fd uintptr)) error { return r.inner.Control(f) }

func (r rawConn) Read(f func(fd uintptr) (done bool)) error {
	return r.inner.Read(func(fd uintptr) bool {
		done := f(fd)
		r.c.stamp(&r.c.rstamp)
		return done
	})
}

func (r rawConn) Write(f func(fd uintptr) (done bool)) error {
	return r.inner.Write(func(fd uintptr) bool {
		done := f(fd)
		r.c.stamp(&r.c.wstamp)
		return done
	})
}

func (c *Conn) unsupported(method string) error {
	return fmt.Errorf("idletimeout: %T has no %s: %w", c.inner, method, errors.ErrUnsupported)
}

// ReadFrom copies r to c until EOF or an error, refreshing c's write
// stamp as data moves, and keeps the kernel's zero-copy paths where the
// wrapped connection has them:
//
//   - When r is a regular *os.File (or an *io.LimitedReader of one, or
//     what os.File.WriteTo passes on), the copy keeps sendfile. On Linux,
//     into a TCP or Unix socket, ReadFrom makes the sendfile system calls
//     itself, under the socket's write lock and honouring its write
//     deadline, and refreshes the stamp after each one that moved a byte,
//     so the stamp follows the kernel taking bytes, whatever the reader's
//     pace. Elsewhere, when the wrapped connection is an io.ReaderFrom,
//     the copy goes through it 64 KiB per call, stamping after each.
//   - On Linux, when r is a TCP connection (bare, or a *Conn over one,
//     whose read stamp is then refreshed too) and so is c's, the copy is a
//     series of splices, each sized to the bytes already queued on r. A
//     single large splice would return only once its whole chunk arrived,
//     so a slow or interactive stream would look idle; sized splices
//     report activity as it flows.
//   - Anything else is copied through c.Write.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	rf, ok := c.inner.(io.ReaderFrom)
	outer, _ := r.(*io.LimitedReader)
	src := r
	if outer != nil {
		src = outer.R
	}
	if dst, s, tracked := spliceOK(c.inner, src); dst != nil {
		return c.spliceFrom(dst, s, tracked, r, outer)
	}
	if dst, f := sendfileOK(c.inner, src); dst != nil {
		limit := int64(-1)
		if outer != nil {
			limit = max(outer.N, 0)
		}
		n, handled, err := c.sendfileFrom(dst, f, limit)
		if outer != nil {
			outer.N -= n
		}
		if handled {
			return n, c.mapErr("write", err)
		}
	}
	if !ok || !isRegularFile(src) {
		return io.Copy(writerOnly{c}, r)
	}
	var total int64
	for {
		n := int64(transferChunk)
		if outer != nil {
			n = min(n, outer.N)
		}
		if n <= 0 {
			return total, nil
		}
		m, err := rf.ReadFrom(&io.LimitedReader{R: src, N: n})
		total += m
		if outer != nil {
			outer.N -= m
		}
		if m > 0 {
			c.wrote(int(m))
		}
		if err != nil {
			return total, c.mapErr("write", err)
		}
		if m < n {
			return total, nil // src reached EOF
		}
	}
}

// isRegularFile reports whether r is a regular file that net's sendfile
// takes: an *os.File, or the *os.File without WriteTo that os.File.WriteTo
// hands to io.Copy (both have Stat and SyscallConn).
func isRegularFile(r io.Reader) bool {
	f, ok := r.(interface {
		Stat() (fs.FileInfo, error)
		syscall.Conn
	})
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}

// WriteTo copies from c to w until EOF or an error, refreshing c's read
// stamp (and w's write stamp, if w is a *Conn) as data arrives. On Linux,
// when c wraps a TCP connection and w is one (bare, or a *Conn over one),
// the copy is a series of splices sized to what has arrived, as in
// ReadFrom; otherwise it goes through c.Read, and w's ReadFrom if it has
// one.
func (c *Conn) WriteTo(w io.Writer) (int64, error) {
	var wc net.Conn
	switch d := w.(type) {
	case *Conn:
		return d.ReadFrom(c)
	case *net.TCPConn:
		wc = d
	}
	if wc != nil {
		if dst, s, _ := spliceOK(wc, c); dst != nil {
			n, rest, err := spliceCopy(dst, s, -1, c.read)
			if err != nil || !rest {
				return n, c.mapErr("read", err)
			}
			m, err := io.Copy(w, readerOnly{c})
			return n + m, err
		}
	}
	return io.Copy(w, readerOnly{c})
}

// spliceFrom is ReadFrom's splice path: from s (the socket behind r, which
// is tracked if r is a *Conn) into dst, the socket behind c.
func (c *Conn) spliceFrom(dst, s *net.TCPConn, tracked *Conn, r io.Reader, outer *io.LimitedReader) (int64, error) {
	limit := int64(-1)
	if outer != nil {
		limit = outer.N
	}
	n, rest, err := spliceCopy(dst, s, limit, func(m int) {
		c.wrote(m)
		if tracked != nil {
			tracked.read(m)
		}
	})
	if outer != nil {
		outer.N -= n
	}
	if err != nil {
		if tracked != nil && tracked.reaped.Load() != 0 {
			return n, tracked.mapErr("read", err)
		}
		return n, c.mapErr("write", err)
	}
	if !rest {
		return n, nil
	}
	m, err := io.Copy(writerOnly{c}, r) // the end of r, or its error
	return n + m, err
}

// writerOnly and readerOnly hide ReadFrom and WriteTo from io.Copy.
type writerOnly struct{ io.Writer }
type readerOnly struct{ io.Reader }

func addrString(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}
