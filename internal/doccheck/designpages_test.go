package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// maxDesignLines is the most lines a design page may have (issue 22 item
// 4): a reader should hold a package's design after one page.
const maxDesignLines = 250

// pictureWithin is the line by which a design page's picture (its first
// fenced block) must have opened.
const pictureWithin = 30

// designLink matches a relative link to a page of doc/design/.
var designLink = regexp.MustCompile(`\]\(([a-z0-9-]+\.md)\)`)

// TestDesignPages checks the pages of doc/design/: each is at most
// maxDesignLines long, opens with a title and, within pictureWithin lines,
// its picture (a fenced block), followed by its "## Concepts" section, the
// first section after the picture (the index, README.md, excepted: it
// lists the pages instead); and the index links every page, so none is
// orphaned.
func TestDesignPages(t *testing.T) {
	dir := filepath.Join(root, "doc", "design")
	pages, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 2 {
		t.Fatalf("found %d pages in %s: is the glob broken?", len(pages), dir)
	}
	index, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, m := range designLink.FindAllStringSubmatch(string(index), -1) {
		linked[m[1]] = true
	}
	for _, page := range pages {
		name := filepath.Base(page)
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range designProblems(name, string(text)) {
			t.Errorf("doc/design/%s: %s", name, p)
		}
		if name != "README.md" && !linked[name] {
			t.Errorf("doc/design/README.md does not link %s", name)
		}
	}
}

// designProblems returns what breaks the rules of a design page in text.
func designProblems(name, text string) []string {
	var problems []string
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if n := len(lines); n > maxDesignLines {
		problems = append(problems, "has "+itoa(n)+" lines, want at most "+itoa(maxDesignLines))
	}
	if !strings.HasPrefix(lines[0], "# ") {
		problems = append(problems, "does not open with a # title")
	}
	picture, pictureEnd := -1, -1
	concepts := false
	next := "" // the first section heading after the picture
	for i, l := range lines {
		switch {
		case picture < 0 && strings.HasPrefix(l, "```"):
			picture = i + 1
		case picture >= 0 && pictureEnd < 0 && strings.HasPrefix(l, "```"):
			pictureEnd = i + 1
		case pictureEnd >= 0 && next == "" && strings.HasPrefix(l, "## "):
			next = l
		}
		if strings.HasPrefix(l, "## Concepts") {
			concepts = true
		}
	}
	if picture < 0 || picture > pictureWithin {
		problems = append(problems, "has no picture (a fenced block) within its first "+itoa(pictureWithin)+" lines")
	}
	switch {
	case name == "README.md":
	case !concepts:
		problems = append(problems, `has no "## Concepts" section`)
	case pictureEnd >= 0 && !strings.HasPrefix(next, "## Concepts"):
		problems = append(problems, `opens with `+strconv.Quote(next)+` after its picture, want its "## Concepts" section`)
	}
	return problems
}

// TestDesignProblemsFindsEachRule pins that each rule of designProblems
// can fail.
func TestDesignProblemsFindsEachRule(t *testing.T) {
	good := "# p\n\n```\npicture\n```\n\n## Concepts\n\n- a\n"
	if got := designProblems("p.md", good); len(got) != 0 {
		t.Errorf("a good page: %q, want no problem", got)
	}
	cases := []struct {
		name, text string
	}{
		{"no title", strings.TrimPrefix(good, "# p\n")},
		{"no picture", strings.ReplaceAll(good, "```", "")},
		{"late picture", strings.Replace(good, "\n\n```", strings.Repeat("\n", pictureWithin)+"```", 1)},
		{"no concepts", strings.ReplaceAll(good, "## Concepts", "## Words")},
		{"concepts not first", strings.Replace(good, "## Concepts", "## History\n\n## Concepts", 1)},
		{"too long", good + strings.Repeat("line\n", maxDesignLines)},
	}
	for _, c := range cases {
		if got := designProblems("p.md", c.text); len(got) != 1 {
			t.Errorf("%s: %q, want one problem", c.name, got)
		}
	}
	if got := designProblems("README.md", strings.ReplaceAll(good, "## Concepts", "## Pages")); len(got) != 0 {
		t.Errorf("the index without concepts: %q, want no problem", got)
	}
}

// designRef matches a mention of a design page in Go source.
var designRef = regexp.MustCompile(`doc/design/([a-z0-9-]+\.md)`)

// TestEveryPackageNamesItsDesignPage keeps the reading path of issue 22
// item 4 (README, package doc, design page, code) unbroken: every public
// package with an API (a non-test file besides doc.go) names, somewhere in
// its non-test files, a page of doc/design/ that exists. Ten packages
// (jobs/cron, both embedded packages, the console, the exporters and
// their NATS and shared-cache subpackages) named none.
func TestEveryPackageNamesItsDesignPage(t *testing.T) {
	pkgs := map[string]*pkgPages{}
	for _, s := range sources(t) {
		if !s.public() {
			continue
		}
		p := pkgs[s.pkg]
		if p == nil {
			p = &pkgPages{}
			pkgs[s.pkg] = p
		}
		if !strings.HasSuffix(s.rel, "/doc.go") {
			p.api = true
		}
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(s.rel)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range designRef.FindAllStringSubmatch(string(text), -1) {
			p.pages = append(p.pages, m[1])
		}
	}
	if len(pkgs) < 10 {
		t.Fatalf("found %d public packages: is the walk broken?", len(pkgs))
	}
	for _, problem := range pageProblems(pkgs, func(page string) bool {
		_, err := os.Stat(filepath.Join(root, "doc", "design", page))
		return err == nil
	}) {
		t.Error(problem)
	}
}

// pkgPages is what TestEveryPackageNamesItsDesignPage finds in a package.
type pkgPages struct {
	api   bool     // it has a non-test file besides doc.go
	pages []string // the doc/design pages its files name
}

// pageProblems returns, sorted, each package of pkgs with an API that
// names no design page, or names one for which exists is false.
func pageProblems(pkgs map[string]*pkgPages, exists func(page string) bool) []string {
	var out []string
	for name, p := range pkgs {
		switch {
		case !p.api:
		case len(p.pages) == 0:
			out = append(out, name+": its package doc names no page of doc/design/ (the reading path goes package doc, design page, code)")
		default:
			for _, page := range p.pages {
				if !exists(page) {
					out = append(out, name+": names doc/design/"+page+", which does not exist")
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestPageProblemsFindsEach pins that pageProblems can fail: a package
// naming no page, and one naming a missing page, are reported; a package
// with no API (a doc.go over tests only) and one naming a page are not.
func TestPageProblemsFindsEach(t *testing.T) {
	pkgs := map[string]*pkgPages{
		"good":    {api: true, pages: []string{"jobs.md"}},
		"none":    {api: true},
		"missing": {api: true, pages: []string{"gone.md"}},
		"e2e":     {},
	}
	got := pageProblems(pkgs, func(page string) bool { return page == "jobs.md" })
	if len(got) != 2 || !strings.HasPrefix(got[0], "missing: ") || !strings.HasPrefix(got[1], "none: ") {
		t.Errorf("got %q, want one problem for missing and one for none", got)
	}
}
