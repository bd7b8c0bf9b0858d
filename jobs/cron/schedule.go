package cron

import (
	"math/bits"
	"time"
)

// A Schedule is a parsed cron spec. It is immutable and safe for concurrent
// use. Make one with [Parse] or [ParseInLocation]; the zero Schedule never
// fires.
type Schedule struct {
	spec  string
	loc   *time.Location // nil: the location of the time given to Next
	every time.Duration  // > 0 for @every: the rest is unused

	// One bit per allowed value.
	second, minute uint64 // bits 0-59
	hour           uint32 // bits 0-23
	dom            uint32 // bits 1-31
	month          uint16 // bits 1-12
	dow            uint8  // bits 0-6, Sunday = 0
	// domOrDow: neither day field is * or ?, so a day matches when either
	// field does; otherwise both must.
	domOrDow bool
	// fixed: the second, minute and hour fields hold no *, ? or /. A wall
	// time of a fixed schedule that occurs twice (when clocks go back)
	// fires only at its first occurrence.
	fixed bool
	// days[w] is the days 1-31 the two day fields allow in a month whose
	// first day is weekday w, before cutting at the month's length.
	days [7]uint32
}

// String returns the spec as given to Parse.
func (s *Schedule) String() string { return s.spec }

// Location returns the location named by the spec's CRON_TZ= or TZ= prefix,
// else the one given to ParseInLocation, else nil: Next then works in the
// location of the time it is given.
func (s *Schedule) Location() *time.Location { return s.loc }

// Bounds of Next's search. Past maxUnix (about a billion years from now)
// Next gives up rather than overflow; it never looks further than horizon
// ahead, which is more than any schedule accepted by Parse needs: a
// calendar's pattern repeats every 400 years, and the rarest spec, a 29
// February, fires at least once in 8.
const (
	maxUnix = 1 << 55
	minUnix = -maxUnix
	horizon = 401 * 366 * 86400
)

// Next returns the first activation strictly after after, in after's
// location, or the zero Time if there is none (only past year about a
// billion). It never returns a time at or before after, works in whole
// seconds, and allocates nothing.
//
// Fields are matched against the wall clock of the schedule's location, or
// of after's location when the schedule has none. Where clocks skip
// forward, wall times that do not exist do not fire. Where clocks go back,
// a schedule whose second, minute and hour fields are fixed values (no *,
// ? or /) fires only at the first occurrence of a repeated wall time; any
// other schedule fires at every instant whose wall time matches, on both
// passes. @every d returns after truncated to the second, plus d.
//
// Next costs a few bitset scans plus one or two time zone lookups per zone
// change it crosses (two a year in a zone with daylight saving time).
func (s *Schedule) Next(after time.Time) time.Time {
	u := after.Unix() + 1 // the first whole second after after
	if u > maxUnix || u < minUnix {
		return time.Time{}
	}
	if s.every > 0 {
		return after.Truncate(time.Second).Add(s.every)
	}
	loc := s.loc
	if loc == nil {
		loc = after.Location()
	}
	// The search walks the zone periods of loc from u on, each with a
	// constant UTC offset, in which wall time and instants map one to one.
	// wc is the first matching wall time at or after wlo: a later search
	// starting at or after wlo but not past wc finds wc again.
	var wlo, wc int64 = 1, 0
	for end := u + horizon; u <= end; {
		t := time.Unix(u, 0).In(loc)
		_, off := t.Zone()
		w := u + int64(off)
		if w < wlo || w > wc {
			var ok bool
			if wc, ok = s.nextWall(w); !ok {
				return time.Time{}
			}
			wlo = w
		}
		c := wc - int64(off)
		if c == u && !s.fixed {
			// The common case of a dense spec: u itself matches, and no
			// zone change can lie between u and u.
			return time.Unix(c, 0).In(after.Location())
		}
		start, stop := t.ZoneBounds()
		if !stop.IsZero() && c >= periodEnd(u, stop) {
			u = periodEnd(u, stop) // not in this period: try the next one
			continue
		}
		if s.fixed && !start.IsZero() {
			// If clocks went back by d when this period began, its first
			// d seconds repeat wall times the previous period had.
			if begin := start.Unix(); c-begin < 2*86400 {
				_, prev := time.Unix(begin-1, 0).In(loc).Zone()
				if d := int64(prev - off); d > 0 && c < begin+d {
					u = begin + d
					continue
				}
			}
		}
		return time.Unix(c, 0).In(after.Location())
	}
	return time.Time{}
}

// periodEnd returns stop, the end ZoneBounds gave for the zone period
// holding u, corrected when it is not after u: past a zone's last listed
// transition, ZoneBounds ends the period after its first transition of a
// year at the year's start plus 365 days, a day early in a leap year
// (golang/go#81583). The offset stays the same until the next UTC year.
func periodEnd(u int64, stop time.Time) int64 {
	if end := stop.Unix(); end > u {
		return end
	}
	y, _, _ := civil(floorDiv(u, 86400))
	return daysFromCivil(y+1, 1, 1) * 86400
}

// nextWall returns the first wall time at or after w (seconds since
// 1970-01-01 00:00 on the wall clock) that matches every field, searching
// up to 400 years ahead.
func (s *Schedule) nextWall(w int64) (int64, bool) {
	days := floorDiv(w, 86400)
	sec := int(w - days*86400)
	y, month, d := time.Unix(days*86400, 0).UTC().Date()
	mo := int(month)
	first := days - int64(d-1) // the day number of the month's first day
	h, mi, se := sec/3600, sec/60%60, sec%60
	for last := y + 400; y <= last; {
		if m := nextBit(uint64(s.month), mo); m != mo {
			if m > 12 {
				y, mo, d, h, mi, se = y+1, 1, 1, 0, 0, 0
			} else {
				mo, d, h, mi, se = m, 1, 0, 0, 0
			}
			first = daysFromCivil(y, mo, 1)
			continue
		}
		if dd := nextBit(uint64(s.dayMask(y, mo, first)), d); dd != d {
			if dd > 31 {
				first += int64(daysIn(y, mo))
				if mo++; mo > 12 {
					y, mo = y+1, 1
				}
				d, h, mi, se = 1, 0, 0, 0
				continue
			}
			d, h, mi, se = dd, 0, 0, 0
		}
		if hh := nextBit(uint64(s.hour), h); hh != h {
			if hh > 23 {
				d, h, mi, se = d+1, 0, 0, 0
				continue
			}
			h, mi, se = hh, 0, 0
		}
		if mm := nextBit(s.minute, mi); mm != mi {
			if mm > 59 {
				h, mi, se = h+1, 0, 0
				continue
			}
			mi, se = mm, 0
		}
		if ss := nextBit(s.second, se); ss != se {
			if ss > 59 {
				mi, se = mi+1, 0
				continue
			}
			se = ss
		}
		return (first+int64(d-1))*86400 + int64(h*3600+mi*60+se), true
	}
	return 0, false
}

// dayMask returns the days of month mo of year y, whose first day is day
// number first, that the day fields allow.
func (s *Schedule) dayMask(y, mo int, first int64) uint32 {
	return s.days[weekday(first)] & (1<<(daysIn(y, mo)+1) - 2)
}

// fillDays computes s.days from the day fields.
func (s *Schedule) fillDays() {
	for first := range 7 {
		var byWeekday uint32
		for d := 1; d <= 31; d++ {
			if s.dow&(1<<((first+d-1)%7)) != 0 {
				byWeekday |= 1 << d
			}
		}
		if s.domOrDow {
			s.days[first] = s.dom | byWeekday
		} else {
			s.days[first] = s.dom & byWeekday
		}
	}
}

// canFire reports whether some day of some year matches the day and month
// fields. Every weekday occurs in every month, and each month has its
// longest length (29 for February) in some year, so it is enough to try
// each month at its longest, starting on each weekday.
func (s *Schedule) canFire() bool {
	longest := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for mo := 1; mo <= 12; mo++ {
		if s.month&(1<<mo) == 0 {
			continue
		}
		for first := range 7 {
			if s.days[first]&(1<<(longest[mo]+1)-2) != 0 {
				return true
			}
		}
	}
	return false
}

// nextBit returns the lowest set bit of mask at or above from, or 64.
func nextBit(mask uint64, from int) int {
	if from >= 64 {
		return 64
	}
	return from + bits.TrailingZeros64(mask>>from)
}

// lowestBit returns the lowest set bit of mask, or 64.
func lowestBit(mask uint64) int { return bits.TrailingZeros64(mask) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// weekday returns the weekday (Sunday = 0) of a day counted from 1970-01-01,
// a Thursday.
func weekday(days int64) int {
	w := int((days + 4) % 7)
	if w < 0 {
		w += 7
	}
	return w
}

func daysIn(y, mo int) int {
	switch mo {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// civil returns the proleptic Gregorian date of a day counted from
// 1970-01-01 (Howard Hinnant's days-to-civil algorithm).
func civil(days int64) (y, mo, d int) {
	z := days + 719468 // days since 0000-03-01
	era := floorDiv(z, 146097)
	doe := z - era*146097                                  // day of the 400-year era, 0-146096
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // year of the era, 0-399
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // day of the March-based year, 0-365
	mp := (5*doy + 2) / 153                                // March-based month, 0-11
	d = int(doy - (153*mp+2)/5 + 1)
	mo = int(mp + 3)
	if mo > 12 {
		mo -= 12
	}
	y = int(yoe + era*400)
	if mo <= 2 {
		y++
	}
	return y, mo, d
}

// daysFromCivil is the inverse of civil.
func daysFromCivil(y, mo, d int) int64 {
	yy := int64(y)
	if mo <= 2 {
		yy--
	}
	era := floorDiv(yy, 400)
	yoe := yy - era*400
	mp := int64((mo + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
