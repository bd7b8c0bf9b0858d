//go:build unix

package idletimeout

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// writeProgress writes b to a TCP or Unix socket with its own write system
// calls, refreshing the write stamp each time the kernel accepts bytes. It
// runs under the socket's write lock, held by RawConn.Write as by net's
// Write, so concurrent Writes still never interleave, and the write
// deadline applies. It reports false, having written nothing, for other
// connections; errors are shaped as net's Write shapes them.
func (c *Conn) writeProgress(b []byte) (n int, handled bool, err error) {
	var sc syscall.Conn
	switch in := c.inner.(type) {
	case *net.TCPConn:
		sc = in
	case *net.UnixConn:
		sc = in
	default:
		return 0, false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, e := syscall.Write(int(fd), b[n:min(len(b), n+maxWrite)])
			if m > 0 {
				n += m
				c.wrote(m)
			}
			switch {
			case e == syscall.EINTR:
			case e == syscall.EAGAIN:
				return false // wait until writable, honouring the deadline
			case e != nil:
				werr = os.NewSyscallError("write", e)
				return true
			case m == 0:
				werr = io.ErrUnexpectedEOF
				return true
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		// net's raw connection names the operation "raw-write"; a Write's
		// error says "write", as the wrapped connection's would.
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		err = &net.OpError{Op: "write", Net: c.inner.LocalAddr().Network(), Source: c.inner.LocalAddr(), Addr: c.inner.RemoteAddr(), Err: err}
	}
	return n, true, err
}

// maxWrite caps one write system call, as the runtime does for streams.
const maxWrite = 1 << 30

// writeReportsProgress says whether writeProgress is implemented, for tests.
const writeReportsProgress = true
