package bench

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	robfig "github.com/robfig/cron/v3"

	"github.com/ttlkit/ttlkit/internal/crongen"
	"github.com/ttlkit/ttlkit/jobs/cron"
)

// cronDiffPairsEnv sets how many (spec, time) pairs TestCronMatchesRobfig
// compares; the proof is CRON_DIFF_PAIRS=1000000 (about a minute
// on the 2-core machine). By default it compares 20,000, 5,000 with -short.
const cronDiffPairsEnv = "CRON_DIFF_PAIRS"

// robfigParser reads what jobs/cron reads: an optional seconds field and
// descriptors.
var robfigParser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour |
	robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// diffZones: no DST (UTC, Kolkata, Tokyo) and DST in both hemispheres,
// Lord Howe's by 30 minutes.
var diffZones = []string{"UTC", "Asia/Kolkata", "Asia/Tokyo", "America/New_York", "Europe/London",
	"Europe/Berlin", "Australia/Sydney", "Australia/Lord_Howe"}

// TestCronMatchesRobfig is the differential test of jobs/cron against
// robfig/cron v3: random specs in robfig's syntax, random times from 1971
// to 2099 in several zones, every Next equal. A pair is skipped when the
// zone's UTC offset changes between a day before the 1st of its time's
// month (where robfig's search starts) and a day after the later answer: across such changes robfig is wrong in ways jobs/cron
// is not (it runs a fixed time on both passes of a repeated hour, and a
// month whose 1st's midnight does not exist shifts the time of day of
// every later answer), and the DST tests in jobs/cron cover them. Where
// robfig finds nothing (it gives up after five years), jobs/cron must
// answer later than that. A spec
// jobs/cron rejects as never firing must be one robfig never fires either.
func TestCronMatchesRobfig(t *testing.T) {
	want := 20_000
	if testing.Short() {
		want = 5_000
	}
	if v := os.Getenv(cronDiffPairsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q, want a positive integer", cronDiffPairsEnv, v)
		}
		want = n
	}
	locs := make([]*time.Location, len(diffZones))
	for i, z := range diffZones {
		l, err := time.LoadLocation(z)
		if err != nil {
			t.Fatal(err)
		}
		locs[i] = l
	}
	r := rand.New(rand.NewPCG(7, 8))
	const timesPerSpec = 50
	var compared, nearDST, robfigGaveUp, neverFires int
	for compared < want {
		zi := r.IntN(len(locs))
		loc := locs[zi]
		spec := crongen.Spec(r, crongen.Options{Robfig: true, Seconds: r.IntN(2) == 0})
		if r.IntN(20) == 0 {
			spec = sparseSpecs[r.IntN(len(sparseSpecs))]
		}
		zoned := r.IntN(2) == 0 // the zone is in the spec, the time in UTC or the zone
		if zoned {
			spec = "CRON_TZ=" + diffZones[zi] + " " + spec
		}
		ours, err := cron.Parse(spec)
		theirs, rerr := robfigParser.Parse(spec)
		if rerr != nil {
			t.Fatalf("robfig rejects %q: %v (the generator must keep to its syntax)", spec, rerr)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "never fires") {
				t.Fatalf("Parse(%q): %v, robfig accepts it", spec, err)
			}
			if next := theirs.Next(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)); !next.IsZero() {
				t.Fatalf("Parse(%q) says it never fires, robfig fires it at %v", spec, next)
			}
			neverFires++
			continue
		}
		for range timesPerSpec {
			after := time.Unix(31_536_000+r.Int64N(4_070_000_000), r.Int64N(1e9)).In(loc)
			if zoned && r.IntN(2) == 0 {
				after = after.UTC()
			}
			got, exp := ours.Next(after), theirs.Next(after)
			last := got
			if exp.After(last) {
				last = exp
			}
			// robfig starts from midnight on the 1st of after's month.
			wall := after.In(loc)
			from := time.Date(wall.Year(), wall.Month(), 1, 0, 0, 0, 0, loc)
			if offsetChanges(from.Add(-26*time.Hour), last.Add(26*time.Hour), loc) {
				nearDST++
				continue
			}
			compared++
			if exp.IsZero() {
				if !got.After(after.AddDate(5, 0, 0)) {
					t.Fatalf("%q: Next(%v) = %v; robfig found nothing", spec, after, got)
				}
				robfigGaveUp++
				continue
			}
			if !got.Equal(exp) {
				t.Fatalf("%q: Next(%v) = %v, robfig says %v", spec, after, got, exp)
			}
		}
	}
	t.Logf("%d pairs equal (robfig found nothing in %d of them), %d skipped across a DST change, %d specs never fire",
		compared, robfigGaveUp, nearDST, neverFires)
}

// sparseSpecs fire rarely or never, which random specs seldom do.
var sparseSpecs = []string{
	"0 0 29 2 *",        // every four years, eight across 2100
	"0 0 0 29 2 ?",      // the same with seconds
	"30 6 29 feb 1",     // 29 February or any Monday in February
	"0 0 30 2 *",        // never
	"0 0 31 4,6,9,11 *", // never
	"0 0 30-31 2 *",     // never
	"0 0 31 * *",        // seven months a year
	"0 12 13 * 5",       // every 13th and every Friday
	"0 0 1 1 0",         // every 1 January and every Sunday in January
	"@yearly",
}

// offsetChanges reports whether loc's UTC offset changes between a and b.
func offsetChanges(a, b time.Time, loc *time.Location) bool {
	_, off := a.In(loc).Zone()
	for t := a; t.Before(b); {
		_, end := t.In(loc).ZoneBounds()
		switch {
		case end.IsZero():
			return false
		case !end.After(t): // golang/go#81583: a leap year's last period ends a day early
			end = t.Add(24 * time.Hour)
		case !end.Before(b):
			return false
		}
		if _, o := end.In(loc).Zone(); o != off {
			return true
		}
		t = end
	}
	return false
}
