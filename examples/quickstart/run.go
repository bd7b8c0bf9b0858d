package main

import (
	"fmt"
	"io"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// run narrates the demo to out. It takes about half a second.
func run(out io.Writer) error {
	start := time.Now()
	stamp := func() string {
		return fmt.Sprintf("%4dms", time.Since(start).Round(10*time.Millisecond).Milliseconds())
	}

	fired := make(chan string)
	tw, err := timingwheel.New(10*time.Millisecond, 64, func(key string, value string) {
		fired <- fmt.Sprintf("%s  fired %-8s %s", stamp(), key, value)
	})
	if err != nil {
		return err
	}
	defer tw.Stop()

	steps := []struct {
		what string
		do   func() error
	}{
		{"set   tea      in 100ms", func() error { return tw.SetTimer("tea", "steeped", 100*time.Millisecond) }},
		{"set   pasta    in 300ms", func() error { return tw.SetTimer("pasta", "al dente", 300*time.Millisecond) }},
		{"set   alarm    in 200ms", func() error { return tw.SetTimer("alarm", "ring", 200*time.Millisecond) }},
		{"move  pasta    to 400ms", func() error { return tw.MoveTimer("pasta", 400*time.Millisecond) }},
		{"remove alarm", func() error { return tw.RemoveTimer("alarm") }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s  %s\n", stamp(), s.what)
	}
	fmt.Fprintf(out, "%s  pending: %d\n", stamp(), tw.Len())
	for range 2 {
		fmt.Fprintln(out, <-fired)
	}
	fmt.Fprintf(out, "%s  pending: %d\n", stamp(), tw.Len())
	return nil
}
