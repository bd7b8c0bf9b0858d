package idletimeout

import (
	"errors"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// TestFirstConnReapedWithinBound pins the bound for the first connection
// on a wheel whose clock is not running yet: it used to start a full
// resolution late and reap at timeout + 3 × Resolution.
func TestFirstConnReapedWithinBound(t *testing.T) {
	const timeout, res = 100 * time.Millisecond, 10 * time.Millisecond
	for _, offset := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 9 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			time.Sleep(offset) // wrap at various points between ticks
			a, b := net.Pipe()
			defer b.Close()
			c, err := Wrap(a, Config{IdleTimeout: timeout, Resolution: res})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			_, err = c.Read(make([]byte, 1))
			idle := time.Since(start)
			if !errors.Is(err, ErrIdle) {
				t.Fatalf("offset %v: Read error %v, want ErrIdle", offset, err)
			}
			if idle < timeout || idle > timeout+2*res {
				t.Errorf("offset %v: reaped after %v, want within [%v, %v]", offset, idle, timeout, timeout+2*res)
			}
		})
	}
}
