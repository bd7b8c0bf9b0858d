// Package cron parses cron specs and computes when they next fire.
//
//	s, err := cron.Parse("CRON_TZ=Europe/Berlin 0 14 * * MON-FRI")
//	if err != nil {
//		return err // a *cron.SyntaxError naming the field and offset
//	}
//	next := s.Next(time.Now()) // the next weekday 14:00 in Berlin
//
// A [Schedule] is immutable and safe for concurrent use; Next allocates
// nothing. Package jobs runs functions on these schedules.
//
// # Syntax
//
// Five fields, or six with seconds first, separated by blanks:
//
//	second (optional)  0-59
//	minute             0-59
//	hour               0-23
//	day of month       1-31
//	month              1-12 or JAN-DEC
//	day of week        0-7 or SUN-SAT (0 and 7 are both Sunday)
//
// Each field is a comma-separated list of items: * or ? (every value), a
// value, a range a-b, and any of these followed by /n: every nth value of
// the range, where a/n runs from a to the end of the field (*/n and a/n in
// the weekday field end on Saturday). Names are case-insensitive. Five
// fields mean second 0.
//
// The two day fields combine as in robfig/cron v3 (and Vixie cron): if
// either is * or ? (with no step, or a step of 1), a day must match both,
// so "0 0 * * MON" is every Monday and "0 0 13 * *" every 13th; otherwise a
// day matching either fires, so "0 0 13 * FRI" is every 13th and every
// Friday.
//
// Descriptors stand for whole specs: @yearly and @annually (0 0 1 1 *),
// @monthly (0 0 1 * *), @weekly (0 0 * * 0), @daily and @midnight
// (0 0 * * *), @hourly (0 * * * *). "@every d" fires every d, a Go
// duration of at least a second and a whole number of seconds: Next(t) is
// t truncated to the second plus d, whatever the wall clock does.
//
// A spec may start with "CRON_TZ=Zone " or "TZ=Zone ", an IANA zone name:
// its fields are then read on that zone's wall clock. Without one, they
// are read in the location given to [ParseInLocation], or else in the
// location of the time passed to Next.
//
// # Guarantees
//
//   - Next(t) is strictly after t, on a whole second, and in t's location.
//   - Every spec Parse accepts fires: one that cannot, such as "0 0 30 2 *"
//     (30 February) or "0 0 31 4,6,9,11 *", is rejected. The check is
//     exact: each allowed month is tried at its longest length (29 days
//     for February) starting on each weekday, which covers every calendar
//     year. The rarest spec Parse accepts, 29 February, fires at least
//     once in eight years, and Next searches 400 years (the calendar's
//     whole cycle); it returns the zero Time only for times past year
//     about one billion.
//   - Fields match the wall clock, whatever the year: dates far in the
//     past or future, and zones whose rules changed, follow the zone's
//     history as the time package knows it.
//
// # Daylight saving time
//
// When clocks skip forward, wall times inside the gap do not exist and
// never fire: with New York's 02:00 to 03:00 jump, "30 2 * * *" does not run
// that day, and "*/15 * * * *" runs at 01:45 then 03:00.
//
// When clocks go back, some wall times occur twice. A spec whose second,
// minute and hour fields are all fixed values (numbers, lists and ranges,
// with no *, ? or /) runs once, at the first occurrence: "30 1 * * *"
// runs at 01:30 EDT, not again at 01:30 EST. Any other spec fires at every
// real instant whose wall time matches, on both passes: "*/15 * * * *" and
// "*/15 1 * * *" run at 01:00, 01:15, 01:30 and 01:45 EDT and again at the
// same wall times in EST, and @hourly at both 01:00s. This is close to
// Vixie cron's split between fixed-time and wildcard jobs, except that a
// skipped fixed time is not made up for.
//
// # Coming from robfig/cron v3
//
// The syntax (with robfig's SecondOptional and Descriptor options), the
// day-field rule and the answers are the same: a differential test over
// a million random specs and times away from DST changes finds no
// difference. What differs:
//
//   - Weekday 7 (Sunday) is accepted; a step larger than its field, a
//     range starting with *, and @every under a second or with a fraction
//     of one (robfig rounds it) are rejected.
//   - A spec that never fires is a parse error; robfig's Next returns the
//     zero Time for it, and also for runs more than five years away,
//     which Next here finds.
//   - DST: robfig runs a fixed time on both passes of a repeated hour, and
//     when its search starts in or passes through a month whose 1st has
//     no midnight (Lord Howe, 1 March 1981), its answer can come out at the
//     wrong time of day.
//
// # Errors
//
// Parse rejects what it does not support rather than guess: L, W and #,
// a seventh (year) field, values or steps out of range, backward ranges
// (no wrap-around), empty list items, unknown names and descriptors,
// @every durations under a second or with a fraction of one, and unknown
// zones. Every error is a [*SyntaxError] carrying the spec, the field, the
// byte offset and a message, and wraps [ErrSyntax]:
//
//	cron: day of month at offset 4 in "0 0 30 2 *": never fires: no month in the month field has day 30
//
// How it is built, and why: doc/design/jobs.md.
package cron
