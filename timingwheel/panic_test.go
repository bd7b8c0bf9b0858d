package timingwheel_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// TestPanicErrorErrorAndUnwrap pins the one panic report's message and
// what errors.Is and errors.As see through it.
func TestPanicErrorErrorAndUnwrap(t *testing.T) {
	cause := errors.New("cause")
	cases := []struct {
		name     string
		e        *timingwheel.PanicError
		message  string
		unwraps  error
		isGoexit bool
	}{
		{"value with key", &timingwheel.PanicError{Key: "k1", Value: "boom", Stack: []byte("stack")},
			"ttlkit: panic (key k1): boom\n\nstack", nil, false},
		{"value without key", &timingwheel.PanicError{Value: 42, Stack: []byte("stack")},
			"ttlkit: panic: 42\n\nstack", nil, false},
		{"error value", &timingwheel.PanicError{Key: 7, Value: cause},
			"ttlkit: panic (key 7): cause\n\n", cause, false},
		{"goexit", &timingwheel.PanicError{Key: "k", Value: timingwheel.ErrGoexit},
			"ttlkit: panic (key k): " + timingwheel.ErrGoexit.Error() + "\n\n", timingwheel.ErrGoexit, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.e.Error(); got != c.message {
				t.Errorf("Error() = %q, want %q", got, c.message)
			}
			if got := c.e.Unwrap(); got != c.unwraps {
				t.Errorf("Unwrap() = %v, want %v", got, c.unwraps)
			}
			wrapped := fmt.Errorf("outer: %w", c.e)
			if got := errors.Is(wrapped, timingwheel.ErrGoexit); got != c.isGoexit {
				t.Errorf("errors.Is(wrapped, ErrGoexit) = %v, want %v", got, c.isGoexit)
			}
			var pe *timingwheel.PanicError
			if !errors.As(wrapped, &pe) || pe != c.e {
				t.Errorf("errors.As(wrapped) = %v, want the report itself", pe)
			}
		})
	}
}

// TestPanicHandlerReports checks the *PanicError a wheel hands its panic
// handler: for a panic and for a runtime.Goexit, in a keyed callback and
// in a Scheduler's fire, it carries the key (or the Timer's Value), the
// recovered value and the stack.
func TestPanicHandlerReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reports := make(chan *timingwheel.PanicError, 4)
		handler := timingwheel.WithPanicHandler(func(p *timingwheel.PanicError) { reports <- p })
		tw, err := timingwheel.New(time.Millisecond, 8, func(k string, how string) {
			if how == "goexit" {
				runtime.Goexit()
			}
			panic("boom " + k)
		}, handler)
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Stop()
		sched, err := timingwheel.NewScheduler(time.Millisecond, 8, func(tm *timingwheel.Timer[string], now time.Time) time.Duration {
			if tm.Value == "s-goexit" {
				runtime.Goexit()
			}
			panic("boom " + tm.Value)
		}, handler)
		if err != nil {
			t.Fatal(err)
		}
		defer sched.Stop()

		check := func(key string, goexit bool) {
			t.Helper()
			if err := tw.SetTimer(key, map[bool]string{true: "goexit", false: "panic"}[goexit], time.Millisecond); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond)
			expectReport(t, <-reports, key, goexit)
		}
		check("a", false)
		check("b", true)
		for _, v := range []string{"s-panic", "s-goexit"} {
			if err := sched.Schedule(&timingwheel.Timer[string]{Value: v}, time.Millisecond); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond)
			expectReport(t, <-reports, v, v == "s-goexit")
		}
	})
}

func expectReport(t *testing.T, pe *timingwheel.PanicError, key string, goexit bool) {
	t.Helper()
	if pe.Key != key {
		t.Errorf("Key = %v, want %q", pe.Key, key)
	}
	if got := errors.Is(pe, timingwheel.ErrGoexit); got != goexit {
		t.Errorf("key %s: errors.Is(ErrGoexit) = %v, want %v (Value %v)", key, got, goexit, pe.Value)
	}
	if !goexit && pe.Value != "boom "+key {
		t.Errorf("key %s: Value = %v, want %q", key, pe.Value, "boom "+key)
	}
	if !strings.Contains(string(pe.Stack), "panic_test.go") {
		t.Errorf("key %s: the stack does not show the callback:\n%s", key, pe.Stack)
	}
}
