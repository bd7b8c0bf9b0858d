package main

import (
	"fmt"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// tourWheel sets three timers, moves one later and removes another, then
// waits for the two that remain to fire: each on the first tick at or after
// its deadline, never earlier.
func tourWheel(n *narrator) error {
	// The callback runs on a worker goroutine; it hands its line to this
	// one, which does all the printing.
	fired := make(chan string)
	tw, err := timingwheel.New(step, 64, func(key, value string) {
		fired <- fmt.Sprintf("fired  %-8s %s", key, value)
	})
	if err != nil {
		return err
	}
	defer tw.Stop()
	// Act between two ticks, as a program on a real clock always does: the
	// wheel rounds each deadline up to the next tick, so the test, whose
	// clock is exact, prints what go run prints.
	n.at(time.Millisecond)

	steps := []struct {
		what string
		do   func() error
	}{
		{"set    tea      in 100ms", func() error { return tw.SetTimer("tea", "steeped", 100*time.Millisecond) }},
		{"set    pasta    in 300ms", func() error { return tw.SetTimer("pasta", "al dente", 300*time.Millisecond) }},
		{"set    alarm    in 200ms", func() error { return tw.SetTimer("alarm", "ring", 200*time.Millisecond) }},
		{"move   pasta    to 400ms", func() error { return tw.MoveTimer("pasta", 400*time.Millisecond) }},
		{"remove alarm", func() error { return tw.RemoveTimer("alarm") }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return err
		}
		n.say("%s", s.what)
	}
	n.say("pending: %d", tw.Len())
	for range 2 {
		line := <-fired
		n.say("%s", line)
	}
	n.say("pending: %d", tw.Len())
	return nil
}
