package natsjobs

import (
	"testing"
	"time"
	_ "unsafe" // go:linkname, to compare with the server's own cron

	_ "github.com/nats-io/nats-server/v2/server"
)

// The activations of a cron job across daylight-saving changes, as the
// chain stores them (EnqueueCron's first, then nextActivation from each
// one): the rules of package jobs/cron, one case per rule and zone.
func TestCronDST(t *testing.T) {
	zone := func(name string) *time.Location {
		l, err := time.LoadLocation(name)
		if err != nil {
			t.Skipf("no time zone database: %v", err)
		}
		return l
	}
	ny, london, lordHowe, kolkata := zone("America/New_York"), zone("Europe/London"), zone("Australia/Lord_Howe"), zone("Asia/Kolkata")
	at := func(l *time.Location, mo time.Month, d, h, m int, offset string) time.Time {
		t.Helper()
		tm := time.Date(2026, mo, d, h, m, 0, 0, l)
		if off := tm.Format("-07:00"); off != offset {
			// time.Date picks one of a repeated wall time's two instants:
			// move to the other one.
			for _, step := range []time.Duration{time.Hour, -time.Hour, 30 * time.Minute, -30 * time.Minute} {
				if o := tm.Add(step); o.Hour() == h && o.Minute() == m && o.Format("-07:00") == offset {
					return o
				}
			}
			t.Fatalf("%v has offset %s, want %s", tm, off, offset)
		}
		return tm
	}
	for _, tc := range []struct {
		name string
		spec string
		loc  *time.Location
		from time.Time
		want []time.Time
	}{
		{"NewYork/skipped fixed time", "30 2 * * *", ny, at(ny, 3, 7, 3, 0, "-05:00"),
			[]time.Time{at(ny, 3, 9, 2, 30, "-04:00"), at(ny, 3, 10, 2, 30, "-04:00")}},
		{"NewYork/repeated fixed time runs once", "30 1 * * *", ny, at(ny, 10, 31, 12, 0, "-04:00"),
			[]time.Time{at(ny, 11, 1, 1, 30, "-04:00"), at(ny, 11, 2, 1, 30, "-05:00")}},
		{"NewYork/stepped minutes run on both passes", "*/30 1 * * *", ny, at(ny, 11, 1, 0, 0, "-04:00"),
			[]time.Time{at(ny, 11, 1, 1, 0, "-04:00"), at(ny, 11, 1, 1, 30, "-04:00"), at(ny, 11, 1, 1, 0, "-05:00"), at(ny, 11, 1, 1, 30, "-05:00"), at(ny, 11, 2, 1, 0, "-05:00")}},
		{"NewYork/hourly across the gap", "@hourly", ny, at(ny, 3, 8, 0, 30, "-05:00"),
			[]time.Time{at(ny, 3, 8, 1, 0, "-05:00"), at(ny, 3, 8, 3, 0, "-04:00")}},
		{"London/skipped fixed time", "30 1 * * *", london, at(london, 3, 28, 12, 0, "+00:00"),
			[]time.Time{at(london, 3, 30, 1, 30, "+01:00")}},
		{"London/repeated fixed time runs once", "30 1 * * *", london, at(london, 10, 24, 12, 0, "+01:00"),
			[]time.Time{at(london, 10, 25, 1, 30, "+01:00"), at(london, 10, 26, 1, 30, "+00:00")}},
		{"LordHowe/half-hour gap", "15 2 * * *", lordHowe, at(lordHowe, 10, 3, 12, 0, "+10:30"),
			[]time.Time{at(lordHowe, 10, 5, 2, 15, "+11:00")}},
		{"LordHowe/half-hour repeat runs once", "45 1 * * *", lordHowe, at(lordHowe, 4, 4, 12, 0, "+11:00"),
			[]time.Time{at(lordHowe, 4, 5, 1, 45, "+11:00"), at(lordHowe, 4, 6, 1, 45, "+10:30")}},
		{"Kolkata/no DST", "0 9 * * *", kolkata, at(kolkata, 3, 7, 12, 0, "+05:30"),
			[]time.Time{at(kolkata, 3, 8, 9, 0, "+05:30"), at(kolkata, 3, 9, 9, 0, "+05:30")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sched, _, err := cronSpec(tc.spec, tc.loc)
			if err != nil {
				t.Fatal(err)
			}
			got := sched.Next(tc.from)
			for i, want := range tc.want {
				if !got.Equal(want) {
					t.Fatalf("activation %d: got %v, want %v", i, got, want)
				}
				got = nextActivation(sched, got, got)
			}
		})
	}
}

// A worker that gets an activation late stores the first one still to
// come, not the ones that went by.
func TestCronNextActivationSkipsMissed(t *testing.T) {
	sched, _, err := cronSpec("* * * * * *", nil)
	if err != nil {
		t.Fatal(err)
	}
	scheduled := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	now := scheduled.Add(5*time.Second + 300*time.Millisecond)
	if got, want := nextActivation(sched, scheduled, now), scheduled.Add(6*time.Second); !got.Equal(want) {
		t.Errorf("nextActivation 5.3 s late = %v, want %v", got, want)
	}
	early := scheduled.Add(-500 * time.Millisecond) // delivered ahead, held
	if got, want := nextActivation(sched, scheduled, early), scheduled.Add(time.Second); !got.Equal(want) {
		t.Errorf("nextActivation ahead of time = %v, want %v", got, want)
	}
}

//go:linkname serverParseCron github.com/nats-io/nats-server/v2/server.parseCron
func serverParseCron(pattern string, loc *time.Location, ts int64) (time.Time, error)

// Why natsjobs computes the activations itself: nats-server's cron (in
// v2.15.2, derived from robfig/cron) runs a fixed time twice when clocks
// go back, where jobs/cron runs it once. If a server upgrade makes this
// test fail, the server's rules changed: compare them with jobs/cron
// again (doc/design/natsjobs.md, "Cron activations").
func TestServerCronRunsRepeatedFixedTimeTwice(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone database")
	}
	first := time.Date(2026, 11, 1, 1, 30, 0, 0, ny) // 01:30 EDT
	if first.Format("-07:00") != "-04:00" {
		t.Fatalf("%v: want the EDT 01:30", first)
	}
	server, err := serverParseCron("0 30 1 * * *", ny, first.UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	if want := first.Add(time.Hour); !server.Equal(want) {
		t.Errorf("server's next after %v = %v, want %v (01:30 EST, the repeat)", first, server, want)
	}
	sched, _, err := cronSpec("30 1 * * *", ny)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := nextActivation(sched, first, first), time.Date(2026, 11, 2, 1, 30, 0, 0, ny); !got.Equal(want) {
		t.Errorf("natsjobs' next after %v = %v, want %v (the next day)", first, got, want)
	}
}
