package idletimeout

import (
	"flag"
	"os"
	"runtime"
	"testing"
)

// TestMain lets the tests marked parallel, on loopback sockets with the
// real clock, run 8 at a time unless -parallel is given: they mostly wait
// on their readers' pace, with margins of 5 times or more (the write-rate
// tests, the handshake), and at the default, GOMAXPROCS, they take turns.
// The zero-copy and reaping tests, whose timeouts are 300-500 ms, stay
// serial: beside the others under -race at load 5,
// TestReadFromFileSlowReaderNotReaped's writer was reaped. Not on 386,
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
