//go:build unix

package natsjobs

import (
	"syscall"
	"time"
)

// processCPU returns the user plus system CPU time this process has used
// (every goroutine, the embedded server's included); ok is false where the
// platform cannot tell.
func processCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	tv := func(t syscall.Timeval) time.Duration {
		return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
	}
	return tv(ru.Utime) + tv(ru.Stime), true
}
