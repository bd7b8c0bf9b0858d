package cron_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/ttlkit/ttlkit/jobs/cron"
)

func ExampleParse() {
	s, err := cron.Parse("CRON_TZ=Europe/Berlin 0 14 * * MON-FRI")
	if err != nil {
		panic(err)
	}
	t := time.Date(2026, 7, 2, 10, 0, 0, 0, time.UTC) // Thursday, 12:00 in Berlin
	for range 3 {
		t = s.Next(t)
		fmt.Println(t.In(s.Location()).Format("Mon 2 Jan 15:04 MST"))
	}
	// Output:
	// Thu 2 Jul 14:00 CEST
	// Fri 3 Jul 14:00 CEST
	// Mon 6 Jul 14:00 CEST
}

func ExampleParse_error() {
	_, err := cron.Parse("0 0 30 2 *")
	fmt.Println(err)

	var se *cron.SyntaxError
	if errors.As(err, &se) {
		fmt.Printf("field %q at offset %d\n", se.Field, se.Pos)
	}
	fmt.Println(errors.Is(err, cron.ErrSyntax))
	// Output:
	// cron: day of month at offset 4 in "0 0 30 2 *": never fires: no month in the month field has day 30
	// field "day of month" at offset 4
	// true
}

// When New York's clocks go back on 1 November 2026, 01:00-01:59 happens
// twice: a fixed time runs once, a stepped spec on both passes.
func ExampleSchedule_Next_fallBack() {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	for _, spec := range []string{"30 1 * * *", "*/30 1 * * *"} {
		s, err := cron.ParseInLocation(spec, ny)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-13s", spec)
		t := time.Date(2026, 11, 1, 0, 0, 0, 0, ny)
		for range 3 {
			t = s.Next(t)
			fmt.Print(t.Format(" Jan 2 15:04 MST"))
		}
		fmt.Println()
	}
	// Output:
	// 30 1 * * *    Nov 1 01:30 EDT Nov 2 01:30 EST Nov 3 01:30 EST
	// */30 1 * * *  Nov 1 01:00 EDT Nov 1 01:30 EDT Nov 1 01:00 EST
}

func ExampleSchedule_Next_every() {
	s, err := cron.Parse("@every 1m30s")
	if err != nil {
		panic(err)
	}
	t := time.Date(2026, 1, 1, 8, 0, 0, 250_000_000, time.UTC)
	fmt.Println(s.Next(t).Format(time.TimeOnly))
	// Output:
	// 08:01:30
}
