//go:build linux && !386

package idletimeout

import (
	"net"
	"syscall"
	"unsafe"
)

// tcpProgress returns, for a TCP connection, the bytes its peer has
// acknowledged (tcpi_bytes_acked) and whether bytes wait to be sent or
// acknowledged; false for other connections or kernels before 4.6.
func tcpProgress(c net.Conn) (acked uint64, queued bool, ok bool) {
	tc, isTCP := c.(*net.TCPConn)
	if !isTCP {
		return 0, false, false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0, false, false
	}
	// struct tcp_info: tcpi_unacked (u32) at 24, tcpi_bytes_acked (u64)
	// at 120, tcpi_notsent_bytes (u32) at 144.
	var info [19]uint64 // 152 bytes, 8-aligned
	size := uint32(unsafe.Sizeof(info))
	var e syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, e = syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
	}); err != nil || e != 0 || size < 148 {
		return 0, false, false
	}
	at := func(off uintptr) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(&info[0]), off) }
	unacked := *(*uint32)(at(24))
	acked = *(*uint64)(at(120))
	notsent := *(*uint32)(at(144))
	return acked, unacked > 0 || notsent > 0, true
}
