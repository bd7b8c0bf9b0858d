// Command quickstart shows the timing wheel at work: timers set, moved,
// removed and fired, each line stamped with the time since start.
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
