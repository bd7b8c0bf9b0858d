package bubble

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestInside(t *testing.T) {
	if Inside() {
		t.Error("Inside() = true outside a bubble, want false")
	}
	synctest.Test(t, func(t *testing.T) {
		if !Inside() {
			t.Error("Inside() = false in a bubble, want true")
		}
		time.Sleep(400 * 24 * time.Hour) // past 2001 on the bubble's clock
		if !Inside() {
			t.Error("Inside() = false in a bubble after a year, want true")
		}
		done := make(chan bool)
		go func() { done <- Inside() }()
		if !<-done {
			t.Error("Inside() = false on a goroutine started in a bubble, want true")
		}
	})
}

// TestInsideOnA1970Clock: a device that boots without a real-time clock
// reads 1970 on its wall clock, at package initialization and later. The
// check used to compare the wall clock with the bubble's epoch (2000) and
// took such a device for a bubble, skipping the cleanup of dropped caches
// and wheels.
func TestInsideOnA1970Clock(t *testing.T) {
	back := time.Since(time.Unix(0, 0)) - time.Hour
	bootStart := start.Add(-back) // wall clock in 1970, both moved alike
	now := time.Now().Add(-back)
	if now.Year() != 1970 {
		t.Fatalf("test setup: year %d, want 1970", now.Year())
	}
	if insideAt(now, bootStart) {
		t.Errorf("insideAt(%v) = true outside a bubble, want false", now)
	}
	if !insideAt(now.Round(0), bootStart) {
		t.Errorf("insideAt(no monotonic reading) = false, want true")
	}
}

func BenchmarkInside(b *testing.B) {
	for b.Loop() {
		Inside()
	}
}
