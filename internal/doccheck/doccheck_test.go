package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

var (
	testFunc = regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	citation = regexp.MustCompile(`\bTest[A-Z_]\w*`)
)

// testNames returns the names of every test function in the repository's
// _test.go files, in every module under root.
func testNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllSubmatch(src, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestDocsCiteExistingTests fails for every test name that README.md,
// doc/*.md or doc/design/*.md mentions and no _test.go file of the
// repository declares: a page that says "pinned by TestX" must point at a
// real test.
func TestDocsCiteExistingTests(t *testing.T) {
	exist := testNames(t)
	if len(exist) < 100 {
		t.Fatalf("found only %d test functions under %s: is the walk broken?", len(exist), root)
	}
	pages, err := filepath.Glob(filepath.Join(root, "doc", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	design, err := filepath.Glob(filepath.Join(root, "doc", "design", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(append(pages, design...), filepath.Join(root, "README.md"))
	cited := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range citations(string(text)) {
			cited++
			if !exist[name] {
				t.Errorf("%s cites %s, which no _test.go file in the repository declares", filepath.Base(page), name)
			}
		}
	}
	if cited == 0 {
		t.Error("no page cites a test: is the pattern broken?")
	}
}

// citations returns the test names text cites, sorted, once each. A name
// ending in an underscore is a prefix ("tests named TestDiff_...") and is
// not a citation.
func citations(text string) []string {
	var names []string
	for _, name := range citation.FindAllString(text, -1) {
		if !strings.HasSuffix(name, "_") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TestCitationPattern pins what counts as a cited test name.
func TestCitationPattern(t *testing.T) {
	text := "pinned by `TestSame_Wheel` and `TestDiff_ValuesPinnedInGoZero/drained`; " +
		"not testing/synctest, Testing, TestingT-like words, Tested, or the prefix TestDiff_... " +
		"TestSame_Wheel again."
	got := citations(text)
	if want := []string{"TestDiff_ValuesPinnedInGoZero", "TestSame_Wheel"}; !slices.Equal(got, want) {
		t.Errorf("citations %q, want %q", got, want)
	}
}

// corePackageDirs returns the directories of the core module that hold Go
// files: every directory under root except nested modules (a directory
// with its own go.mod) and testdata.
func corePackageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path != root {
			if name := d.Name(); name == ".git" || name == "testdata" || strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
		}
		if gos, _ := filepath.Glob(filepath.Join(path, "*.go")); len(gos) > 0 {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// undocumented returns the exported names that file declares without a
// doc comment, as "file:line: kind Name". A command (package main, such as
// an example program) exports nothing, so it is not checked.
func undocumented(fset *token.FileSet, f *ast.File) []string {
	if f.Name.Name == "main" {
		return nil
	}
	var missing []string
	report := func(n ast.Node, what string) {
		p := fset.Position(n.Pos())
		missing = append(missing, filepath.ToSlash(p.Filename)+":"+itoa(p.Line)+": "+what)
	}
	// fields checks the exported fields of a struct or the methods of an
	// interface: each needs a comment above it or at the end of its line.
	fields := func(owner string, list *ast.FieldList) {
		if list == nil {
			return
		}
		for _, f := range list.List {
			for _, n := range f.Names {
				if n.IsExported() && f.Doc == nil && f.Comment == nil {
					report(n, owner+"."+n.Name)
				}
			}
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv == nil {
				report(d, "func "+d.Name.Name)
			} else if recv := receiverName(d.Recv.List[0].Type); ast.IsExported(recv) {
				report(d, "method "+recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			// A lone declaration may carry its doc on the GenDecl; in a
			// group, a type needs its own, and a constant or variable may
			// rely on the group's (an enum's block comment).
			lone := d.Lparen == token.NoPos
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					if s.Doc == nil && !(lone && d.Doc != nil) {
						report(s, "type "+s.Name.Name)
					}
					switch tt := s.Type.(type) {
					case *ast.StructType:
						fields(s.Name.Name, tt.Fields)
					case *ast.InterfaceType:
						fields(s.Name.Name, tt.Methods)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
							report(n, d.Tok.String()+" "+n.Name)
						}
					}
				}
			}
		}
	}
	return missing
}

// receiverName is the name of a method's receiver type: T for T, *T, T[X]
// and *T[X, Y].
func receiverName(recv ast.Expr) string {
	if star, ok := recv.(*ast.StarExpr); ok {
		recv = star.X
	}
	switch r := recv.(type) {
	case *ast.IndexExpr:
		recv = r.X
	case *ast.IndexListExpr:
		recv = r.X
	}
	if id, ok := recv.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestExportedNamesDocumented fails for every exported name of the core
// module's importable packages (non-test files, commands excluded) that
// has no doc comment: each one is part of a contract (see the
// repository's style guide) and go doc shows it.
func TestExportedNamesDocumented(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	for _, dir := range corePackageDirs(t) {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files++
			for _, m := range undocumented(fset, f) {
				t.Errorf("%s has no doc comment", m)
			}
		}
	}
	if files < 20 {
		t.Fatalf("checked only %d files: is the walk broken?", files)
	}
}

// TestUndocumentedFindsEachKind: the checker reports each kind of
// undocumented exported name, and accepts each documented form.
func TestUndocumentedFindsEachKind(t *testing.T) {
	const src = `package p

func F() {}

// G is documented.
func G() {}

type T struct {
	Field int
	Tagged int // Tagged is documented at the end of its line.
	hidden int
}

func (T) M() {}

func (*T) unexported() {}

type unexported struct{ Field int }

func (unexported) M() {}

// Grouped types need their own comments.
type (
	U interface{ Method() }
	// V is documented.
	V[X any] struct{}
)

func (V[X]) N() {}

// Enum values may rely on the group's comment.
const (
	A = iota
	B
)

var (
	C = 1
	// D is documented.
	D = 2
)
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range undocumented(fset, f) {
		_, what, _ := strings.Cut(m, ": ")
		got = append(got, what)
	}
	want := []string{"func F", "type T", "T.Field", "method T.M", "type U", "U.Method", "method V.N", "var C"}
	if !slices.Equal(got, want) {
		t.Errorf("undocumented reported\n%q\nwant\n%q", got, want)
	}
}
