// Command quickstart is a narrated tour of ttlkit: timers set, moved,
// removed and fired by the timing wheel; cache entries that expire, are
// refreshed, evicted and loaded through; and an idle connection reaped.
// Each line is stamped with the time since its section began.
//
//	go run ./examples/quickstart
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}
