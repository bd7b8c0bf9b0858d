package timingwheel

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestSmokeFiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		got := make(chan time.Duration, 10)
		tw, err := New(10*time.Millisecond, 8, func(k string, v int) { got <- time.Since(start) })
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Stop()
		tw.SetTimer("a", 1, 25*time.Millisecond)
		tw.SetTimer("b", 2, 1*time.Second)
		tw.SetTimer("c", 3, 3*time.Millisecond)
		if n := tw.Len(); n != 3 {
			t.Fatalf("Len = %d, want 3", n)
		}
		for _, want := range []time.Duration{10 * time.Millisecond, 30 * time.Millisecond, 1000 * time.Millisecond} {
			if d := <-got; d != want {
				t.Fatalf("fired at %v, want %v", d, want)
			}
		}
	})
}
