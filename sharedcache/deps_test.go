package sharedcache

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// nats-server stays out of every binary that does not ask for it:
// package sharedcache and a URL-only instance (examples/client) link none
// of it; package embedded does. When package sharedcache started the
// embedded server itself, the URL-only instance was 18.3 MB stripped
// (26.1 MB unstripped), and is 7.5 MB (10.7 MB) now.
func TestURLClientLinksNoServer(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go command not found: %v", err)
		}
		t.Skipf("go command not found: %v", err)
	}
	const server = "github.com/nats-io/nats-server/"
	pkgs := []string{".", "./examples/client", "./embedded"}
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
