package cron

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// ErrSyntax is wrapped by every error Parse and ParseInLocation return:
// errors.Is(err, ErrSyntax) reports that a spec was rejected. The error
// itself is a [*SyntaxError] saying which field is wrong and where.
var ErrSyntax = errors.New("cron: invalid spec")

// A SyntaxError says why a spec was rejected: the field at fault, the byte
// offset in Spec where the problem starts, and what is wrong. It unwraps to
// [ErrSyntax].
type SyntaxError struct {
	Spec string // the spec as given to Parse
	// Field is "second", "minute", "hour", "day of month", "month",
	// "day of week", "year", "descriptor", "duration", "location" or, for
	// a problem with the spec as a whole (empty, too few fields), "spec".
	Field string
	Pos   int    // byte offset in Spec
	Msg   string // what is wrong, in a few words
}

// Error describes the problem, with the field, its offset and the spec.
func (e *SyntaxError) Error() string {
	return "cron: " + e.Field + " at offset " + strconv.Itoa(e.Pos) + " in " + strconv.Quote(e.Spec) + ": " + e.Msg
}

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// Parse parses a cron spec: five fields (minute hour day-of-month month
// day-of-week), six with a seconds field first, or a descriptor (@daily,
// @every 90s, ...); see the package documentation for the syntax. A
// "CRON_TZ=Zone " or "TZ=Zone " prefix (an IANA zone name, loaded with
// time.LoadLocation) sets the schedule's location; without one, Next works
// in the location of the time it is given.
//
// The error, if any, is a [*SyntaxError] wrapping [ErrSyntax]. A spec that
// can never fire, such as "0 0 30 2 *" (30 February), is an error.
func Parse(spec string) (*Schedule, error) {
	return ParseInLocation(spec, nil)
}

// ParseInLocation is Parse with loc as the schedule's location when the
// spec names none; a nil loc is the same as Parse.
func ParseInLocation(spec string, loc *time.Location) (*Schedule, error) {
	p := parser{spec: spec}
	s, err := p.parse(loc)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// A fieldKind describes one of the six time fields.
type fieldKind struct {
	name     string
	min, max int // values that may be written
	// last is where * and an open a/n end: max, except for weekdays,
	// where 7 may be written for Sunday but * means 0-6.
	last  int
	names []string // three-letter names of min, min+1, ... (months, weekdays)
}

var (
	secondField = fieldKind{name: "second", min: 0, max: 59, last: 59}
	minuteField = fieldKind{name: "minute", min: 0, max: 59, last: 59}
	hourField   = fieldKind{name: "hour", min: 0, max: 23, last: 23}
	domField    = fieldKind{name: "day of month", min: 1, max: 31, last: 31}
	monthField  = fieldKind{name: "month", min: 1, max: 12, last: 12,
		names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}}
	dowField = fieldKind{name: "day of week", min: 0, max: 7, last: 6,
		names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}}
)

// descriptors maps each descriptor to the six-field spec it stands for.
var descriptors = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@annually": "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@midnight": "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
}

type parser struct {
	spec string
}

func (p *parser) fail(field string, pos int, msg string) error {
	return &SyntaxError{Spec: p.spec, Field: field, Pos: pos, Msg: msg}
}

// A word is a run of non-blank bytes of the spec and its offset.
type word struct {
	text string
	pos  int
}

// words splits s[from:] at ASCII blanks.
func words(s string, from int) []word {
	var ws []word
	for i := from; i < len(s); {
		if isBlank(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && !isBlank(s[j]) {
			j++
		}
		ws = append(ws, word{s[i:j], i})
		i = j
	}
	return ws
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func (p *parser) parse(loc *time.Location) (*Schedule, error) {
	ws := words(p.spec, 0)
	if len(ws) == 0 {
		return nil, p.fail("spec", 0, "empty spec")
	}
	if zone, ok := zonePrefix(ws[0].text); ok {
		namePos := ws[0].pos + len(ws[0].text) - len(zone)
		if zone == "" {
			return nil, p.fail("location", namePos, "empty zone name")
		}
		l, err := time.LoadLocation(zone)
		if err != nil {
			return nil, p.fail("location", namePos, "unknown zone "+strconv.Quote(zone))
		}
		loc = l
		ws = ws[1:]
		if len(ws) == 0 {
			return nil, p.fail("spec", len(p.spec), "nothing after the zone")
		}
	}
	s := &Schedule{spec: p.spec, loc: loc}
	if strings.HasPrefix(ws[0].text, "@") {
		return s, p.descriptor(s, ws)
	}
	return s, p.fields(s, ws)
}

// zonePrefix returns the zone name of a "CRON_TZ=Zone" or "TZ=Zone" word.
func zonePrefix(w string) (string, bool) {
	for _, prefix := range [...]string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(w, prefix) {
			return w[len(prefix):], true
		}
	}
	return "", false
}

func (p *parser) descriptor(s *Schedule, ws []word) error {
	name := strings.ToLower(ws[0].text)
	if name == "@every" {
		if len(ws) != 2 {
			return p.fail("duration", ws[0].pos, "@every takes one duration, as in \"@every 90s\"")
		}
		d, err := time.ParseDuration(ws[1].text)
		switch {
		case err != nil:
			return p.fail("duration", ws[1].pos, "not a Go duration (such as 90s, 1h30m)")
		case d < time.Second:
			return p.fail("duration", ws[1].pos, "must be at least 1s")
		case d%time.Second != 0:
			return p.fail("duration", ws[1].pos, "must be a whole number of seconds")
		}
		s.every = d
		return nil
	}
	equiv, ok := descriptors[name]
	if !ok {
		return p.fail("descriptor", ws[0].pos, "unknown descriptor "+strconv.Quote(ws[0].text)+
			" (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every)")
	}
	if len(ws) > 1 {
		return p.fail("descriptor", ws[1].pos, "unexpected text after "+ws[0].text)
	}
	// The equivalent spec is known to be valid; its words' offsets are
	// never reported.
	return p.fields(s, words(equiv, 0))
}

// fields parses five or six time fields into s.
func (p *parser) fields(s *Schedule, ws []word) error {
	switch {
	case len(ws) == 7:
		return p.fail("year", ws[6].pos, "a year field is not supported")
	case len(ws) > 7:
		return p.fail("spec", ws[7].pos, "too many fields: want 5, or 6 with seconds first")
	case len(ws) < 5:
		return p.fail("spec", len(p.spec), "want 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first; found "+strconv.Itoa(len(ws)))
	}
	kinds := []*fieldKind{&secondField, &minuteField, &hourField, &domField, &monthField, &dowField}
	if len(ws) == 5 {
		kinds = kinds[1:]
	}
	var bits [6]uint64
	var star, repeats [6]bool
	bits[0] = 1 // seconds default to 0
	for i, k := range kinds {
		j := i + 6 - len(kinds)
		var err error
		if bits[j], star[j], repeats[j], err = p.field(k, ws[i]); err != nil {
			return err
		}
	}
	if bits[5]&(1<<7) != 0 { // 7 is Sunday
		bits[5] = bits[5]&^(1<<7) | 1
	}
	s.second, s.minute = bits[0], bits[1]
	s.hour, s.dom = uint32(bits[2]), uint32(bits[3])
	s.month, s.dow = uint16(bits[4]), uint8(bits[5])
	s.domOrDow = !star[3] && !star[5]
	s.fixed = !repeats[0] && !repeats[1] && !repeats[2]
	s.fillDays()
	if !s.canFire() {
		domPos := ws[len(ws)-3].pos
		return p.fail("day of month", domPos, "never fires: no month in the month field has day "+
			strconv.Itoa(lowestBit(uint64(s.dom))))
	}
	return nil
}

// field parses one comma-separated field. star reports an item that is *
// or ? with no step above 1 (robfig/cron's rule, which decides how the two
// day fields combine); repeats reports a *, ? or / anywhere in the field.
func (p *parser) field(k *fieldKind, w word) (bits uint64, star, repeats bool, err error) {
	pos := w.pos
	for item := range strings.SplitSeq(w.text, ",") {
		if item == "" {
			return 0, false, false, p.fail(k.name, pos, "empty list item")
		}
		b, st, rep, err := p.item(k, item, pos)
		if err != nil {
			return 0, false, false, err
		}
		bits |= b
		star = star || st
		repeats = repeats || rep
		pos += len(item) + 1
	}
	return bits, star, repeats, nil
}

// item parses one list item: *, ?, a value or a range a-b, each optionally
// followed by /step. A value with a step, a/n, runs to the field's end.
func (p *parser) item(k *fieldKind, item string, pos int) (bits uint64, star, repeats bool, err error) {
	rng, stepText, hasStep := strings.Cut(item, "/")
	step := 1
	if hasStep {
		repeats = true
		stepPos := pos + len(rng) + 1
		if strings.Contains(stepText, "/") {
			return 0, false, false, p.fail(k.name, stepPos+strings.Index(stepText, "/"), "more than one /")
		}
		n, ok := number(stepText)
		if !ok {
			return 0, false, false, p.fail(k.name, stepPos, "step "+strconv.Quote(stepText)+" is not a number")
		}
		if n < 1 || n > k.last-k.min {
			return 0, false, false, p.fail(k.name, stepPos, "step "+stepText+" out of range 1-"+strconv.Itoa(k.last-k.min))
		}
		step = n
	}
	var lo, hi int
	if rng == "*" || rng == "?" {
		lo, hi = k.min, k.last
		star = step == 1
		repeats = true
	} else {
		loText, hiText, isRange := strings.Cut(rng, "-")
		if lo, err = p.value(k, loText, pos); err != nil {
			return 0, false, false, err
		}
		hi = lo
		switch {
		case isRange:
			hiPos := pos + len(loText) + 1
			if hi, err = p.value(k, hiText, hiPos); err != nil {
				return 0, false, false, err
			}
			if hi < lo {
				return 0, false, false, p.fail(k.name, pos, "range "+rng+" runs backwards (ranges do not wrap)")
			}
		case hasStep:
			hi = k.last
			if lo > hi { // 7/n in the weekday field
				hi = lo
			}
		}
	}
	for v := lo; v <= hi; v += step {
		bits |= 1 << v
	}
	return bits, star, repeats, nil
}

// value parses a number or a name of field k.
func (p *parser) value(k *fieldKind, text string, pos int) (int, error) {
	if n, ok := number(text); ok {
		if n < k.min || n > k.max {
			return 0, p.fail(k.name, pos, "value "+text+" out of range "+strconv.Itoa(k.min)+"-"+strconv.Itoa(k.max))
		}
		return n, nil
	}
	for i, name := range k.names {
		if strings.EqualFold(text, name) {
			return k.min + i, nil
		}
	}
	switch {
	case text == "":
		return 0, p.fail(k.name, pos, "missing value")
	case strings.Contains(text, "#"):
		return 0, p.fail(k.name, pos+strings.Index(text, "#"), "# (nth weekday of the month) is not supported")
	case strings.EqualFold(text, "LW") || strings.HasSuffix(text, "W") || strings.HasSuffix(text, "w"):
		return 0, p.fail(k.name, pos, "W (nearest weekday) is not supported")
	case strings.HasSuffix(text, "L") || strings.HasSuffix(text, "l"):
		return 0, p.fail(k.name, pos, "L (last day) is not supported")
	case text == "*" || text == "?":
		return 0, p.fail(k.name, pos, text+" cannot be part of a range")
	case k.names != nil:
		return 0, p.fail(k.name, pos, strconv.Quote(text)+" is neither a number nor a name such as "+strings.ToUpper(k.names[0]))
	}
	return 0, p.fail(k.name, pos, strconv.Quote(text)+" is not a number")
}

// number parses an unsigned decimal number of at most nine digits.
func number(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
