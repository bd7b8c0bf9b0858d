// Command workflow runs workflow steps as jobs: a step retried with
// backoff, a step that fails for good and goes to the dead-letter
// callback, a step bounded by a per-attempt timeout, and a nightly cron
// job.
//
//	go run ./examples/workflow
//
// The test runs the story with a 30-second identity check and the
// clean-up at 02:00 UTC, on a synctest clock; go run shortens the check to
// 3 seconds and runs the clean-up at the next multiple of 15 seconds.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	if err := run(os.Stdout, config{VerifyTimeout: 3 * time.Second, Nightly: "*/15 * * * * *"}); err != nil {
		fmt.Fprintln(os.Stderr, "workflow:", err)
		os.Exit(1)
	}
}
