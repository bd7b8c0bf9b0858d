package doccheck

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	goLine     = regexp.MustCompile(`(?m)^go (\d+\.\d+)(\.\d+)?\s*$`)
	goVersion  = regexp.MustCompile(`\bGo (\d+\.\d+)\b`)
	backquoted = regexp.MustCompile("`([^`]+)`")
)

// TestReadmeNamesGoVersions fails when the README's table of Go versions
// (after the line "<!-- doccheck: go versions -->") and the go lines of the
// modules' go.mod files disagree: every module of the repository, the core
// ("/") and each nested one (its directory, "natsjobs/"), must have one row
// naming the Go release its go line asks for.
func TestReadmeNamesGoVersions(t *testing.T) {
	// The modules: every go.mod under root, by directory.
	want := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		m := goLine.FindSubmatch(src)
		if m == nil {
			t.Errorf("%s has no go line", path)
			return nil
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		key := "/"
		if dir != "." {
			key = filepath.ToSlash(dir) + "/"
		}
		want[key] = string(m[1])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 2 {
		t.Fatalf("found %d go.mod files under %s, want the core and the nested modules", len(want), root)
	}

	// The README's table: module directories in backquotes in the first
	// cell, "Go X.Y" in the second.
	f, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "<!-- doccheck: go versions -->" {
			in = true
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		v := goVersion.FindStringSubmatch(cells[1])
		if v == nil {
			continue // the header row
		}
		for _, m := range backquoted.FindAllStringSubmatch(cells[0], -1) {
			dir := m[1]
			if prev, ok := got[dir]; ok {
				t.Errorf("README names %s twice (Go %s and Go %s)", dir, prev, v[1])
			}
			got[dir] = v[1]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal(`README.md has no table of Go versions after "<!-- doccheck: go versions -->"`)
	}
	for dir, v := range want {
		switch g, ok := got[dir]; {
		case !ok:
			t.Errorf("README's table of Go versions has no row for the module in %s (its go.mod says go %s)", dir, v)
		case g != v:
			t.Errorf("README says %s needs Go %s, its go.mod says go %s", dir, g, v)
		}
	}
	for dir, v := range got {
		if _, ok := want[dir]; !ok {
			t.Errorf("README names Go %s for %s, which holds no go.mod", v, dir)
		}
	}
}
