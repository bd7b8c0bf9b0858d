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
	t.Parallel()
	gotool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go command not found: %v", err)
		}
		t.Skipf("go command not found: %v", err)
	}
	const server = "github.com/nats-io/nats-server/"
	pkgs := []string{".", "./examples/worker", "./cmd/natsjobs", "./console", "./embedded"}
	out, err := exec.Command(gotool, append([]string{"list", "-f", `{{.ImportPath}} {{join .Deps " "}}`}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(pkgs) {
		t.Fatalf("go list printed %d lines for %d packages:\n%s", len(lines), len(pkgs), out)
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg, linked := fields[0], 0
		for _, dep := range fields[1:] {
			if strings.HasPrefix(dep, server) {
				linked++
			}
		}
		switch {
		case strings.HasSuffix(pkg, "/embedded"):
			// The control: the check sees the server where it is.
			if linked == 0 {
				t.Errorf("%s links no %s..., want it (is the check broken?)", pkg, server)
			}
		case linked != 0:
			t.Errorf("%s links %d packages of %s..., want none", pkg, linked, server)
		}
	}
}
