package main

import (
	"strings"
	"testing"
	"testing/synctest"
)

// TestQuickstartOutput runs the demo in a synctest bubble, where time only
// moves when every goroutine waits, so the narration is exact.
func TestQuickstartOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run(&out); err != nil {
			t.Fatalf("run: %v", err)
		}
		want := `   0ms  set   tea      in 100ms
   0ms  set   pasta    in 300ms
   0ms  set   alarm    in 200ms
   0ms  move  pasta    to 400ms
   0ms  remove alarm
   0ms  pending: 2
 100ms  fired tea      steeped
 400ms  fired pasta    al dente
 400ms  pending: 0
`
		if got := out.String(); got != want {
			t.Errorf("output:\n%s\nwant:\n%s", got, want)
		}
	})
}
