package cron

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/internal/crongen"
)

// sameSchedule reports whether a and b fire at the same times: every
// field but the spec text, with locations compared by name.
func sameSchedule(a, b *Schedule) bool {
	if (a.loc == nil) != (b.loc == nil) || a.loc != nil && a.loc.String() != b.loc.String() {
		return false
	}
	x, y := *a, *b
	x.spec, y.spec, x.loc, y.loc = "", "", nil, nil
	return x == y
}

func mustParse(t testing.TB, spec string) *Schedule {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	return s
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, spec string
		field      string
		pos        int
		msg        string // part of the message
	}{
		{"empty", "", "spec", 0, "empty"},
		{"blank", "   ", "spec", 0, "empty"},
		{"too few fields", "* * * *", "spec", 7, "found 4"},
		{"year field", "0 0 0 1 1 * 2030", "year", 12, "year"},
		{"too many fields", "0 0 0 1 1 * 2030 x", "spec", 17, "too many"},
		{"second out of range", "60 * * * * *", "second", 0, "out of range 0-59"},
		{"minute out of range", "60 * * * *", "minute", 0, "out of range 0-59"},
		{"hour out of range", "0 24 * * *", "hour", 2, "out of range 0-23"},
		{"day of month zero", "0 0 0 * *", "day of month", 4, "out of range 1-31"},
		{"day of month 32", "0 0 32 * *", "day of month", 4, "out of range 1-31"},
		{"month 13", "0 0 1 13 *", "month", 6, "out of range 1-12"},
		{"weekday 8", "0 0 * * 8", "day of week", 8, "out of range 0-7"},
		{"range end out of range", "0 0 * * 1-8", "day of week", 10, "out of range 0-7"},
		{"backward range", "0 5-1 * * *", "hour", 2, "runs backwards"},
		{"backward names", "0 0 * * FRI-MON", "day of week", 8, "runs backwards"},
		{"step zero", "*/0 * * * *", "minute", 2, "step 0"},
		{"step too big", "*/60 * * * *", "minute", 2, "out of range 1-59"},
		{"weekday step 7", "0 0 * * */7", "day of week", 10, "out of range 1-6"},
		{"step not a number", "*/x * * * *", "minute", 2, "not a number"},
		{"two slashes", "*/2/3 * * * *", "minute", 3, "more than one /"},
		{"empty step", "*/ * * * *", "minute", 2, "not a number"},
		{"empty list item", "1,,2 * * * *", "minute", 2, "empty list item"},
		{"trailing comma", "1, * * * *", "minute", 2, "empty list item"},
		{"leading comma", "0 ,1 * * *", "hour", 2, "empty list item"},
		{"missing range end", "1- * * * *", "minute", 2, "missing value"},
		{"missing range start", "-1 * * * *", "minute", 0, "missing value"},
		{"negative", "0 0 * * -1", "day of week", 8, "missing value"},
		{"star in a range", "*-5 * * * *", "minute", 0, "cannot be part of a range"},
		{"name in a numeric field", "0 MON * * *", "hour", 2, "not a number"},
		{"unknown month name", "0 0 1 JANUARY *", "month", 6, "neither a number nor a name"},
		{"weekday name in month field", "0 0 1 MON *", "month", 6, "neither a number nor a name"},
		{"L in day of month", "0 0 L * *", "day of month", 4, "L (last day)"},
		{"L after a weekday", "0 0 * * 5L", "day of week", 8, "L (last day)"},
		{"W", "0 0 15W * *", "day of month", 4, "W (nearest weekday)"},
		{"LW", "0 0 LW * *", "day of month", 4, "W (nearest weekday)"},
		{"hash", "0 0 * * MON#2", "day of week", 11, "# (nth weekday"},
		{"unknown descriptor", "@reboot", "descriptor", 0, "unknown descriptor"},
		{"text after descriptor", "@daily now", "descriptor", 7, "unexpected text"},
		{"every without duration", "@every", "duration", 0, "one duration"},
		{"every with two durations", "@every 1h 2h", "duration", 0, "one duration"},
		{"every not a duration", "@every soon", "duration", 7, "not a Go duration"},
		{"every zero", "@every 0s", "duration", 7, "at least 1s"},
		{"every negative", "@every -5m", "duration", 7, "at least 1s"},
		{"every below a second", "@every 500ms", "duration", 7, "at least 1s"},
		{"every fraction of a second", "@every 1500ms", "duration", 7, "whole number of seconds"},
		{"unknown zone", "CRON_TZ=Mars/Olympus * * * * *", "location", 8, "unknown zone"},
		{"empty zone", "TZ= * * * * *", "location", 3, "empty zone"},
		{"zone only", "CRON_TZ=UTC", "spec", 11, "nothing after the zone"},
		{"never fires: 30 February", "0 0 30 2 *", "day of month", 4, "never fires"},
		{"never fires: 31st of short months", "0 0 31 APR,JUN,SEP,NOV ?", "day of month", 4, "never fires"},
		{"never fires with seconds", "0 0 0 30-31 feb *", "day of month", 6, "has day 30"},
		{"never fires, zoned", "TZ=UTC 0 0 31 4 *", "day of month", 11, "never fires"},
		{"non-ASCII blank", "0\u00a00 * * * *", "minute", 0, "not a number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse(c.spec)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want an error", c.spec, s)
			}
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): %v does not wrap ErrSyntax", c.spec, err)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): %T is not a *SyntaxError", c.spec, err)
			}
			if se.Spec != c.spec || se.Field != c.field || se.Pos != c.pos || !strings.Contains(se.Msg, c.msg) {
				t.Fatalf("Parse(%q) = %+v, want field %q, pos %d, message with %q", c.spec, *se, c.field, c.pos, c.msg)
			}
			if !strings.HasPrefix(err.Error(), "cron: "+c.field+" at offset ") {
				t.Fatalf("Parse(%q): error %q lacks its prefix", c.spec, err)
			}
		})
	}
}

// TestParseEquivalent checks spellings that must parse to the same
// schedule.
func TestParseEquivalent(t *testing.T) {
	cases := []struct{ name, a, b string }{
		{"month names", "0 0 1 jan,FEB,Mar *", "0 0 1 1,2,3 *"},
		{"weekday names", "0 0 * * sun,MON,tUe,wed,THU,fri,SAT", "0 0 * * 0,1,2,3,4,5,6"},
		{"name ranges", "0 0 * JUN-AUG MON-FRI", "0 0 * 6-8 1-5"},
		{"7 is Sunday", "0 0 * * 7", "0 0 * * 0"},
		{"range to 7", "0 0 * * 5-7", "0 0 * * 0,5,6"},
		{"question mark", "? ? ? ? ?", "* * * * *"},
		{"step 1 is star", "*/1 * * * *", "* * * * *"},
		{"open step runs to the end", "5/15 * * * *", "5-59/15 * * * *"},
		{"open weekday step ends on Saturday", "0 0 * * 3/2", "0 0 * * 3,5"},
		{"open step from 7", "0 0 * * 7/2", "0 0 * * 0"},
		{"star step", "0 */6 * * *", "0 0-23/6 * * *"},
		{"range step", "0 1-10/3 * * *", "0 1-11/3 * * *"},
		{"list of values", "0 0,6,12,18 * * *", "0 18,12,6,0,6 * * *"},
		{"five fields are six with second 0", "*/5 * * * *", "0 */5 * * * *"},
		{"leading zeros", "05 007 01 01 00", "5 7 1 1 0"},
		{"blanks", "  0\t0  * *   *  ", "0 0 * * *"},
		{"@yearly", "@yearly", "0 0 1 1 *"},
		{"@annually", "@annually", "0 0 1 1 *"},
		{"@monthly", "@monthly", "0 0 1 * *"},
		{"@weekly", "@weekly", "0 0 * * 0"},
		{"@daily", "@daily", "0 0 * * *"},
		{"@midnight", "@midnight", "0 0 * * *"},
		{"@hourly", "@hourly", "0 * * * *"},
		{"descriptors ignore case", "@Daily", "@daily"},
		{"TZ and CRON_TZ", "TZ=Asia/Kolkata 0 9 * * *", "CRON_TZ=Asia/Kolkata 0 9 * * *"},
		{"every", "@every 1h30m", "@EVERY 5400s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := mustParse(t, c.a), mustParse(t, c.b)
			if !sameSchedule(a, b) {
				t.Fatalf("%q = %+v, want the same as %q = %+v", c.a, *a, c.b, *b)
			}
			if a.String() != c.a {
				t.Fatalf("String() = %q, want %q", a.String(), c.a)
			}
		})
	}
}

// TestDayFieldsRule pins robfig/cron's rule: when either day field is * or
// ? (a step of 1 included), a day must match both; otherwise either.
func TestDayFieldsRule(t *testing.T) {
	cases := []struct {
		spec string
		or   bool
	}{
		{"0 0 * * *", false},
		{"0 0 1 * *", false},
		{"0 0 * * MON", false},
		{"0 0 ? * MON", false},
		{"0 0 */1 * MON", false},
		{"0 0 1 * */1", false},
		{"0 0 *,5 * MON", false},
		{"0 0 1 * MON", true},
		{"0 0 */2 * MON", true},
		{"0 0 1-31 * MON", true},
		{"0 0 1 * 0-6", true},
		{"0 0 1 * */2", true},
		{"@weekly", false},
		{"@monthly", false},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			if s := mustParse(t, c.spec); s.domOrDow != c.or {
				t.Fatalf("%q: either-field rule = %v, want %v", c.spec, s.domOrDow, c.or)
			}
		})
	}
	// Monday 1 June 2026 .. : the 1st OR a Monday, against the 1st only.
	after := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	if got, want := mustParse(t, "0 0 1 * MON").Next(after), time.Date(2026, 6, 8, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("either rule: Next = %v, want %v", got, want)
	}
	if got, want := mustParse(t, "0 0 1 * *").Next(after), time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("day of month only: Next = %v, want %v", got, want)
	}
}

func TestFixedRule(t *testing.T) {
	cases := []struct {
		spec  string
		fixed bool
	}{
		{"30 1 * * *", true},
		{"0 0 1,2 * *", true},
		{"0-59 1 * * *", true}, // ranges and lists are fixed values
		{"0 30 1 * * *", true},
		{"@daily", true},
		{"* 1 * * *", false},
		{"*/15 1 * * *", false},
		{"0 */2 * * *", false},
		{"5/10 1 * * *", false},
		{"* 30 1 * * *", false},
		{"? 1 * * *", false},
		{"@hourly", false},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			if s := mustParse(t, c.spec); s.fixed != c.fixed {
				t.Fatalf("%q: fixed = %v, want %v", c.spec, s.fixed, c.fixed)
			}
		})
	}
}

func TestParseLocation(t *testing.T) {
	kolkata := mustLoad(t, "Asia/Kolkata")
	cases := []struct {
		name string
		spec string
		loc  *time.Location // given to ParseInLocation
		want string         // Location().String(), "" for nil
	}{
		{"none", "0 9 * * *", nil, ""},
		{"CRON_TZ", "CRON_TZ=America/New_York 0 9 * * *", nil, "America/New_York"},
		{"TZ", "TZ=Europe/London 0 9 * * *", nil, "Europe/London"},
		{"given", "0 9 * * *", kolkata, "Asia/Kolkata"},
		{"spec wins", "TZ=Europe/London 0 9 * * *", kolkata, "Europe/London"},
		{"descriptor", "CRON_TZ=Australia/Lord_Howe @daily", nil, "Australia/Lord_Howe"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseInLocation(c.spec, c.loc)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if s.Location() != nil {
				got = s.Location().String()
			}
			if got != c.want {
				t.Fatalf("%q: Location() = %q, want %q", c.spec, got, c.want)
			}
			if s.String() != c.spec {
				t.Fatalf("String() = %q, want %q", s.String(), c.spec)
			}
		})
	}
	// Without a location, Next follows after's.
	s := mustParse(t, "0 9 * * *")
	after := time.Date(2026, 1, 1, 0, 0, 0, 0, kolkata)
	if got, want := s.Next(after), time.Date(2026, 1, 1, 9, 0, 0, 0, kolkata); !got.Equal(want) {
		t.Fatalf("Next(%v) = %v, want %v", after, got, want)
	}
	if got, want := s.Next(after.UTC()), time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("Next(%v) = %v, want %v", after.UTC(), got, want)
	}
}

func TestEvery(t *testing.T) {
	s := mustParse(t, "@every 90s")
	cases := []struct {
		name        string
		after, want time.Time
	}{
		{"whole second", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 1, 30, 0, time.UTC)},
		{"truncated to the second", time.Date(2026, 1, 1, 0, 0, 0, 999_999_999, time.UTC), time.Date(2026, 1, 1, 0, 1, 30, 0, time.UTC)},
		{"across a DST change", time.Date(2026, 3, 8, 6, 59, 0, 0, time.UTC), time.Date(2026, 3, 8, 7, 0, 30, 0, time.UTC)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := s.Next(c.after); !got.Equal(c.want) {
				t.Fatalf("Next(%v) = %v, want %v", c.after, got, c.want)
			}
		})
	}
}

// TestNeverFiresMatchesCalendar compares the parse-time check with a walk
// over 28 years, 2001 to 2028, which hold every combination of weekday,
// month and leap year the calendar has between 1901 and 2099.
func TestNeverFiresMatchesCalendar(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	first := daysFromCivil(2001, 1, 1)
	last := daysFromCivil(2029, 1, 1)
	for range modelCases(t, 300) {
		spec := crongen.Spec(r, crongen.Options{})
		s, err := Parse(spec)
		if strings.HasPrefix(spec, "@") {
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "never fires") {
			t.Fatalf("Parse(%q): %v", spec, err)
		}
		if err != nil {
			// Rebuild the schedule without the check to walk it.
			s = &Schedule{}
			p := parser{spec: spec}
			p.fields(s, words(spec, 0))
		}
		fires := false
		for d := first; d < last && !fires; d++ {
			y, mo, dd := civil(d)
			fires = s.month&(1<<mo) != 0 && s.dayMask(y, mo, daysFromCivil(y, mo, 1))&(1<<dd) != 0
		}
		if fires != (err == nil) {
			t.Fatalf("%q: fires in 2001-2028 = %v, Parse error = %v", spec, fires, err)
		}
	}
}

func TestCivil(t *testing.T) {
	for _, y := range []int{-401, -1, 0, 1, 1582, 1900, 1969, 1970, 2000, 2024, 2100, 9999, 1 << 20} {
		for mo := 1; mo <= 12; mo++ {
			for _, d := range []int{1, daysIn(y, mo)} {
				days := daysFromCivil(y, mo, d)
				if gy, gm, gd := civil(days); gy != y || gm != mo || gd != d {
					t.Fatalf("civil(daysFromCivil(%d-%d-%d)) = %d-%d-%d", y, mo, d, gy, gm, gd)
				}
				want := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC)
				if got := time.Unix(days*86400, 0).UTC(); !got.Equal(want) {
					t.Fatalf("daysFromCivil(%d-%d-%d) is %v, want %v", y, mo, d, got, want)
				}
				if got := weekday(days); got != int(want.Weekday()) {
					t.Fatalf("weekday of %v = %d, want %d", want, got, want.Weekday())
				}
			}
		}
	}
}
