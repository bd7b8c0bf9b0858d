package idletimeout

import (
	"flag"
	"os"
	"runtime"
	"testing"
)

// TestMain lets the tests marked parallel, on loopback sockets with the
// real clock, run 8 at a time unless -parallel is given: they mostly wait
// on their readers' pace (2 s of CPU in 13 s), and at the default,
// GOMAXPROCS, they took 29 s here instead of 13 s on 2 cores. Not on 386,
// which CI runs under qemu-user: emulated, they are CPU-bound, and 8 at a
// time beside another package TestSlowSteadyReaderNotReaped failed once.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set && runtime.GOARCH != "386" {
		flag.Set("test.parallel", "8")
	}
	os.Exit(m.Run())
}
