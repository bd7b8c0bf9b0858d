package jobs

import (
	"testing"
	"unsafe"
)

// TestJobSize pins the size that the package doc and doc/design/jobs.md quote
// for a pending job on 64-bit platforms: 144 bytes, a size class of its
// own, no padding.
func TestJobSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the size quoted is for 64-bit platforms")
	}
	if got, want := unsafe.Sizeof(job{}), uintptr(144); got != want {
		t.Errorf("unsafe.Sizeof(job{}) = %d, want %d", got, want)
	}
}
