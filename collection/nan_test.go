package collection

import (
	"math"
	"testing"
	"time"
)

// TestTimingWheelRejectsNaNKey: go-zero accepts a NaN key (or a struct
// holding one) in SetTimer; its index can never find the key again, so
// MoveTimer and RemoveTimer miss it and every SetTimer arms one more timer.
// Ours returns ErrArgument for SetTimer, MoveTimer and RemoveTimer alike
// and arms nothing (doc/compat.md).
func TestTimingWheelRejectsNaNKey(t *testing.T) {
	tw, err := NewTimingWheel(time.Second, 4, func(k, v any) {})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Stop()
	type withNaN struct{ f float64 }
	for _, key := range []any{math.NaN(), float32(math.NaN()), withNaN{math.NaN()}, [1]any{math.NaN()}} {
		if err := tw.SetTimer(key, 1, time.Second); err != ErrArgument {
			t.Errorf("SetTimer(%v): got %v, want ErrArgument", key, err)
		}
		if err := tw.MoveTimer(key, time.Second); err != ErrArgument {
			t.Errorf("MoveTimer(%v): got %v, want ErrArgument", key, err)
		}
		if err := tw.RemoveTimer(key); err != ErrArgument {
			t.Errorf("RemoveTimer(%v): got %v, want ErrArgument", key, err)
		}
	}
	if n := tw.Len(); n != 0 {
		t.Errorf("Len() = %d after NaN keys, want 0", n)
	}
}
