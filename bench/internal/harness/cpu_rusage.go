//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package harness

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time consumed so far by the whole process, user
// plus system, summed over all threads. ok is false if the platform cannot
// report it, in which case d is zero. The resolution is one microsecond or
// coarser (the kernel's accounting), so callers should measure regions that
// run for milliseconds at least.
func ProcessCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return timeval(ru.Utime) + timeval(ru.Stime), true
}

func timeval(tv syscall.Timeval) time.Duration {
	return time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond
}
