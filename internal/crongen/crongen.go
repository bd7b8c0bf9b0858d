// Package crongen makes random cron specs for the tests of jobs/cron: the
// reference-model test and fuzz seeds in the package, and the differential
// test against robfig/cron in bench/.
package crongen

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// Options shape the specs Spec makes.
type Options struct {
	// Seconds makes six-field specs, seconds first.
	Seconds bool
	// Robfig keeps to the syntax robfig/cron v3 also accepts: weekday 7 and
	// upper-case descriptors are left out.
	Robfig bool
	// Dense favours * and wide ranges, so most specs fire within days.
	Dense bool
}

type field struct {
	min, last int
	names     []string
}

var fields = [...]field{
	{0, 59, nil}, // second
	{0, 59, nil}, // minute
	{0, 23, nil}, // hour
	{1, 31, nil}, // day of month
	{1, 12, []string{"JAN", "Feb", "mar", "APR", "May", "jun", "JUL", "aug", "Sep", "OCT", "nov", "DEC"}},
	{0, 6, []string{"SUN", "mon", "Tue", "WED", "thu", "FRI", "sat"}},
}

var descriptors = [...]string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}

// Spec returns a random spec that jobs/cron's Parse accepts unless it can
// never fire (such as 30 February).
func Spec(r *rand.Rand, o Options) string {
	switch n := r.IntN(40); {
	case n == 0:
		return "@every " + strconv.Itoa(1+r.IntN(7200)) + "s"
	case n == 1:
		d := descriptors[r.IntN(len(descriptors))]
		if !o.Robfig && r.IntN(2) == 0 {
			d = strings.ToUpper(d)
		}
		return d
	}
	first := 1
	if o.Seconds {
		first = 0
	}
	parts := make([]string, 0, 6)
	for i := first; i < len(fields); i++ {
		parts = append(parts, item(r, i, o))
		for r.IntN(4) == 0 {
			parts[len(parts)-1] += "," + item(r, i, o)
		}
	}
	return strings.Join(parts, " ")
}

// item returns one list item of field i.
func item(r *rand.Rand, i int, o Options) string {
	f := fields[i]
	span := f.last - f.min
	star := 3
	if o.Dense && i >= 3 {
		star = 10 // the day and month fields
	}
	switch k := r.IntN(16); {
	case k < star:
		if r.IntN(8) == 0 {
			return "?"
		}
		return "*"
	case k < star+2:
		return "*/" + strconv.Itoa(1+r.IntN(span))
	case k < star+4:
		return value(r, f, f.min+r.IntN(span+1), false, o) + "/" + strconv.Itoa(1+r.IntN(span))
	case k < star+8:
		lo := f.min + r.IntN(span+1)
		hi := lo + r.IntN(f.last-lo+1)
		s := value(r, f, lo, false, o) + "-" + value(r, f, hi, false, o)
		if r.IntN(3) == 0 {
			s += "/" + strconv.Itoa(1+r.IntN(span))
		}
		return s
	}
	return value(r, f, f.min+r.IntN(span+1), i == 5, o)
}

// value writes v as a number or, sometimes, a name; with sunday7, Sunday
// sometimes as 7.
func value(r *rand.Rand, f field, v int, sunday7 bool, o Options) string {
	if f.names != nil && r.IntN(3) == 0 {
		return f.names[v-f.min]
	}
	if sunday7 && v == 0 && !o.Robfig && r.IntN(2) == 0 {
		return "7"
	}
	return strconv.Itoa(v)
}
