package cron

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/internal/crongen"
)

// modelNext is the reference for Next: it tries every whole second after
// after (every minute when only second 0 is allowed), up to after+window,
// and returns the first instant whose wall clock matches s and that the
// DST rules let fire. ok is false when nothing in the window fires.
func modelNext(s *Schedule, after time.Time, window time.Duration) (next time.Time, ok bool) {
	loc := s.loc
	if loc == nil {
		loc = after.Location()
	}
	step := int64(1)
	u := after.Unix() + 1
	if s.second == 1 {
		step = 60
		u = floorDiv(u+59, 60) * 60 // assumes whole-minute offsets
	}
	for end := after.Add(window).Unix(); u <= end; u += step {
		t := time.Unix(u, 0).In(loc)
		if modelMatches(s, t) && !(s.fixed && modelRepeated(t)) {
			return t, true
		}
	}
	return time.Time{}, false
}

// modelMatches reports whether the wall clock of t matches every field.
func modelMatches(s *Schedule, t time.Time) bool {
	_, mo, d := t.Date()
	h, mi, se := t.Clock()
	domOK := s.dom&(1<<d) != 0
	dowOK := s.dow&(1<<t.Weekday()) != 0
	dayOK := domOK && dowOK
	if s.domOrDow {
		dayOK = domOK || dowOK
	}
	return dayOK && s.month&(1<<mo) != 0 && s.hour&(1<<h) != 0 &&
		s.minute&(1<<mi) != 0 && s.second&(1<<se) != 0
}

// modelRepeated reports whether t's wall time also belongs to an earlier
// instant t' = t + off(t) - off(t'), trying every offset the location
// had in the two days before t.
func modelRepeated(t time.Time) bool {
	_, off := t.Zone()
	for h := 1; h <= 48; h++ {
		_, o := t.Add(-time.Duration(h) * time.Hour).Zone()
		if o <= off {
			continue
		}
		earlier := t.Add(time.Duration(off-o) * time.Second)
		if _, eo := earlier.Zone(); eo == o {
			return true
		}
	}
	return false
}

// modelZones are the locations the model test runs in: no DST, DST with
// one-hour shifts in both hemispheres, a 30-minute shift, and a zone whose
// transitions fall at midnight.
var modelZones = []string{"UTC", "Asia/Kolkata", "America/New_York", "Europe/London",
	"Australia/Lord_Howe", "Australia/Sydney", "America/Havana"}

// modelCases returns how many random cases a model test runs: a few
// hundred by default (CI runs this under the race detector and qemu), more
// with CRON_MODEL_CASES=n.
func modelCases(t *testing.T, def int) int {
	if v := os.Getenv("CRON_MODEL_CASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("CRON_MODEL_CASES=%q: %v", v, err)
		}
		return n
	}
	if testing.Short() {
		return def / 4
	}
	return def
}

// randomAfter returns a time in loc: half the time within a few days of
// one of the zone's transitions, otherwise anywhere from 1970 to 2100
// (when every zone offset is a whole number of minutes, as modelNext needs).
func randomAfter(r *rand.Rand, loc *time.Location) time.Time {
	base := time.Date(1970+r.IntN(130), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 0, loc)
	if r.IntN(2) == 0 {
		if _, end := base.ZoneBounds(); !end.IsZero() {
			base = end.Add(time.Duration(r.Int64N(int64(72*time.Hour))) - 48*time.Hour)
		}
	}
	if r.IntN(4) == 0 {
		base = base.Add(time.Duration(r.IntN(1e9))) // not a whole second
	}
	return base
}

// TestNextMatchesModel compares Next with modelNext over random dense specs
// and times, in zones with and without DST, many of them near transitions.
func TestNextMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(t *testing.T, seconds bool, cases int, window time.Duration) {
		for range cases {
			loc, err := time.LoadLocation(modelZones[r.IntN(len(modelZones))])
			if err != nil {
				t.Fatal(err)
			}
			spec := crongen.Spec(r, crongen.Options{Seconds: seconds, Dense: true})
			s, err := ParseInLocation(spec, loc)
			if err != nil {
				continue // never fires
			}
			if s.every > 0 {
				continue // not wall-clock
			}
			after := randomAfter(r, loc)
			got := s.Next(after)
			want, ok := modelNext(s, after, window)
			switch {
			case ok && !got.Equal(want):
				t.Fatalf("%q in %v: Next(%v) = %v, want %v", spec, loc, after, got, want)
			case !ok && !got.IsZero() && !got.After(after.Add(window)):
				t.Fatalf("%q in %v: Next(%v) = %v, want nothing before %v", spec, loc, after, got, after.Add(window))
			}
		}
	}
	t.Run("minutes", func(t *testing.T) { check(t, false, modelCases(t, 250), 8*24*time.Hour) })
	t.Run("seconds", func(t *testing.T) { check(t, true, modelCases(t, 40), 6*time.Hour) })
}
