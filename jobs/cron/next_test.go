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

// Fixed zones name the exact instants the DST tables expect.
var (
	est  = time.FixedZone("EST", -5*3600)
	edt  = time.FixedZone("EDT", -4*3600)
	gmt  = time.FixedZone("GMT", 0)
	bst  = time.FixedZone("BST", 3600)
	lhst = time.FixedZone("+1030", 10*3600+1800)
	lhdt = time.FixedZone("+11", 11*3600)
	ist  = time.FixedZone("IST", 5*3600+1800)
)

func at(loc *time.Location, mo time.Month, d, h, mi, s int) time.Time {
	return time.Date(2026, mo, d, h, mi, s, 0, loc)
}

type dstCase struct {
	name        string
	spec        string
	after, want time.Time
}

// checkDST runs cases in zone: each spec's Next of after must be want, the
// same instant, in after's location.
func checkDST(t *testing.T, zone string, cases []dstCase) {
	loc := mustLoad(t, zone)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseInLocation(c.spec, loc)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Next(c.after)
			if !got.Equal(c.want) {
				t.Fatalf("%q: Next(%v) = %v, want %v", c.spec, c.after, got.In(loc), c.want)
			}
			if got.Location() != c.after.Location() {
				t.Fatalf("%q: Next(%v) is in %v, want after's location", c.spec, c.after, got.Location())
			}
		})
	}
}

// New York, 2026: clocks go from 02:00 EST to 03:00 EDT on 8 March and
// from 02:00 EDT back to 01:00 EST on 1 November.
func TestDSTNewYork(t *testing.T) {
	checkDST(t, "America/New_York", []dstCase{
		{"spring/fixed time in the gap is skipped", "30 2 * * *", at(est, 3, 8, 0, 0, 0), at(edt, 3, 9, 2, 30, 0)},
		{"spring/fixed time before the gap", "30 1 * * *", at(est, 3, 8, 0, 0, 0), at(est, 3, 8, 1, 30, 0)},
		{"spring/fixed time at the end of the gap", "0 3 * * *", at(est, 3, 8, 1, 59, 0), at(edt, 3, 8, 3, 0, 0)},
		{"spring/hourly jumps the gap", "0 * * * *", at(est, 3, 8, 1, 0, 0), at(edt, 3, 8, 3, 0, 0)},
		{"spring/every 15 minutes jumps the gap", "*/15 * * * *", at(est, 3, 8, 1, 45, 0), at(edt, 3, 8, 3, 0, 0)},
		{"spring/every second jumps the gap", "* * * * * *", at(est, 3, 8, 1, 59, 59), at(edt, 3, 8, 3, 0, 0)},
		{"spring/midnight of the transition day", "@daily", at(est, 3, 7, 23, 0, 0), at(est, 3, 8, 0, 0, 0)},
		{"fall/fixed repeated time runs at its first occurrence", "30 1 * * *", at(edt, 11, 1, 0, 0, 0), at(edt, 11, 1, 1, 30, 0)},
		{"fall/fixed repeated time does not run on the second pass", "30 1 * * *", at(edt, 11, 1, 1, 30, 0), at(est, 11, 2, 1, 30, 0)},
		{"fall/after inside the second pass", "30 1 * * *", at(est, 11, 1, 1, 10, 0), at(est, 11, 2, 1, 30, 0)},
		{"fall/one second before the repeat", "30 1 * * *", at(est, 11, 1, 1, 29, 59), at(est, 11, 2, 1, 30, 0)},
		{"fall/fixed seconds in the repeated hour", "59 59 1 * * *", at(edt, 11, 1, 1, 59, 59), at(est, 11, 2, 1, 59, 59)},
		{"fall/fixed time after the repeated hour", "0 2 * * *", at(edt, 11, 1, 1, 30, 0), at(est, 11, 1, 2, 0, 0)},
		{"fall/wildcard hour runs on both passes", "30 * * * *", at(edt, 11, 1, 1, 30, 0), at(est, 11, 1, 1, 30, 0)},
		{"fall/every 15 minutes goes back with the clock", "*/15 * * * *", at(edt, 11, 1, 1, 45, 0), at(est, 11, 1, 1, 0, 0)},
		{"fall/stepped minutes in a fixed hour run on both passes", "*/15 1 * * *", at(edt, 11, 1, 1, 45, 0), at(est, 11, 1, 1, 0, 0)},
		{"fall/hourly runs at both 01:00", "@hourly", at(edt, 11, 1, 1, 0, 0), at(est, 11, 1, 1, 0, 0)},
		{"fall/hourly after the second 01:00", "@hourly", at(est, 11, 1, 1, 0, 0), at(est, 11, 1, 2, 0, 0)},
		{"fall/every second goes back with the clock", "* * * * * *", at(edt, 11, 1, 1, 59, 59), at(est, 11, 1, 1, 0, 0)},
	})
}

// London, 2026: clocks go from 01:00 GMT to 02:00 BST on 29 March and from
// 02:00 BST back to 01:00 GMT on 25 October.
func TestDSTLondon(t *testing.T) {
	checkDST(t, "Europe/London", []dstCase{
		{"spring/fixed time in the gap is skipped", "30 1 * * *", at(gmt, 3, 29, 0, 0, 0), at(bst, 3, 30, 1, 30, 0)},
		{"spring/fixed time at the end of the gap", "0 2 * * *", at(gmt, 3, 29, 0, 0, 0), at(bst, 3, 29, 2, 0, 0)},
		{"spring/every 30 minutes jumps the gap", "*/30 * * * *", at(gmt, 3, 29, 0, 30, 0), at(bst, 3, 29, 2, 0, 0)},
		{"spring/midnight is unaffected", "0 0 * * *", at(gmt, 3, 28, 12, 0, 0), at(gmt, 3, 29, 0, 0, 0)},
		{"fall/fixed repeated time runs at its first occurrence", "30 1 * * *", at(bst, 10, 25, 0, 0, 0), at(bst, 10, 25, 1, 30, 0)},
		{"fall/fixed repeated time does not run on the second pass", "30 1 * * *", at(bst, 10, 25, 1, 30, 0), at(gmt, 10, 26, 1, 30, 0)},
		{"fall/wildcard hour runs on both passes", "30 * * * *", at(bst, 10, 25, 1, 30, 0), at(gmt, 10, 25, 1, 30, 0)},
		{"fall/fixed time after the repeated hour", "0 2 * * *", at(bst, 10, 25, 1, 59, 0), at(gmt, 10, 25, 2, 0, 0)},
	})
}

// Lord Howe, 2026: a 30-minute shift. Clocks go from 02:00 +11 back to
// 01:30 +10:30 on 5 April and from 02:00 +10:30 to 02:30 +11 on 4 October.
func TestDSTLordHowe(t *testing.T) {
	checkDST(t, "Australia/Lord_Howe", []dstCase{
		{"fall/fixed repeated time runs at its first occurrence", "45 1 * * *", at(lhdt, 4, 5, 0, 0, 0), at(lhdt, 4, 5, 1, 45, 0)},
		{"fall/fixed repeated time does not run on the second pass", "45 1 * * *", at(lhdt, 4, 5, 1, 45, 0), at(lhst, 4, 6, 1, 45, 0)},
		{"fall/fixed time before the repeated half hour runs once", "15 1 * * *", at(lhdt, 4, 5, 1, 15, 0), at(lhst, 4, 6, 1, 15, 0)},
		{"fall/every 15 minutes goes back with the clock", "*/15 * * * *", at(lhdt, 4, 5, 1, 45, 0), at(lhst, 4, 5, 1, 30, 0)},
		{"fall/wildcard hour runs on both passes", "45 * * * *", at(lhdt, 4, 5, 1, 45, 0), at(lhst, 4, 5, 1, 45, 0)},
		{"fall/hourly is not repeated", "0 * * * *", at(lhdt, 4, 5, 1, 0, 0), at(lhst, 4, 5, 2, 0, 0)},
		{"spring/fixed time in the gap is skipped", "15 2 * * *", at(lhst, 10, 4, 0, 0, 0), at(lhdt, 10, 5, 2, 15, 0)},
		{"spring/fixed time at the gap's start is skipped", "0 2 * * *", at(lhst, 10, 4, 0, 0, 0), at(lhdt, 10, 5, 2, 0, 0)},
		{"spring/fixed time after the gap", "45 2 * * *", at(lhst, 10, 4, 0, 0, 0), at(lhdt, 10, 4, 2, 45, 0)},
		{"spring/every 15 minutes jumps the gap", "*/15 * * * *", at(lhst, 10, 4, 1, 45, 0), at(lhdt, 10, 4, 2, 30, 0)},
	})
}

// Kolkata has no DST: the days on which New York's clocks change are
// ordinary days there.
func TestDSTKolkata(t *testing.T) {
	checkDST(t, "Asia/Kolkata", []dstCase{
		{"march/fixed time", "30 2 * * *", at(ist, 3, 8, 0, 0, 0), at(ist, 3, 8, 2, 30, 0)},
		{"march/every 15 minutes", "*/15 * * * *", at(ist, 3, 8, 1, 45, 0), at(ist, 3, 8, 2, 0, 0)},
		{"november/fixed time runs once a day", "30 1 * * *", at(ist, 11, 1, 1, 30, 0), at(ist, 11, 2, 1, 30, 0)},
		{"november/hourly", "@hourly", at(ist, 11, 1, 1, 0, 0), at(ist, 11, 1, 2, 0, 0)},
		{"from UTC", "0 9 * * MON-FRI", time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), at(ist, 11, 2, 9, 0, 0)},
	})
}

func TestNextAllocatesNothing(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	cases := []struct {
		name, spec string
		after      time.Time
	}{
		{"every minute, UTC", "* * * * *", time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)},
		{"weekdays at 09:00, zoned", "CRON_TZ=Europe/Berlin 0 9 * * MON-FRI", time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)},
		{"fixed time over the fall-back hour", "30 1 * * *", time.Date(2026, 11, 1, 1, 30, 0, 0, ny)},
		{"leap day", "0 0 29 2 *", time.Date(2026, 5, 5, 10, 0, 0, 0, ny)},
		{"every", "@every 1h", time.Date(2026, 5, 5, 10, 0, 0, 0, ny)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mustParse(t, c.spec)
			if n := testing.AllocsPerRun(100, func() { s.Next(c.after) }); n != 0 {
				t.Fatalf("Next allocates %v times per call, want 0", n)
			}
		})
	}
}

// TestNextEdgeTimes covers times far from today and sub-second afters.
func TestNextEdgeTimes(t *testing.T) {
	cases := []struct {
		name, spec  string
		after, want time.Time
	}{
		{"zero time", "0 0 1 1 *", time.Time{}, time.Date(2, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"before the common era", "0 0 29 2 *", time.Date(-5, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(-4, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"year 9999 to 10000", "@yearly", time.Date(9999, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"leap day across 2100", "0 0 29 2 *", time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2104, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"one nanosecond before", "* * * * * *", time.Date(2026, 1, 1, 0, 0, 0, -1, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"exactly on a match is not after", "* * * * * *", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)},
		{"past the search bound", "* * * * *", time.Unix(maxUnix, 0), time.Time{}},
		{"far past the search bound", "* * * * *", time.Unix(1<<62, 0), time.Time{}},
		{"every past the search bound", "@every 1h", time.Unix(maxUnix, 0), time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mustParse(t, c.spec).Next(c.after)
			if !got.Equal(c.want) || got.IsZero() != c.want.IsZero() {
				t.Fatalf("Next(%v) = %v, want %v", c.after, got, c.want)
			}
		})
	}
	var zero Schedule
	if got := zero.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); !got.IsZero() {
		t.Fatalf("zero Schedule: Next = %v, want the zero Time", got)
	}
}

// TestNextMonthWithoutMidnight: on 1 March 1981 Lord Howe's clocks went
// from 00:00 (+10) to 00:30 (+10:30), so that month's 1st had no midnight.
// A search passing through it must keep the spec's time of day; robfig/cron
// v3 answers these at 00:41 and 01:22 (documented in doc.go).
func TestNextMonthWithoutMidnight(t *testing.T) {
	lh := mustLoad(t, "Australia/Lord_Howe")
	cases := []struct {
		name, spec  string
		after, want time.Time
	}{
		{"July from March", "2/13 * 19-31 7 *", time.Date(1981, 3, 5, 20, 37, 9, 0, lh), time.Date(1981, 7, 19, 0, 2, 0, 0, lh)},
		{"November from January", "22 * 30 11 */3,5", time.Date(1981, 1, 30, 3, 58, 27, 0, lh), time.Date(1981, 11, 1, 0, 22, 0, 0, lh)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseInLocation(c.spec, lh)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Next(c.after); !got.Equal(c.want) {
				t.Fatalf("%q: Next(%v) = %v, want %v", c.spec, c.after, got, c.want)
			}
		})
	}
}
