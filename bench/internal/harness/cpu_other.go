//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package harness

import "time"

// ProcessCPU reports ok == false: this platform has no getrusage.
func ProcessCPU() (d time.Duration, ok bool) { return 0, false }
