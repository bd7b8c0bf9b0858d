//go:build !amd64

package table

import "unsafe"

// prefetch does nothing where the package has no prefetch instruction.
func prefetch(unsafe.Pointer) {}
