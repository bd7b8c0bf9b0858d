package main

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// want is the demo's narration over the real 15-minute window, exact.
const want = `  0m00s  orders: an unpaid order is cancelled 15m0s after it is placed (stamps: real time)
  0m00s  place  A-1001  timeouts armed: 1
  0m00s  place  A-1002  timeouts armed: 2
  5m00s  place  A-1003  timeouts armed: 3
  7m00s  pay    A-1001  paid, its timeout cancelled
 15m00s  cancel A-1002  unpaid after 15m0s
 15m00s  stock  A-1002  released (attempt 1)
 16m00s  pay    A-1002  refused: order not payable (cancelled)
 20m00s  cancel A-1003  unpaid after 15m0s
 20m00s  retry  A-1003  stock release failed (attempt 1): inventory service unavailable
 20m02s  stock  A-1003  released (attempt 2)
 25m00s  done   A-1001 paid, A-1002 cancelled, A-1003 cancelled; timeouts armed: 0
`

// TestDemoExact runs the demo with the real 15-minute window inside a
// synctest bubble, where time moves only when every goroutine waits.
func TestDemoExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run(&out, 15*time.Minute); err != nil {
			t.Fatalf("run: %v", err)
		}
		if got := out.String(); got != want {
			t.Errorf("output:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestDemoSaysStoryTime plays the story in go run's default window, 3 s:
// the stamps are the real-time run's, and the output says they are story
// time before any of them, beside durations in real time (issue 20: it did
// not say so).
func TestDemoSaysStoryTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run(&out, 3*time.Second); err != nil {
			t.Fatalf("run: %v", err)
		}
		head := "  0m00s  orders: stamps in story time: the story's 15m0s play in 3s of real time (-window 15m0s for real time)\n" +
			"  0m00s  orders: an unpaid order is cancelled 3s (15m0s of story time) after it is placed\n"
		_, rest, _ := strings.Cut(want, "\n")
		wantScaled := head + strings.ReplaceAll(rest, "unpaid after 15m0s", "unpaid after 3s")
		if got := out.String(); got != wantScaled {
			t.Errorf("output:\n%s\nwant:\n%s", got, wantScaled)
		}
	})
}

// TestPayAtDeadline pays at, just before and just after the deadline: the
// order ends paid with its stock kept, or cancelled with its stock
// released once and the payment refused, never both.
func TestPayAtDeadline(t *testing.T) {
	for _, offset := range []time.Duration{-time.Millisecond, -time.Nanosecond, 0, time.Nanosecond, time.Millisecond} {
		t.Run(offset.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var released atomic.Int32
				st := &Store{
					Timeout: 15 * time.Minute,
					Note:    func(string, ...any) {},
					Release: func(context.Context, string) error { released.Add(1); return nil },
				}
				if err := st.Open(); err != nil {
					t.Fatal(err)
				}
				if err := st.Place("A"); err != nil {
					t.Fatal(err)
				}
				time.Sleep(st.Timeout + offset)
				err := st.Pay("A")
				synctest.Wait()
				if err := st.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				status, n := st.Status("A"), released.Load()
				switch {
				case err == nil && (status != Paid || n != 0):
					t.Fatalf("paid, but status %v and %d releases", status, n)
				case err != nil && (status != Cancelled || n != 1 || !errors.Is(err, ErrNotPayable)):
					t.Fatalf("Pay = %v, status %v, %d releases; want ErrNotPayable, cancelled, 1", err, status, n)
				case offset < 0 && err != nil:
					t.Fatalf("payment %v before the deadline refused", -offset)
				case offset >= time.Millisecond && err == nil:
					t.Fatalf("payment %v after the deadline accepted", offset)
				}
			})
		})
	}
}
