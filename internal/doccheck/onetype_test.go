package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// source is one parsed non-test Go file of the repository.
type source struct {
	rel  string // slash path from the root, such as "cache/options.go"
	pkg  string // its directory, such as "cache"
	file *ast.File
	fset *token.FileSet
}

// public reports whether s's package can be imported from outside the
// repository: not under internal/, not a command.
func (s source) public() bool {
	return s.file.Name.Name != "main" && !slices.Contains(strings.Split(s.pkg, "/"), "internal")
}

// sources parses every non-test Go file of the repository, in every module
// (the core, natsjobs, prometheus, otel, sharedcache), except bench/, which
// holds the harness and its peers, and testdata.
func sources(t *testing.T) []source {
	t.Helper()
	var out []source
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || rel == "bench") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out = append(out, source{rel: rel, pkg: filepath.ToSlash(filepath.Dir(rel)), file: f, fset: fset})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("parsed only %d files under %s: is the walk broken?", len(out), root)
	}
	return out
}

// TestOnePanicGoexitAndHistogramType pins issue 22's counts in the public
// API of every module: one panic report type (timingwheel.PanicError, which
// panic handlers receive and failed loads and attempts return), one
// runtime.Goexit value (timingwheel.ErrGoexit, made once, in
// internal/pool), and one histogram type (timingwheel.Durations with
// timingwheel.DurationBounds). It looks at names and shapes, not meaning:
// an exported type named *Panic* or a struct with a Stack field (a panic
// report under another name), a struct with a Buckets field or an array or
// slice of integers (a histogram under another name), a variable or
// constant named *Goexit* or *Bounds, an error made from a message that
// names Goexit in any case, and an alias of any of them under another
// package's name (cache.PanicError, jobs.Durations and timingwheel.Lateness
// were such aliases, removed before 1.0). TestOneTypeFindsEachShape shows
// that each shape is found.
func TestOnePanicGoexitAndHistogramType(t *testing.T) {
	f := scanOneType(sources(t))
	check := func(what string, got []string, want ...string) {
		t.Helper()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", what, got, want)
		}
	}
	check("exported panic report types (named *Panic*, or a struct with a Stack field)", f.panics, "timingwheel.PanicError")
	check("exported histogram types (a struct with Buckets, or with an array or slice of integers)", f.hists, "timingwheel.Durations")
	check("exported values named *Goexit*", f.goexits, "timingwheel.ErrGoexit")
	check("exported bounds", f.bounds, "timingwheel.DurationBounds")
	check("second names (aliases) of a type, or of a Goexit or bounds value", f.aliases)
	if len(f.goexitErrors) != 1 || !strings.Contains(filepath.ToSlash(f.goexitErrors[0]), "internal/pool/") {
		t.Errorf("errors made for runtime.Goexit at %q, want one, in internal/pool", f.goexitErrors)
	}
}

// oneType is what scanOneType finds, each as "pkg.Name" (or a position,
// for goexitErrors).
type oneType struct {
	panics, hists, goexits, bounds, aliases, goexitErrors []string
}

// scanOneType finds the panic report, histogram, Goexit and bounds
// declarations of srcs (see TestOnePanicGoexitAndHistogramType).
func scanOneType(srcs []source) oneType {
	var panics, hists, goexits, bounds, aliases, goexitErrors []string
	for _, s := range srcs {
		for _, decl := range s.file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					if !s.public() || !sp.Name.IsExported() {
						continue
					}
					name := s.pkg + "." + sp.Name.Name
					if sp.Assign.IsValid() {
						one := func(n string) bool { return strings.Contains(n, "Panic") || n == "Durations" }
						switch target := sp.Type.(type) {
						case *ast.SelectorExpr:
							if x, ok := target.X.(*ast.Ident); ok && x.Name == "timingwheel" && one(target.Sel.Name) {
								aliases = append(aliases, name+" = timingwheel."+target.Sel.Name)
							}
						case *ast.Ident: // a second name in the same package
							if one(target.Name) {
								aliases = append(aliases, name+" = "+target.Name)
							}
						}
					}
					st, isStruct := sp.Type.(*ast.StructType)
					if strings.Contains(sp.Name.Name, "Panic") || isStruct && hasField(st, "Stack") {
						panics = append(panics, name)
					}
					if isStruct && (hasField(st, "Buckets") || hasIntArray(st)) {
						hists = append(hists, name)
					}
				case *ast.ValueSpec:
					if !s.public() {
						continue
					}
					for i, id := range sp.Names {
						name := s.pkg + "." + id.Name
						switch {
						case !id.IsExported():
						case strings.Contains(id.Name, "Goexit"):
							goexits = append(goexits, name)
						case strings.HasSuffix(id.Name, "Bounds"):
							bounds = append(bounds, name)
						}
						if i < len(sp.Values) && id.IsExported() {
							switch v := sp.Values[i].(type) {
							case *ast.SelectorExpr:
								if x, ok := v.X.(*ast.Ident); ok && x.Name == "timingwheel" &&
									(strings.Contains(v.Sel.Name, "Goexit") || strings.HasSuffix(v.Sel.Name, "Bounds")) {
									aliases = append(aliases, name+" = timingwheel."+v.Sel.Name)
								}
							case *ast.Ident: // a second name in the same package
								if strings.Contains(v.Name, "Goexit") || strings.HasSuffix(v.Name, "Bounds") {
									aliases = append(aliases, name+" = "+v.Name)
								}
							}
						}
					}
				}
			}
		}
		// A Goexit value is an error made from a message naming Goexit;
		// look everywhere, internal packages too.
		ast.Inspect(s.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok || !(x.Name == "errors" && sel.Sel.Name == "New" || x.Name == "fmt" && sel.Sel.Name == "Errorf") {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if msg, err := strconv.Unquote(lit.Value); err == nil && strings.Contains(strings.ToLower(msg), "goexit") {
					goexitErrors = append(goexitErrors, s.fset.Position(call.Pos()).String())
				}
			}
			return true
		})
	}
	return oneType{panics, hists, goexits, bounds, aliases, goexitErrors}
}

func hasField(st *ast.StructType, name string) bool {
	for _, f := range st.Fields.List {
		for _, id := range f.Names {
			if id.Name == name {
				return true
			}
		}
	}
	return false
}

// hasIntArray reports whether st has an exported field that is an array
// or a slice of an integer type: a histogram's buckets under any name.
func hasIntArray(st *ast.StructType) bool {
	for _, f := range st.Fields.List {
		if !slices.ContainsFunc(f.Names, func(id *ast.Ident) bool { return id.IsExported() }) {
			continue
		}
		if at, ok := f.Type.(*ast.ArrayType); ok {
			if id, ok := at.Elt.(*ast.Ident); ok && strings.Contains(id.Name, "int") {
				return true
			}
		}
	}
	return false
}

// TestOneGoroutineReplacement pins the one worker pool: replacing a
// goroutine that runtime.Goexit ended takes a deferred function that
// starts a goroutine, and that pattern appears only where it is meant to.
// Four pools (timingwheel's executor, jobs' workers, idletimeout's
// reapers, natsjobs' runners) and the cache's OnEvict delivery each had
// their own; now internal/pool's worker is the one copy, beside the
// timingwheel owner's restart (the owner is not a pool: it runs a
// Scheduler's callbacks on itself, by design).
func TestOneGoroutineReplacement(t *testing.T) {
	allowed := map[string]string{
		"internal/pool/pool.go": "the pool's worker",
		"timingwheel/driver.go": "the owner goroutine's restart",
	}
	found := map[string]bool{}
	for _, pos := range scanReplacements(sources(t)) {
		rel := filepath.ToSlash(pos.Filename)
		rel = strings.TrimPrefix(rel, root+"/")
		found[rel] = true
		if _, ok := allowed[rel]; !ok {
			t.Errorf("%s: a deferred function starts a goroutine (a worker replacing itself): run the work on internal/pool instead", pos)
		}
	}
	for rel, why := range allowed {
		if !found[rel] {
			t.Logf("%s (%s) no longer replaces a goroutine itself", rel, why)
		}
	}
	if !found["internal/pool/pool.go"] {
		t.Errorf("internal/pool/pool.go: no deferred replacement found; is the scan broken?")
	}
}

// scanReplacements returns where a deferred call starts a goroutine: a
// go statement in a deferred function literal, or a deferred call (or a
// call in a deferred literal) of a function or method of the same package
// whose body has a go statement. Names are matched, not types: a method
// is taken to be any method of that name in the package.
func scanReplacements(srcs []source) []token.Position {
	starters := map[string]bool{} // "pkg.name" of functions that start a goroutine
	for _, s := range srcs {
		for _, d := range s.file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if ok && fd.Body != nil && hasGo(fd.Body) {
				starters[s.pkg+"."+fd.Name.Name] = true
			}
		}
	}
	var out []token.Position
	for _, s := range srcs {
		starts := func(call *ast.CallExpr) bool {
			switch f := call.Fun.(type) {
			case *ast.Ident:
				return starters[s.pkg+"."+f.Name]
			case *ast.SelectorExpr:
				return starters[s.pkg+"."+f.Sel.Name]
			}
			return false
		}
		ast.Inspect(s.file, func(n ast.Node) bool {
			ds, ok := n.(*ast.DeferStmt)
			if !ok {
				return true
			}
			lit, ok := ds.Call.Fun.(*ast.FuncLit)
			if !ok {
				if starts(ds.Call) {
					out = append(out, s.fset.Position(ds.Pos()))
				}
				return true
			}
			ast.Inspect(lit.Body, func(m ast.Node) bool {
				switch m := m.(type) {
				case *ast.GoStmt:
					out = append(out, s.fset.Position(m.Pos()))
				case *ast.CallExpr:
					if starts(m) {
						out = append(out, s.fset.Position(m.Pos()))
					}
				}
				return true
			})
			return true
		})
	}
	return out
}

// hasGo reports whether body has a go statement.
func hasGo(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.GoStmt); ok {
			found = true
		}
		return !found
	})
	return found
}

// TestOneTypeFindsEachShape shows that the scans behind
// TestOnePanicGoexitAndHistogramType and TestOneGoroutineReplacement can
// fail: each shape of a second panic report, histogram, Goexit error or
// goroutine replacement, written as code, is found.
func TestOneTypeFindsEachShape(t *testing.T) {
	const src = `package jobs

import "errors"

type RunPanic struct{}
type RunFailure struct {
	Value any
	Stack []byte
}
type Histogram struct{ Counts [7]uint64 }
type Spread struct{ Buckets []float64 }

var ErrRunGoexit = errors.New("x")
var LatencyBounds = [2]int{1, 2}

var errG = errors.New("user code called goexit")

type wk struct{}

func (w *wk) respawn() { go w.work() }
func (w *wk) work()    { defer w.respawn() }
func (w *wk) other()   { defer func() { w.respawn() }() }
func (w *wk) inline()  { defer func() { go w.work() }() }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "jobs/shapes.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	srcs := []source{{rel: "jobs/shapes.go", pkg: "jobs", file: f, fset: fset}}
	got := scanOneType(srcs)
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"panic reports", got.panics, []string{"jobs.RunFailure", "jobs.RunPanic"}},
		{"histograms", got.hists, []string{"jobs.Histogram", "jobs.Spread"}},
		{"Goexit values", got.goexits, []string{"jobs.ErrRunGoexit"}},
		{"bounds", got.bounds, []string{"jobs.LatencyBounds"}},
	} {
		slices.Sort(c.got)
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: got %q, want %q", c.what, c.got, c.want)
		}
	}
	if len(got.goexitErrors) != 1 {
		t.Errorf("Goexit errors: got %q, want the one at jobs/shapes.go:16", got.goexitErrors)
	}
	var lines []int
	for _, p := range scanReplacements(srcs) {
		lines = append(lines, p.Line)
	}
	if want := []int{21, 22, 23}; !slices.Equal(lines, want) {
		t.Errorf("replacements found on lines %v, want %v", lines, want)
	}
}
