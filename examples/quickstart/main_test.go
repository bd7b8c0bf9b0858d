package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
)

// want is the tour's narration with exact time, as the test sees it.
const want = `timingwheel (10ms ticks): timers fire on the first tick at or after their deadline
    0ms  set    tea      in 100ms
    0ms  set    pasta    in 300ms
    0ms  set    alarm    in 200ms
    0ms  move   pasta    to 400ms
    0ms  remove alarm
    0ms  pending: 2
  110ms  fired  tea      steeped
  410ms  fired  pasta    al dente
  410ms  pending: 0

cache: entries live for their TTL (100ms); Set and Touch restart it
    0ms  set    alice    tea
    0ms  set    bob      coffee
   50ms  get    alice    hit: tea
   60ms  touch  bob      his TTL restarts, value kept
  100ms  get    alice    miss: expired on time
  120ms  get    bob      hit: coffee, past his first deadline
  160ms  get    bob      miss: expired 100ms after his refresh
  200ms  len    0: the wheel has reclaimed both

cache: with Limit 2, the least recently used entry makes room
    0ms  set    a, b
    0ms  get    a        a is now recently used
    0ms  set    c        evicts b (Evicted)
    0ms  held   a, c

cache: Take loads a missing key once, however many callers wait
    0ms  take   user:7   from two goroutines at once
    0ms  fetch  user:7   from the database, which takes 50ms
   50ms  took   user:7   Ada and Ada, with 1 fetch
   50ms  take   user:7   Ada from the cache, still 1 fetch

idletimeout: connections silent for 100ms are closed
    0ms  open   chatty, quiet; chatty's client writes every 30ms
  110ms  quiet  closed after 0 reads: idletimeout: read: connection closed after idle timeout
  200ms  chatty's client hangs up
  200ms  chatty closed after 6 reads: EOF
`

// TestQuickstartOutput runs the tour in a synctest bubble, where time only
// moves when every goroutine waits, so the narration is exact.
func TestQuickstartOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run(&out); err != nil {
			t.Fatalf("run: %v", err)
		}
		if got := out.String(); got != want {
			t.Errorf("output:\n%s\nwant:\n%s", got, want)
		}
	})
}

// stampRE matches a line's stamp.
var stampRE = regexp.MustCompile(`^ *(\d+)ms  `)

// splitStamps returns out's lines with their stamps removed, and the stamps
// in milliseconds (-1 for a line without one).
func splitStamps(out string) (lines []string, stamps []int) {
	for _, l := range strings.Split(out, "\n") {
		m := stampRE.FindStringSubmatch(l)
		if m == nil {
			lines, stamps = append(lines, l), append(stamps, -1)
			continue
		}
		ms, _ := strconv.Atoi(m[1])
		lines, stamps = append(lines, l[len(m[0]):]), append(stamps, ms)
	}
	return lines, stamps
}

// TestQuickstartRealClock runs the tour as go run does and checks that it
// tells the same story: the same lines once stamps are removed, and no
// stamp earlier than in the exact run (how much later is not asserted: a
// loaded machine adds delay). Pacing on a real clock can slip under load
// and change the story (a hit seen after its deadline, say), so a run whose
// text differs is retried twice before the test fails; an early stamp fails
// at once.
func TestQuickstartRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about a second of real time")
	}
	wantLines, wantStamps := splitStamps(want)
	for attempt := 1; ; attempt++ {
		var out strings.Builder
		if err := run(&out); err != nil {
			t.Fatalf("run: %v", err)
		}
		got := out.String()
		lines, stamps := splitStamps(got)
		if strings.Join(lines, "\n") != strings.Join(wantLines, "\n") {
			if attempt < 3 {
				t.Logf("attempt %d: text differs, retrying:\n%s", attempt, got)
				continue
			}
			t.Fatalf("text differs in every attempt; last output:\n%s\nwant, stamps aside:\n%s", got, want)
		}
		for i := range stamps {
			if stamps[i] < wantStamps[i] {
				t.Errorf("line %d at %dms, want not before %dms: %s", i+1, stamps[i], wantStamps[i], lines[i])
			}
		}
		return
	}
}
