//go:build linux

package idletimeout

import (
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// splices counts the splices spliceCopy has made, for tests.
var splices atomic.Int64

// spliceOK reports whether a copy from src (after unwrapping a *Conn) into
// dst can run as a series of splices sized to what has arrived: both ends
// are TCP sockets, the case where net.TCPConn.ReadFrom splices.
func spliceOK(dst net.Conn, src io.Reader) (*net.TCPConn, *net.TCPConn, *Conn) {
	d, ok := dst.(*net.TCPConn)
	if !ok {
		return nil, nil, nil
	}
	switch s := src.(type) {
	case *net.TCPConn:
		return d, s, nil
	case *Conn:
		if in, ok := s.inner.(*net.TCPConn); ok {
			return d, in, s
		}
	}
	return nil, nil, nil
}

// spliceCopy moves up to limit bytes (all, when limit < 0) from src to dst
// by splices of the bytes already queued on src (at most transferChunk
// each, so a slow destination also shows progress), calling progress after
// each, so a slow or interactive stream shows activity as it flows
// instead of when a large chunk completes. It stops, with rest true, when
// src is readable with nothing queued (end of stream or an error pending)
// or a splice came up short: the caller finishes with plain reads, which
// report that end properly.
func spliceCopy(dst, src *net.TCPConn, limit int64, progress func(n int)) (written int64, rest bool, err error) {
	rc, err := src.SyscallConn()
	if err != nil {
		return 0, true, nil
	}
	for limit != 0 {
		avail, err := queued(rc)
		if err != nil {
			return written, false, err
		}
		if avail == 0 {
			return written, true, nil
		}
		n := min(int64(avail), transferChunk)
		if limit > 0 {
			n = min(n, limit)
		}
		m, err := dst.ReadFrom(&io.LimitedReader{R: src, N: n})
		splices.Add(1)
		written += m
		if limit > 0 {
			limit -= m
		}
		if m > 0 {
			progress(int(m))
		}
		if err != nil {
			return written, false, err
		}
		if m < n {
			return written, true, nil
		}
	}
	return written, false, nil
}

// queued waits until the socket behind rc is readable (honouring its read
// deadline) and returns how many bytes it holds. 0 means it became readable
// with nothing queued: end of stream or a pending error.
func queued(rc syscall.RawConn) (int, error) {
	var (
		n     int32
		ioErr error
	)
	var peek [1]byte
	err := rc.Read(func(fd uintptr) bool {
		_, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
		if e != 0 {
			ioErr = e
			return true
		}
		if n > 0 {
			return true
		}
		// Nothing queued: either no data yet (wait for the poller) or the
		// end of the stream, whose readiness may already have been
		// signalled while earlier data was being spliced. A non-blocking
		// peek tells them apart.
		m, _, err := syscall.Recvfrom(int(fd), peek[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN:
			return false
		case err != nil:
			ioErr = err
			return true
		default:
			return m == 0 // end of stream; m > 0: data raced in, look again
		}
	})
	if err == nil {
		err = ioErr
	}
	return int(n), err
}

// sendQueued returns the bytes queued to the peer in the kernel's send
// queue of a TCP or Unix socket (not yet acknowledged, for TCP), and false
// for other connections.
func sendQueued(c net.Conn) (int, bool) {
	var sc syscall.Conn
	switch v := c.(type) {
	case *net.TCPConn:
		sc = v
	case *net.UnixConn:
		sc = v
	default:
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var n int32
	var e syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, e = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n)))
	}); err != nil || e != 0 {
		return 0, false
	}
	return int(n), true
}
