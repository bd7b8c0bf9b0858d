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
// timingwheel.DurationBounds). It looks at names, not meaning: an exported
// type named *Panic*, a struct with a Buckets field, a variable or
// constant named *Goexit* or *Bounds, and an alias of any of them under
// another package's name (cache.PanicError, jobs.Durations and
// timingwheel.Lateness were such aliases, removed before 1.0).
func TestOnePanicGoexitAndHistogramType(t *testing.T) {
	var panics, hists, goexits, bounds, aliases, goexitErrors []string
	for _, s := range sources(t) {
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
					if strings.Contains(sp.Name.Name, "Panic") {
						panics = append(panics, name)
					}
					if st, ok := sp.Type.(*ast.StructType); ok && hasField(st, "Buckets") {
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
				if msg, err := strconv.Unquote(lit.Value); err == nil && strings.Contains(msg, "Goexit") {
					goexitErrors = append(goexitErrors, s.fset.Position(call.Pos()).String())
				}
			}
			return true
		})
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", what, got, want)
		}
	}
	check("exported types named *Panic*", panics, "timingwheel.PanicError")
	check("exported histogram types (a struct with Buckets)", hists, "timingwheel.Durations")
	check("exported values named *Goexit*", goexits, "timingwheel.ErrGoexit")
	check("exported bounds", bounds, "timingwheel.DurationBounds")
	check("second names (aliases) of a type, or of a Goexit or bounds value", aliases)
	if len(goexitErrors) != 1 || !strings.Contains(filepath.ToSlash(goexitErrors[0]), "internal/pool/") {
		t.Errorf("errors made for runtime.Goexit at %q, want one, in internal/pool", goexitErrors)
	}
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
	for _, s := range sources(t) {
		ast.Inspect(s.file, func(n ast.Node) bool {
			ds, ok := n.(*ast.DeferStmt)
			if !ok {
				return true
			}
			lit, ok := ds.Call.Fun.(*ast.FuncLit)
			if !ok {
				return true
			}
			ast.Inspect(lit.Body, func(m ast.Node) bool {
				if _, ok := m.(*ast.GoStmt); ok {
					found[s.rel] = true
					if _, ok := allowed[s.rel]; !ok {
						t.Errorf("%s: a deferred function starts a goroutine (a worker replacing itself): run the work on internal/pool instead",
							s.fset.Position(m.Pos()))
					}
				}
				return true
			})
			return true
		})
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
