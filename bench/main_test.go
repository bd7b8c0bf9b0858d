package bench

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
)

// initialProcs is GOMAXPROCS as the imported packages' init functions left
// it (go-zero's core/sysx runs automaxprocs at init).
var initialProcs = runtime.GOMAXPROCS(0)

// benchProcs is the GOMAXPROCS every benchmark in this module runs with,
// unless -test.cpu says otherwise: issue 2 compares implementations on two
// cores. Setting it explicitly also turns off the runtime's periodic
// re-reading of the cgroup CPU limit.
const benchProcs = 2

func TestMain(m *testing.M) {
	flag.Parse()
	runtime.GOMAXPROCS(benchProcs)
	if testing.Verbose() && initialProcs != benchProcs {
		fmt.Fprintf(os.Stderr, "bench: GOMAXPROCS was %d after init, set to %d\n", initialProcs, benchProcs)
	}
	os.Exit(m.Run())
}
