package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"strings"
)

// benchmarkSources maps the name of each Benchmark function declared in the
// _test.go files of dir to the base name of its file.
func benchmarkSources(dir string) (map[string]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Benchmark") {
				out[fd.Name.Name] = filepath.Base(p)
			}
		}
	}
	return out, nil
}

// suiteSources is benchmarkSources for every module the suites run in:
// keys are sourceKey(dir, name), values the file's path relative to the
// bench module.
func suiteSources(benchDir string) (map[string]string, error) {
	out := map[string]string{}
	done := map[string]bool{}
	for _, s := range suites {
		if done[s.Dir] {
			continue
		}
		done[s.Dir] = true
		src, err := benchmarkSources(filepath.Join(benchDir, s.Dir))
		if err != nil {
			return nil, err
		}
		for name, file := range src {
			out[sourceKey(s.Dir, name)] = path.Join(s.Dir, file)
		}
	}
	return out, nil
}

// sourceKey names a benchmark function of the module in dir (see
// suite.Dir); the bench module's own are plain names.
func sourceKey(dir, name string) string {
	if dir == "" {
		return name
	}
	return path.Join(dir, name)
}
