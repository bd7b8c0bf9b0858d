package jobs

import (
	"fmt"
	"time"

	"github.com/ttlkit/ttlkit/jobs/cron"
)

// Cron parses a cron spec (see package jobs/cron for the syntax: five
// fields, six with seconds first, @daily and the like, @every d) into a
// Schedule on the wall clock. A spec with a CRON_TZ= or TZ= prefix is read
// in that zone; one without is read in the Scheduler's Options.Location
// (time.Local by default). The error wraps cron.ErrSyntax and names the
// field and position at fault; a spec that can never fire is an error.
//
// Daylight saving time: a fixed time that does not exist on a day is
// skipped that day; a fixed time that occurs twice runs once, at its first
// occurrence; wildcard and stepped fields fire at every real instant that
// matches.
func Cron(spec string) (Schedule, error) {
	c, err := cron.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return cronSchedule{c: c}, nil
}

// cronSchedule is a parsed spec and, once bound to a Scheduler, the
// location it is read in when the spec names none.
type cronSchedule struct {
	c   *cron.Schedule
	loc *time.Location // nil: the spec's own zone, or the time's location
}

// Next returns the spec's first activation strictly after t.
func (s cronSchedule) Next(t time.Time) time.Time {
	if s.loc != nil {
		t = t.In(s.loc)
	}
	return s.c.Next(t)
}

// String returns the spec.
func (s cronSchedule) String() string { return s.c.String() }

func (s cronSchedule) in(loc *time.Location) Schedule {
	if s.c.Location() == nil {
		s.loc = loc
	}
	return s
}
