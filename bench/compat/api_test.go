package compat

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	gz "github.com/zeromicro/go-zero/core/collection"
	"github.com/zeromicro/go-zero/core/timex"

	"github.com/ttlkit/ttlkit/collection"
)

// The two Ticker interfaces are assignable both ways: a timex.Ticker (fake
// or real) can be passed where ours is expected, and ours back.
var (
	_ collection.Ticker = timex.Ticker(nil)
	_ timex.Ticker      = collection.Ticker(nil)
	_ collection.Ticker = timex.NewFakeTicker()
)

// TestAPI_UseEveryPromisedName uses every name of go-zero's API that we
// promise, the way go-zero code does, against our package: if it compiles,
// code written for go-zero compiles after the import path is changed.
func TestAPI_UseEveryPromisedName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fired := make(chan any, 8)
		var execute collection.Execute = func(key, value any) { fired <- key }

		tw, err := collection.NewTimingWheel(time.Second, 60, execute)
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.SetTimer("a", 1, time.Second); err != nil {
			t.Errorf("SetTimer: %v", err)
		}
		if err := tw.SetTimer("b", 2, time.Minute); err != nil {
			t.Errorf("SetTimer: %v", err)
		}
		if err := tw.MoveTimer("b", 2*time.Second); err != nil {
			t.Errorf("MoveTimer: %v", err)
		}
		if err := tw.SetTimer("c", 3, time.Second); err != nil {
			t.Errorf("SetTimer: %v", err)
		}
		if err := tw.RemoveTimer("c"); err != nil {
			t.Errorf("RemoveTimer: %v", err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := len(fired); got != 2 {
			t.Errorf("after 2s: %d fired, want 2 (a and b)", got)
		}
		tw.SetTimer("d", 4, time.Hour)
		drained := 0
		if err := tw.Drain(func(key, value any) { drained++ }); err != nil || drained != 1 {
			t.Errorf("Drain: %v, handed %d; want nil, 1", err, drained)
		}
		tw.Stop()
		if err := tw.SetTimer("e", 5, time.Second); !errors.Is(err, collection.ErrClosed) {
			t.Errorf("SetTimer after Stop: %v, want ErrClosed", err)
		}
		if err := tw.MoveTimer(nil, time.Second); !errors.Is(err, collection.ErrArgument) {
			t.Errorf("MoveTimer(nil): %v, want ErrArgument", err)
		}

		// go-zero's own fake ticker drives our wheel.
		var ticker timex.FakeTicker = timex.NewFakeTicker()
		tw2, err := collection.NewTimingWheelWithTicker(time.Second, 60, execute, ticker)
		if err != nil {
			t.Fatal(err)
		}
		tw2.SetTimer("f", 6, time.Second)
		synctest.Wait()
		ticker.Tick()
		synctest.Wait()
		if got := len(fired); got != 3 {
			t.Errorf("after one fake tick: %d fired in all, want 3", got)
		}
		tw2.Stop()

		opts := []collection.CacheOption{collection.WithLimit(10), collection.WithName("compat")}
		c, err := collection.NewCache(time.Minute, opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Set("x", 1)
		c.SetWithExpire("y", 2, time.Hour)
		v, err := c.Take("z", func() (any, error) { return 3, nil })
		if err != nil || v != 3 {
			t.Errorf("Take: %v, %v; want 3, nil", v, err)
		}
		c.Del("x")
		for k, want := range map[string]any{"x": nil, "y": 2, "z": 3} {
			if got, ok := c.Get(k); got != want || ok != (want != nil) {
				t.Errorf("Get(%s) = %v, %v; want %v", k, got, ok, want)
			}
		}

		m := collection.NewSafeMap()
		m.Set("p", 1)
		m.Set("q", 2)
		m.Del("p")
		if v, ok := m.Get("q"); !ok || v != 2 {
			t.Errorf("SafeMap.Get(q) = %v, %v; want 2, true", v, ok)
		}
		n := 0
		m.Range(func(key, val any) bool { n++; return true })
		if n != 1 || m.Size() != 1 {
			t.Errorf("Range visited %d, Size %d; want 1, 1", n, m.Size())
		}

		s := collection.NewSet[string]()
		s.Add("x", "y", "x")
		s.Remove("y")
		if !s.Contains("x") || s.Count() != 1 || len(s.Keys()) != 1 {
			t.Errorf("Set: Contains(x) %v, Count %d, Keys %v; want true, 1, [x]", s.Contains("x"), s.Count(), s.Keys())
		}
		s.Clear()

		q := collection.NewQueue(1)
		q.Put("first")
		q.Put("second")
		if v, ok := q.Take(); v != "first" || !ok || q.Empty() {
			t.Errorf("Queue: Take = %v, %v, Empty %v; want first, true, false", v, ok, q.Empty())
		}

		r := collection.NewRing(2)
		for _, v := range []int{1, 2, 3} {
			r.Add(v)
		}
		if got := r.Take(); len(got) != 2 || got[0] != 2 || got[1] != 3 {
			t.Errorf("Ring: Take = %v, want [2 3]", got)
		}

		// A bucket of the caller's own, as go-zero's users write them.
		var opt collection.RollingWindowOption[int64, *maxBucket] = collection.IgnoreCurrentBucket[int64, *maxBucket]()
		var _ collection.BucketInterface[int64] = new(maxBucket)
		w := collection.NewRollingWindow(func() *maxBucket { return new(maxBucket) }, 4, time.Second, opt)
		w.Add(7)
		time.Sleep(time.Second)
		var most int64
		w.Reduce(func(b *maxBucket) { most = max(most, b.max) })
		if most != 7 {
			t.Errorf("RollingWindow with a custom bucket: max %d, want 7", most)
		}
		var b collection.Bucket[float64]
		b.Add(1.5)
		b.Add(2)
		if b.Sum != 3.5 || b.Count != 2 {
			t.Errorf("Bucket after Add(1.5), Add(2): %+v, want {Sum:3.5 Count:2}", b)
		}
		b.Reset()
	})
}

// maxBucket keeps the largest value added: a BucketInterface of its own.
type maxBucket struct{ max int64 }

func (b *maxBucket) Add(v int64) { b.max = max(b.max, v) }
func (b *maxBucket) Reset()      { b.max = 0 }

// sumOf adds up a window the way go-zero's users write generic helpers,
// with collection.Numerical as the constraint.
func sumOf[T collection.Numerical](w *collection.RollingWindow[T, *collection.Bucket[T]]) (sum T) {
	w.Reduce(func(b *collection.Bucket[T]) { sum += b.Sum })
	return sum
}

var _ = sumOf[uint16]

// Generic types are compared through one instantiation each (reflect sees
// only instantiated types); TestAPI_TypeParamsMatchGoZero compares their
// type parameter lists, and the Numerical constraint, in the sources.
type (
	gzWindow  = gz.RollingWindow[float64, *gz.Bucket[float64]]
	ourWindow = collection.RollingWindow[float64, *collection.Bucket[float64]]
)

// twins maps each named type of go-zero's API to ours.
var twins = map[reflect.Type]reflect.Type{
	reflect.TypeFor[gz.Execute]():                                           reflect.TypeFor[collection.Execute](),
	reflect.TypeFor[timex.Ticker]():                                         reflect.TypeFor[collection.Ticker](),
	reflect.TypeFor[gz.TimingWheel]():                                       reflect.TypeFor[collection.TimingWheel](),
	reflect.TypeFor[gz.CacheOption]():                                       reflect.TypeFor[collection.CacheOption](),
	reflect.TypeFor[gz.Cache]():                                             reflect.TypeFor[collection.Cache](),
	reflect.TypeFor[gz.SafeMap]():                                           reflect.TypeFor[collection.SafeMap](),
	reflect.TypeFor[gz.Queue]():                                             reflect.TypeFor[collection.Queue](),
	reflect.TypeFor[gz.Ring]():                                              reflect.TypeFor[collection.Ring](),
	reflect.TypeFor[gz.Set[int]]():                                          reflect.TypeFor[collection.Set[int]](),
	reflect.TypeFor[gz.Bucket[float64]]():                                   reflect.TypeFor[collection.Bucket[float64]](),
	reflect.TypeFor[gz.BucketInterface[float64]]():                          reflect.TypeFor[collection.BucketInterface[float64]](),
	reflect.TypeFor[gzWindow]():                                             reflect.TypeFor[ourWindow](),
	reflect.TypeFor[gz.RollingWindowOption[float64, *gz.Bucket[float64]]](): reflect.TypeFor[collection.RollingWindowOption[float64, *collection.Bucket[float64]]](),
}

// baseName is a named type's name without its type arguments.
func baseName(t reflect.Type) string {
	name, _, _ := strings.Cut(t.Name(), "[")
	return name
}

// sameShape reports whether go-zero's type g and our type o are the same
// type once each of go-zero's named types is replaced by its twin.
func sameShape(g, o reflect.Type) bool {
	if twin, ok := twins[g]; ok {
		return twin == o
	}
	if g == o {
		return true
	}
	if g.Name() != "" || o.Name() != "" {
		return false // distinct named types that are not twins
	}
	return sameStructure(g, o)
}

// sameStructure compares g and o as type literals: kinds, and their parts
// by sameShape.
func sameStructure(g, o reflect.Type) bool {
	if g.Kind() != o.Kind() {
		return false
	}
	switch g.Kind() {
	case reflect.Func:
		if g.NumIn() != o.NumIn() || g.NumOut() != o.NumOut() || g.IsVariadic() != o.IsVariadic() {
			return false
		}
		for i := range g.NumIn() {
			if !sameShape(g.In(i), o.In(i)) {
				return false
			}
		}
		for i := range g.NumOut() {
			if !sameShape(g.Out(i), o.Out(i)) {
				return false
			}
		}
		return true
	case reflect.Pointer, reflect.Slice:
		return sameShape(g.Elem(), o.Elem())
	case reflect.Array:
		return g.Len() == o.Len() && sameShape(g.Elem(), o.Elem())
	case reflect.Chan:
		return g.ChanDir() == o.ChanDir() && sameShape(g.Elem(), o.Elem())
	case reflect.Map:
		return sameShape(g.Key(), o.Key()) && sameShape(g.Elem(), o.Elem())
	case reflect.Interface:
		if g.NumMethod() != o.NumMethod() {
			return false
		}
		for i := range g.NumMethod() { // both sorted by name
			gm, om := g.Method(i), o.Method(i)
			if gm.Name != om.Name || !sameShape(gm.Type, om.Type) {
				return false
			}
		}
		return true
	case reflect.Struct:
		return sameExportedFields(g, o)
	}
	return false
}

// sameExportedFields reports whether structs g and o have the same exported
// fields, in the same order, of the same shapes. Unexported fields are the
// implementation's own.
func sameExportedFields(g, o reflect.Type) bool {
	exported := func(t reflect.Type) []reflect.StructField {
		var fs []reflect.StructField
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				fs = append(fs, f)
			}
		}
		return fs
	}
	gf, of := exported(g), exported(o)
	if len(gf) != len(of) {
		return false
	}
	for i := range gf {
		if gf[i].Name != of[i].Name || gf[i].Anonymous != of[i].Anonymous || !sameShape(gf[i].Type, of[i].Type) {
			return false
		}
	}
	return true
}

// methodFunc returns m's type without its receiver.
func methodFunc(m reflect.Method) reflect.Type {
	ft := m.Type
	in := make([]reflect.Type, 0, ft.NumIn()-1)
	for i := 1; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i))
	}
	out := make([]reflect.Type, 0, ft.NumOut())
	for i := range ft.NumOut() {
		out = append(out, ft.Out(i))
	}
	return reflect.FuncOf(in, out, ft.IsVariadic())
}

// checked is one name of the API with go-zero's type and ours. A row
// without types is a constraint, which reflect cannot see:
// TestAPI_TypeParamsMatchGoZero checks it.
type checked struct {
	name      string // as exportedNames spells it
	gozero, o reflect.Type
}

// apiTable lists every exported name of go-zero's core/collection with its
// type in both packages; methods are listed from go-zero's method sets.
func apiTable(t *testing.T) []checked {
	tab := []checked{
		{"var ErrClosed", reflect.TypeOf(&gz.ErrClosed).Elem(), reflect.TypeOf(&collection.ErrClosed).Elem()},
		{"var ErrArgument", reflect.TypeOf(&gz.ErrArgument).Elem(), reflect.TypeOf(&collection.ErrArgument).Elem()},
		{"func NewTimingWheel", reflect.TypeOf(gz.NewTimingWheel), reflect.TypeOf(collection.NewTimingWheel)},
		{"func NewTimingWheelWithTicker", reflect.TypeOf(gz.NewTimingWheelWithTicker), reflect.TypeOf(collection.NewTimingWheelWithTicker)},
		{"func NewCache", reflect.TypeOf(gz.NewCache), reflect.TypeOf(collection.NewCache)},
		{"func WithLimit", reflect.TypeOf(gz.WithLimit), reflect.TypeOf(collection.WithLimit)},
		{"func WithName", reflect.TypeOf(gz.WithName), reflect.TypeOf(collection.WithName)},
		{"func NewSafeMap", reflect.TypeOf(gz.NewSafeMap), reflect.TypeOf(collection.NewSafeMap)},
		{"func NewQueue", reflect.TypeOf(gz.NewQueue), reflect.TypeOf(collection.NewQueue)},
		{"func NewRing", reflect.TypeOf(gz.NewRing), reflect.TypeOf(collection.NewRing)},
		{"func NewSet", reflect.TypeOf(gz.NewSet[int]), reflect.TypeOf(collection.NewSet[int])},
		{"func NewRollingWindow", reflect.TypeOf(gz.NewRollingWindow[float64, *gz.Bucket[float64]]), reflect.TypeOf(collection.NewRollingWindow[float64, *collection.Bucket[float64]])},
		{"func IgnoreCurrentBucket", reflect.TypeOf(gz.IgnoreCurrentBucket[float64, *gz.Bucket[float64]]), reflect.TypeOf(collection.IgnoreCurrentBucket[float64, *collection.Bucket[float64]])},
		{"type Numerical", nil, nil},
	}
	for g, o := range twins {
		if g.PkgPath() != reflect.TypeFor[gz.Cache]().PkgPath() {
			continue // timex.Ticker is not declared in core/collection
		}
		tab = append(tab, checked{"type " + baseName(g), g, o})
		if g.Kind() == reflect.Interface {
			continue // its methods are part of its shape
		}
		gp, op := reflect.PointerTo(g), reflect.PointerTo(o)
		for i := range gp.NumMethod() {
			gm := gp.Method(i)
			name := "method " + baseName(g) + "." + gm.Name
			om, ok := op.MethodByName(gm.Name)
			if !ok {
				t.Errorf("%s: missing from ours", name)
				continue
			}
			tab = append(tab, checked{name, methodFunc(gm), methodFunc(om)})
		}
	}
	return tab
}

// TestAPI_SignaturesMatchGoZero: every exported function, variable and
// method of go-zero's core/collection has exactly go-zero's type in ours
// (go-zero's named types mapped to ours), and every named type has the
// same underlying shape (for a struct: the same exported fields).
func TestAPI_SignaturesMatchGoZero(t *testing.T) {
	for _, c := range apiTable(t) {
		var ok bool
		switch {
		case c.gozero == nil:
			continue // a constraint: TestAPI_TypeParamsMatchGoZero
		case strings.HasPrefix(c.name, "type "):
			ok = sameStructure(c.gozero, c.o)
		default:
			ok = sameShape(c.gozero, c.o)
		}
		if !ok {
			t.Errorf("%s: go-zero %v, ours %v", c.name, c.gozero, c.o)
		}
	}
	// Ticker is timex.Ticker's shape.
	if g, o := reflect.TypeFor[timex.Ticker](), reflect.TypeFor[collection.Ticker](); !sameStructure(g, o) {
		t.Errorf("Ticker: go-zero %v, ours %v", g, o)
	}
}

// ourAdditions is what our collection exports beyond go-zero's API;
// doc/compat.md lists each.
var ourAdditions = []string{
	"method Cache.Close",
	"method Cache.Len",
	"method Cache.Stats",
	"method TimingWheel.Len",
	"method TimingWheel.Has",
	"type Ticker",
}

// goZeroDir returns the directory of go-zero's sources in the module
// cache, or skips the test.
func goZeroDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/zeromicro/go-zero").Output()
	if err != nil || len(strings.TrimSpace(string(out))) == 0 {
		t.Skipf("cannot locate go-zero's sources: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// ourCollectionDir is our collection package, from this one.
var ourCollectionDir = filepath.Join("..", "..", "collection")

// TestAPI_NamesMatchGoZero parses go-zero's sources and ours: every name
// go-zero's core/collection exports is checked by
// TestAPI_SignaturesMatchGoZero, and ours exports exactly those plus
// ourAdditions.
func TestAPI_NamesMatchGoZero(t *testing.T) {
	dir := filepath.Join(goZeroDir(t), "core", "collection")
	theirs := exportedNames(t, dir)

	var tabled []string
	for _, c := range apiTable(t) {
		tabled = append(tabled, c.name)
	}
	slices.Sort(tabled)
	if !slices.Equal(theirs, tabled) {
		t.Errorf("go-zero exports\n%q\nthe signature table checks\n%q", theirs, tabled)
	}

	ours := exportedNames(t, ourCollectionDir)
	want := slices.Sorted(slices.Values(append(slices.Clone(theirs), ourAdditions...)))
	if !slices.Equal(ours, want) {
		t.Errorf("ours exports\n%q\nwant go-zero's names plus ourAdditions\n%q", ours, want)
	}
}

// packageFiles parses the non-test Go files of the package in dir.
func packageFiles(t *testing.T, dir string) []*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// recvTypeName is the name of a method's receiver type, without a pointer
// or type parameters: T for T, *T, T[X] and *T[X, Y].
func recvTypeName(recv ast.Expr) *ast.Ident {
	if star, ok := recv.(*ast.StarExpr); ok {
		recv = star.X
	}
	switch r := recv.(type) {
	case *ast.IndexExpr:
		recv = r.X
	case *ast.IndexListExpr:
		recv = r.X
	}
	id, _ := recv.(*ast.Ident)
	return id
}

// exportedNames returns the exported top-level names of the package in
// dir, sorted, as "func F", "type T", "var V", "const C" and "method T.M"
// (methods of exported types only).
func exportedNames(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	for _, f := range packageFiles(t, dir) {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names = append(names, "func "+d.Name.Name)
					continue
				}
				if id := recvTypeName(d.Recv.List[0].Type); id != nil && id.IsExported() {
					names = append(names, "method "+id.Name+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, "type "+s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, d.Tok.String()+" "+n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// typeParams returns, for each exported generic function and type of the
// package in dir, its type parameter list as source text ("[T Numerical,
// B BucketInterface[T]]"), and each exported interface type's body with
// its union terms sorted, by name.
func typeParams(t *testing.T, dir string) (params, ifaces map[string]string) {
	t.Helper()
	params, ifaces = map[string]string{}, map[string]string{}
	text := func(n ast.Node) string {
		var b strings.Builder
		if err := printer.Fprint(&b, token.NewFileSet(), n); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	list := func(fl *ast.FieldList) string {
		var ps []string
		for _, f := range fl.List {
			for _, n := range f.Names {
				ps = append(ps, n.Name+" "+text(f.Type))
			}
		}
		return "[" + strings.Join(ps, ", ") + "]"
	}
	for _, f := range packageFiles(t, dir) {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() && d.Type.TypeParams != nil {
					params["func "+d.Name.Name] = list(d.Type.TypeParams)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					if ts.TypeParams != nil {
						params["type "+ts.Name.Name] = list(ts.TypeParams)
					}
					if it, ok := ts.Type.(*ast.InterfaceType); ok {
						var terms []string
						for _, m := range it.Methods.List {
							for _, term := range strings.Split(text(m.Type), "|") {
								terms = append(terms, strings.TrimSpace(term))
							}
						}
						slices.Sort(terms)
						ifaces[ts.Name.Name] = strings.Join(terms, " | ")
					}
				}
			}
		}
	}
	return params, ifaces
}

// TestAPI_TypeParamsMatchGoZero: every generic function and type go-zero's
// core/collection exports has, in ours, the same type parameters with the
// same constraints, and ours's Numerical has exactly the type set of
// go-zero's (an alias of mathx.Numerical), so code instantiating go-zero's
// generics instantiates ours unchanged.
func TestAPI_TypeParamsMatchGoZero(t *testing.T) {
	root := goZeroDir(t)
	theirs, _ := typeParams(t, filepath.Join(root, "core", "collection"))
	ours, ourIfaces := typeParams(t, ourCollectionDir)
	if len(theirs) == 0 {
		t.Fatal("found no generic declaration in go-zero's collection")
	}
	for name, want := range theirs {
		if got := ours[name]; got != want {
			t.Errorf("%s: ours has type parameters %q, go-zero %q", name, got, want)
		}
	}
	_, mathx := typeParams(t, filepath.Join(root, "core", "mathx"))
	want := mathx["Numerical"]
	if want == "" {
		t.Fatal("found no Numerical in go-zero's core/mathx")
	}
	if got := ourIfaces["Numerical"]; got != want {
		t.Errorf("Numerical: ours is %q, go-zero's mathx.Numerical %q", got, want)
	}
}
