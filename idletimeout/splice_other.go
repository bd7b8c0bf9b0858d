//go:build !linux

package idletimeout

import (
	"io"
	"net"
	"syscall"
)

// spliceOK: splicing is Linux-only; elsewhere copies go through Read and
// Write.
func spliceOK(net.Conn, io.Reader) (*net.TCPConn, *net.TCPConn, *Conn) { return nil, nil, nil }

func spliceCopy(dst, src *net.TCPConn, limit int64, progress func()) (int64, bool, error) {
	return 0, true, nil
}

// sendfileOK: the zero-copy path through sendfileFrom is Linux-only;
// elsewhere ReadFrom hands a file to the wrapped connection's ReadFrom in
// 64 KiB chunks.
func sendfileOK(net.Conn, io.Reader) (syscall.Conn, syscall.Conn) { return nil, nil }

func (c *Conn) sendfileFrom(dst, src syscall.Conn, limit int64) (int64, bool, error) {
	return 0, false, nil
}
