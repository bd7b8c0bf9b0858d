//go:build linux

package idletimeout

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// sendfileFrom copies up to limit bytes (all, when limit < 0) of the
// regular file src into the socket dst by sendfile system calls it makes
// itself under dst's write lock, stamping c's write side after every call
// that moved a byte. The runtime's own sendfile loops on the socket's
// readiness inside one call and returns only when its whole chunk is sent,
// so a reader slower than a chunk per timeout looked idle while bytes
// flowed (issue 20). Each call here moves what the socket's send buffer
// takes, so the stamp follows the reader whatever its pace.
//
// It reports handled false, having moved nothing, when the kernel refuses
// sendfile for this pair; the caller then copies another way.
func (c *Conn) sendfileFrom(dst, src syscall.Conn, limit int64) (written int64, handled bool, err error) {
	drc, err := dst.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	frc, err := src.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	handled = true
	var werr, serr error
	err = frc.Read(func(sfd uintptr) bool { // the file's fd, held for the copy
		werr = drc.Write(func(dfd uintptr) bool {
			for limit != 0 {
				n := maxWrite
				if limit > 0 {
					n = int(min(limit, maxWrite))
				}
				m, e := syscall.Sendfile(int(dfd), int(sfd), nil, n) // nil: from the file's offset, which advances
				if debugSendfile != nil {
					debugSendfile(m, e)
				}
				if m > 0 {
					written += int64(m)
					if limit > 0 {
						limit -= int64(m)
					}
					c.stamp(&c.wstamp)
				}
				switch {
				case e == syscall.EINTR:
				case e == syscall.EAGAIN:
					return false // wait until writable, honouring the deadline
				case e == syscall.ENOSYS || e == syscall.EINVAL || e == syscall.EOPNOTSUPP:
					handled = written > 0
					if handled {
						serr = os.NewSyscallError("sendfile", e)
					}
					return true
				case e != nil:
					serr = os.NewSyscallError("sendfile", e)
					return true
				case m == 0:
					return true // end of the file
				}
			}
			return true
		})
		return true
	})
	if err == nil {
		err = werr
	}
	if err == nil {
		err = serr
	}
	if err != nil {
		// The raw connection names the operation "raw-write"; ReadFrom's
		// error says "readfrom", as net's would.
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		err = &net.OpError{Op: "readfrom", Net: c.inner.LocalAddr().Network(), Source: c.inner.LocalAddr(), Addr: c.inner.RemoteAddr(), Err: err}
	}
	return written, handled, err
}

// sendfileOK returns the socket behind dst and the file behind src when
// sendfileFrom can copy src into dst: dst is a TCP or Unix socket, src a
// regular file.
func sendfileOK(dst net.Conn, src io.Reader) (syscall.Conn, syscall.Conn) {
	switch dst.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return nil, nil
	}
	if !isRegularFile(src) {
		return nil, nil
	}
	return dst.(syscall.Conn), src.(syscall.Conn)
}

var debugSendfile func(int, error)
