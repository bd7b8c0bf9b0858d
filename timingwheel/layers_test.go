package timingwheel

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fileLayers ranks the package's files as doc/design/timingwheel.md draws
// them: the pure wheel and the package's vocabulary, then the driver (the
// owner goroutine, split by concept over five files), then the two APIs on
// it. A file may use names declared in its own layer or below, never above:
// issue 22 found driver.go using names of keyed.go, and stats.go declared
// the APIs' Stats methods.
var fileLayers = map[string]int{
	"doc.go": 0, "wheel.go": 0, "options.go": 0, "panic.go": 0,
	"clock.go": 1, "inbox.go": 1, "protocol.go": 1, "driver.go": 1, "stats.go": 1,
	"scheduler.go": 2, "queue.go": 2, "keyed.go": 2,
}

// TestFilesUseNoNameFromALayerAbove type-checks the package's non-test
// files (imports stubbed out: only the package's own names matter) and
// fails for every use, in a file, of a name declared in a file of a
// higher layer, and for every file fileLayers does not rank.
func TestFilesUseNoNameFromALayerAbove(t *testing.T) {
	for _, p := range upwardUses(t, ".", fileLayers) {
		t.Error(p)
	}
}

// TestUpwardUsesFindsOne shows that the scan behind
// TestFilesUseNoNameFromALayerAbove can fail: a lower file that uses a type
// and a method declared in a higher one is reported, twice.
func TestUpwardUsesFindsOne(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"low.go":  "package p\n\ntype low struct{}\n\nfunc (l *low) use(h *high) { h.up() }\n",
		"high.go": "package p\n\nimport \"fmt\"\n\ntype high struct{ l low }\n\nfunc (h *high) up() { fmt.Println(h.l) }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := upwardUses(t, dir, map[string]int{"low.go": 0, "high.go": 1})
	want := []string{"low.go uses high (declared in high.go, a layer above)", "low.go uses up (declared in high.go, a layer above)"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// upwardUses returns, sorted, each use in dir's non-test files of a name
// declared in a file of a higher layer, and each file layers does not rank.
func upwardUses(t *testing.T, dir string, layers map[string]int) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	var out []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if _, ok := layers[filepath.Base(name)]; !ok {
			out = append(out, filepath.Base(name)+" has no layer in fileLayers: rank it")
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) < 2 {
		t.Fatalf("parsed %d files in %s: is the glob broken?", len(files), dir)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{
		// Every import is an empty package: uses of its members fail to
		// check, and are ignored, while the package's own names resolve.
		Importer: importerFunc(func(p string) (*types.Package, error) {
			pkg := types.NewPackage(p, path.Base(p))
			pkg.MarkComplete()
			return pkg, nil
		}),
		Error: func(error) {},
	}
	pkg, _ := conf.Check("p", fset, files, info)
	seen := map[string]bool{}
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		if v, ok := obj.(*types.Var); ok && !v.IsField() && v.Parent() != pkg.Scope() {
			continue // a local variable or parameter
		}
		if _, ok := obj.(*types.TypeName); ok && obj.Parent() != pkg.Scope() {
			continue // a type parameter
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		lf, okf := layers[from]
		lt, okt := layers[to]
		if okf && okt && lt > lf {
			msg := from + " uses " + obj.Name() + " (declared in " + to + ", a layer above)"
			if !seen[msg] {
				seen[msg] = true
				out = append(out, msg)
			}
		}
	}
	slices.Sort(out)
	return out
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
