package cron

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/internal/crongen"
)

var fuzzZones = []string{"UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata"}

// FuzzParse checks that Parse never panics, that its errors are
// *SyntaxErrors pointing into the spec, that what it accepts parses again
// from String to the same schedule, and that Next returns a later instant
// whose wall clock matches the spec and is not a repeat of a fixed time.
func FuzzParse(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 64 {
		f.Add(crongen.Spec(r, crongen.Options{Seconds: i%2 == 0}), int64(1_700_000_000+i*7_777_777), uint8(i))
	}
	for _, s := range []string{"", "@every 90s", "CRON_TZ=Asia/Kolkata 0 9 * * MON-FRI", "0 0 30 2 *",
		"0 0 29 2 *", "* * * * 1#2", "5/7 */3 1-31/2 FEB-nov 7", "TZ=America/New_York 30 1 * * *"} {
		f.Add(s, int64(1_793_500_000), uint8(1))
	}
	locs := make([]*time.Location, len(fuzzZones))
	for i, z := range fuzzZones {
		locs[i] = mustLoad(f, z)
	}
	f.Fuzz(func(t *testing.T, spec string, unix int64, zone uint8) {
		s, err := Parse(spec)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): %v (%T) is not a *SyntaxError wrapping ErrSyntax", spec, err, err)
			}
			if se.Pos < 0 || se.Pos > len(spec) || se.Spec != spec {
				t.Fatalf("Parse(%q): %+v points outside the spec", spec, *se)
			}
			return
		}
		again, err := Parse(s.String())
		if err != nil || !sameSchedule(s, again) {
			t.Fatalf("Parse(%q) accepted, but Parse(String()) = %v, %v", spec, again, err)
		}
		// Years about 1200 BC to AD 5100, with a nanosecond part.
		after := time.Unix(unix%100_000_000_000, unix&0x3fffffff).In(locs[int(zone)%len(locs)])
		next := s.Next(after)
		if !next.After(after) {
			t.Fatalf("%q: Next(%v) = %v, not after it", spec, after, next)
		}
		if s.every > 0 {
			return
		}
		loc := s.loc
		if loc == nil {
			loc = after.Location()
		}
		wall := next.In(loc)
		if !modelMatches(s, wall) || wall.Nanosecond() != 0 {
			t.Fatalf("%q: Next(%v) = %v does not match the spec", spec, after, wall)
		}
		if s.fixed && modelRepeated(wall) {
			t.Fatalf("%q: Next(%v) = %v repeats a fixed wall time", spec, after, wall)
		}
	})
}
