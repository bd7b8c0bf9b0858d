package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	goFence     = regexp.MustCompile("(?s)```go\n(.*?\n)```")
	exampleLink = regexp.MustCompile(`\]\(([\w/]+/testing_example_test\.go)\)`)
)

// TestReadmeTestingSection checks the README's "Testing your code"
// section against the files it shows: each Go block in it is, verbatim, a
// piece of one package's testing_example_test.go (so it compiles and runs
// as that package's test), every such file is linked from the section, and
// every link points at a file that exists.
func TestReadmeTestingSection(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Testing your code\n")
	if !ok {
		t.Fatal("README.md has no ## Testing your code section")
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}

	files, err := filepath.Glob(filepath.Join(root, "*", "testing_example_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d testing_example_test.go files, want one per package (cache, timingwheel, jobs, idletimeout)", len(files))
	}
	var sources []string
	var paths []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, string(src))
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.ToSlash(rel))
	}

	blocks := goFence.FindAllStringSubmatch(section, -1)
	if len(blocks) == 0 {
		t.Error("the Testing your code section shows no Go block")
	}
	for _, b := range blocks {
		if !slices.ContainsFunc(sources, func(src string) bool { return strings.Contains(src, b[1]) }) {
			t.Errorf("README block is not a verbatim piece of any testing_example_test.go:\n%s", b[1])
		}
	}

	var linked []string
	for _, m := range exampleLink.FindAllStringSubmatch(section, -1) {
		linked = append(linked, m[1])
		if !slices.Contains(paths, m[1]) {
			t.Errorf("the Testing your code section links %s, which does not exist", m[1])
		}
	}
	for _, p := range paths {
		if !slices.Contains(linked, p) {
			t.Errorf("the Testing your code section does not link %s", p)
		}
	}
}
