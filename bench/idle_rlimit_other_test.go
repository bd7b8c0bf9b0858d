//go:build !unix

package bench

// raiseNoFile returns -1 (unknown) where there is no RLIMIT_NOFILE; dialing
// fails if the platform runs out of handles.
func raiseNoFile(n int) int { return -1 }
