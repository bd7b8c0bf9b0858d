package natsjobs

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// nats-server stays out of every binary that does not ask for it: package
// natsjobs, a URL-only worker (examples/worker), the natsjobs command and
// the console link none of it; package embedded does. Before the embedded
// server had its own package every natsjobs program linked it: the
// URL-only worker was 25.6 MB (17.9 MB stripped), now 10.3 MB (7.2 MB).
func TestURLWorkerLinksNoServer(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go command not found: %v", err)
		}
		t.Skipf("go command not found: %v", err)
	}
	const server = "github.com/nats-io/nats-server/"
	deps := func(pkg string) []string {
		out, err := exec.Command(gotool, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		var found []string
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, server) {
				found = append(found, p)
			}
		}
		return found
	}
	for _, pkg := range []string{".", "./examples/worker", "./cmd/natsjobs", "./console"} {
		if got := deps(pkg); len(got) != 0 {
			t.Errorf("%s links %s (%d packages), want none", pkg, got[0], len(got))
		}
	}
	// The control: the check sees the server where it is.
	if got := deps("./embedded"); len(got) == 0 {
		t.Errorf("./embedded links no %s..., want it (is the check broken?)", server)
	}
}
