package compat

import (
	"errors"
	"go/ast"
	"go/parser"
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
	})
}

// twins maps each named type of go-zero's API to ours.
var twins = map[reflect.Type]reflect.Type{
	reflect.TypeFor[gz.Execute]():     reflect.TypeFor[collection.Execute](),
	reflect.TypeFor[timex.Ticker]():   reflect.TypeFor[collection.Ticker](),
	reflect.TypeFor[gz.TimingWheel](): reflect.TypeFor[collection.TimingWheel](),
	reflect.TypeFor[gz.CacheOption](): reflect.TypeFor[collection.CacheOption](),
	reflect.TypeFor[gz.Cache]():       reflect.TypeFor[collection.Cache](),
	reflect.TypeFor[gz.SafeMap]():     reflect.TypeFor[collection.SafeMap](),
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
	}
	return false // structs: only identical types match
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

// checked is one name of the API with go-zero's type and ours.
type checked struct {
	name      string // as exportedNames spells it
	gozero, o reflect.Type
}

// apiTable lists every exported name of go-zero's timingwheel.go, cache.go
// and safemap.go with its type in both packages; methods are listed from
// go-zero's method sets.
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
	}
	for g, o := range twins {
		if g.PkgPath() != reflect.TypeFor[gz.Cache]().PkgPath() {
			continue // timex.Ticker is not declared in core/collection
		}
		tab = append(tab, checked{"type " + g.Name(), g, o})
		if g.Kind() != reflect.Struct {
			continue
		}
		gp, op := reflect.PointerTo(g), reflect.PointerTo(o)
		for i := range gp.NumMethod() {
			gm := gp.Method(i)
			name := "method " + g.Name() + "." + gm.Name
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
// method of go-zero's TimingWheel, Cache and SafeMap has exactly go-zero's
// type in ours (go-zero's named types mapped to ours), and every named type
// has the same underlying shape.
func TestAPI_SignaturesMatchGoZero(t *testing.T) {
	for _, c := range apiTable(t) {
		var ok bool
		if strings.HasPrefix(c.name, "type ") {
			ok = c.gozero.Kind() == reflect.Struct || sameStructure(c.gozero, c.o)
		} else {
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

// TestAPI_NamesMatchGoZero parses go-zero's sources and ours: every name
// go-zero's timingwheel.go, cache.go and safemap.go export is checked by
// TestAPI_SignaturesMatchGoZero, and ours exports exactly those plus
// ourAdditions.
func TestAPI_NamesMatchGoZero(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/zeromicro/go-zero").Output()
	if err != nil {
		t.Skipf("cannot locate go-zero's sources: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "core", "collection")
	theirs := exportedNames(t, dir, "timingwheel.go", "cache.go", "safemap.go")

	var tabled []string
	for _, c := range apiTable(t) {
		tabled = append(tabled, c.name)
	}
	slices.Sort(tabled)
	if !slices.Equal(theirs, tabled) {
		t.Errorf("go-zero exports\n%q\nthe signature table checks\n%q", theirs, tabled)
	}

	ours := exportedNames(t, filepath.Join("..", "..", "collection"), "timingwheel.go", "cache.go", "safemap.go")
	want := slices.Sorted(slices.Values(append(slices.Clone(theirs), ourAdditions...)))
	if !slices.Equal(ours, want) {
		t.Errorf("ours exports\n%q\nwant go-zero's names plus ourAdditions\n%q", ours, want)
	}
}

// exportedNames returns the exported top-level names of the given files in
// dir, sorted, as "func F", "type T", "var V", "const C" and "method T.M"
// (methods of exported types only).
func exportedNames(t *testing.T, dir string, files ...string) []string {
	t.Helper()
	fset := token.NewFileSet()
	var names []string
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
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
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
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
