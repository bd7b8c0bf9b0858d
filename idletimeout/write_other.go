//go:build !unix

package idletimeout

// writeProgress: elsewhere a large Write goes down whole and refreshes the
// stamp when it returns.
func (c *Conn) writeProgress([]byte) (int, bool, error) { return 0, false, nil }

// writeReportsProgress says whether writeProgress is implemented, for tests.
const writeReportsProgress = false
