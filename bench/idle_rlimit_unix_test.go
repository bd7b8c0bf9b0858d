//go:build unix

package bench

import (
	"fmt"
	"syscall"
)

// ensureNoFile raises this process's open-file limit (RLIMIT_NOFILE) to at
// least n, the hard limit too if needed (which takes CAP_SYS_RESOURCE). Go
// already raises the soft limit to the hard one at startup; 10,000 loopback
// connections with both ends in one process need 20,000 descriptors and
// more, which is above many hard limits.
func ensureNoFile(n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	want := uint64(n)
	if lim.Cur >= want {
		return nil
	}
	next := lim
	next.Cur = want
	next.Max = max(lim.Max, want)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next); err != nil {
		return fmt.Errorf("need %d open files, RLIMIT_NOFILE is %d (hard %d), raising it: %w (use -idle.conns to run fewer)",
			n, lim.Cur, lim.Max, err)
	}
	return nil
}
