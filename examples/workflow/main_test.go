package main

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// want is the story's narration with exact time; a synctest bubble starts
// at midnight UTC, so the nightly clean-up runs two hours in.
const want = `      0s  signup:ada                 started
      0s  signup:ada/create-account  done (attempt 1)
      0s  signup:ada/charge-card     attempt 1 failed: card declined, try later
      1s  signup:ada/charge-card     attempt 2 failed: card declined, try later
      3s  signup:ada/charge-card     done (attempt 3)
      3s  signup:ada/send-welcome    attempt 1 failed: 550 mailbox does not exist
      3s  signup:ada/send-welcome    escalated to support after 1 attempt(s): 550 mailbox does not exist
     10s  signup:bob                 started
     10s  signup:bob/create-account  done (attempt 1)
     40s  signup:bob/verify-id       attempt 1 failed: context deadline exceeded
   1m11s  signup:bob/verify-id       attempt 2 failed: context deadline exceeded
   1m11s  signup:bob/verify-id       escalated to support after 2 attempt(s): timed out
  2h0m0s  cleanup                    removed abandoned sign-ups (cron "CRON_TZ=UTC 0 0 2 * * *")
  2h0m0s  stats                      4 succeeded, 3 retried, 2 dead letters
`

// TestStoryExact runs the story inside a synctest bubble, where time moves
// only when every goroutine waits, so the stamps are exact.
func TestStoryExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		if err := run(&out, config{VerifyTimeout: 30 * time.Second, Nightly: "CRON_TZ=UTC 0 0 2 * * *"}); err != nil {
			t.Fatalf("run: %v", err)
		}
		if got := out.String(); got != want {
			t.Errorf("output:\n%s\nwant:\n%s", got, want)
		}
	})
}
