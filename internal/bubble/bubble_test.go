package bubble

import (
	"testing"
	"testing/synctest"
)

func TestInside(t *testing.T) {
	if Inside() {
		t.Error("Inside() = true outside a bubble, want false")
	}
	synctest.Test(t, func(t *testing.T) {
		if !Inside() {
			t.Error("Inside() = false in a bubble, want true")
		}
	})
}
