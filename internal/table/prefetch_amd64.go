package table

import "unsafe"

// prefetch asks the processor to start loading the cache line at p. It
// neither waits for the line nor faults; fences do not order it, so the
// load goes on while the caller does other work (such as reading the clock,
// whose vDSO code fences).
//
//go:noescape
func prefetch(p unsafe.Pointer)
