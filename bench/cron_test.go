package bench

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/bench/internal/harness"
	"github.com/ttlkit/ttlkit/jobs/cron"
)

// cronBenchSpecs are the specs BenchmarkCronNext times: dense to sparse,
// with and without a zone.
var cronBenchSpecs = []struct{ name, spec string }{
	{"every-second", "* * * * * *"},
	{"every-minute", "* * * * *"},
	{"quarter-hours", "*/15 * * * *"},
	{"weekdays-9am", "0 9 * * MON-FRI"},
	{"weekdays-9am-new-york", "CRON_TZ=America/New_York 0 9 * * MON-FRI"},
	{"monthly", "@monthly"},
	{"leap-day", "0 0 29 2 *"},
}

// BenchmarkCronNext times Schedule.Next of jobs/cron against robfig/cron
// v3's SpecSchedule.Next on the same parsed spec, from 1,024 random times
// in 2026 (UTC), taken in turn. cpu-ns/op is process CPU per call, which
// the machine's other processes inflate less than wall time.
func BenchmarkCronNext(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	var afters [1024]time.Time
	for i := range afters {
		afters[i] = time.Unix(start+r.Int64N(365*86400), r.Int64N(1e9)).UTC()
	}
	for _, c := range cronBenchSpecs {
		ours, err := cron.Parse(c.spec)
		if err != nil {
			b.Fatal(err)
		}
		theirs, err := robfigParser.Parse(c.spec)
		if err != nil {
			b.Fatal(err)
		}
		impls := []struct {
			name string
			next func(time.Time) time.Time
		}{
			{"ttlkit", ours.Next},
			{"robfig", theirs.Next},
		}
		for _, im := range impls {
			b.Run("spec="+c.name+"/impl="+im.name, func(b *testing.B) {
				b.ReportAllocs()
				var sink time.Time
				h := harness.Start(b, nil)
				for i := range b.N {
					sink = im.next(afters[i%len(afters)])
				}
				h.Stop()
				if sink.IsZero() {
					b.Fatal("no next time")
				}
			})
		}
	}
}
