// Command orders cancels orders left unpaid: each placed order arms a
// one-shot job on a jobs.Scheduler, paying cancels it, and a timeout
// that fires cancels the order and releases its stock, with retries and
// a dead-letter alert if the inventory service keeps failing.
//
// The demo narrates three orders over a 15-minute payment window, played
// in 3 seconds by default (-window sets the real window). Its stamps are
// story time and its first line says so; durations within lines are real:
//
//	go run ./examples/orders
//	go run ./examples/orders -window 15m
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	window := flag.Duration("window", 3*time.Second, "payment window (the story's 15 minutes)")
	flag.Parse()
	if err := run(os.Stdout, *window); err != nil {
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(1)
	}
}
