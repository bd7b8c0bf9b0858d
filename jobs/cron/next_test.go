package cron

import (
	"testing"
	"time"
)

func mustLoad(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestNextPastLastTransitionInLeapYear pins the work-around for
// golang/go#81583: on 31 December of a leap year past the zone's last
// listed transition, ZoneBounds reports a period end before the instant,
// and Next looped on it forever.
func TestNextPastLastTransitionInLeapYear(t *testing.T) {
	london := mustLoad(t, "Europe/London")
	s, err := Parse("0 0 12 * * *")
	if err != nil {
		t.Fatal(err)
	}
	after := time.Date(2076, 12, 30, 19, 12, 13, 0, london)
	want := time.Date(2076, 12, 31, 12, 0, 0, 0, london)
	if got := s.Next(after); !got.Equal(want) {
		t.Fatalf("Next(%v) = %v, want %v", after, got, want)
	}
	after = want
	want = time.Date(2077, 1, 1, 12, 0, 0, 0, london)
	if got := s.Next(after); !got.Equal(want) {
		t.Fatalf("Next(%v) = %v, want %v", after, got, want)
	}
}
