//go:build unix

package bench

import "syscall"

// raiseNoFile raises this process's open-file limit (RLIMIT_NOFILE) to at
// least n if it is lower, the hard limit too if needed and allowed (that
// takes CAP_SYS_RESOURCE), and returns the soft limit in effect afterwards,
// or -1 if it cannot be read. Go already raises the soft limit to the hard
// one at startup; 10,000 loopback connections with both ends in one process
// need more than 20,000 descriptors, above many hard limits.
func raiseNoFile(n int) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return -1
	}
	if want := uint64(n); lim.Cur < want {
		next := syscall.Rlimit{Cur: want, Max: max(lim.Max, want)}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next) == nil {
			return n
		}
		if lim.Max > lim.Cur {
			next = syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
			if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next) == nil {
				return int(min(lim.Max, 1<<30))
			}
		}
	}
	return int(min(lim.Cur, 1<<30))
}
