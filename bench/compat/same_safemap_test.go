package compat

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	gz "github.com/zeromicro/go-zero/core/collection"

	"github.com/ttlkit/ttlkit/collection"
)

// safeMapAPI is the method set go-zero's *SafeMap and ours share.
type safeMapAPI interface {
	Get(key any) (any, bool)
	Set(key, value any)
	Del(key any)
	Range(f func(key, val any) bool)
	Size() int
}

// contents describes every entry of m, sorted.
func contents(m safeMapAPI) string {
	var kv []string
	m.Range(func(key, val any) bool {
		kv = append(kv, fmt.Sprintf("%#v=%v", key, val))
		return true
	})
	slices.Sort(kv)
	return strings.Join(kv, " ")
}

// randomKey returns one of a few ints, strings, a struct and nil.
func randomKey(r *rand.Rand) any {
	switch n := r.IntN(20); {
	case n < 12:
		return n
	case n < 18:
		return fmt.Sprint("s", n)
	case n < 19:
		return struct{ a, b int }{1, 2}
	default:
		return nil
	}
}

// TestSame_SafeMapRandomScripts runs random Set, Get, Del, Size and Range
// (whole, and stopped after a few entries) scripts on go-zero's SafeMap and
// ours, and compares every result.
func TestSame_SafeMapRandomScripts(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for range 200 {
		g, o := gz.NewSafeMap(), collection.NewSafeMap()
		var script []string
		for i := range 40 {
			key := randomKey(r)
			var gr, or string
			switch op := r.IntN(6); op {
			case 0, 1:
				g.Set(key, i)
				o.Set(key, i)
				script = append(script, fmt.Sprintf("Set(%#v,%d)", key, i))
			case 2:
				g.Del(key)
				o.Del(key)
				script = append(script, fmt.Sprintf("Del(%#v)", key))
			case 3:
				gv, gok := g.Get(key)
				ov, ook := o.Get(key)
				gr, or = fmt.Sprint(gv, gok), fmt.Sprint(ov, ook)
				script = append(script, fmt.Sprintf("Get(%#v)", key))
			case 4:
				gr, or = fmt.Sprint(g.Size()), fmt.Sprint(o.Size())
				script = append(script, "Size")
			case 5:
				stop := r.IntN(4)
				visited := func(m safeMapAPI) string {
					n := 0
					m.Range(func(key, val any) bool { n++; return n < stop })
					return fmt.Sprint(n)
				}
				gr, or = visited(g), visited(o)
				script = append(script, fmt.Sprintf("Range(stop after %d)", stop))
			}
			if gr != or {
				t.Fatalf("%s: go-zero %s, ours %s", strings.Join(script, " "), gr, or)
			}
		}
		if gc, oc := contents(g), contents(o); gc != oc {
			t.Fatalf("%s: contents: go-zero %s, ours %s", strings.Join(script, " "), gc, oc)
		}
	}
}

// TestSame_SafeMapThroughShrinks grows both maps to 30,000 entries and
// deletes down to a few hundred, in waves, so that go-zero copies between
// its two maps and ours migrates to a smaller one; contents agree
// throughout.
func TestSame_SafeMapThroughShrinks(t *testing.T) {
	g, o := gz.NewSafeMap(), collection.NewSafeMap()
	check := func(stage string) {
		t.Helper()
		if gn, on := g.Size(), o.Size(); gn != on {
			t.Fatalf("%s: Size go-zero %d, ours %d", stage, gn, on)
		}
		if gc, oc := contents(g), contents(o); gc != oc {
			t.Fatalf("%s: contents differ (sizes %d)", stage, g.Size())
		}
	}
	next := 0
	for wave := range 3 {
		for range 10_000 {
			g.Set(next, wave)
			o.Set(next, wave)
			next++
		}
		check(fmt.Sprintf("wave %d grown", wave))
		for k := range next - 300 {
			g.Del(k)
			o.Del(k)
		}
		check(fmt.Sprintf("wave %d shrunk", wave))
		for k := next - 300; k < next; k += 2 {
			g.Set(k, -wave)
			o.Set(k, -wave)
		}
		check(fmt.Sprintf("wave %d overwritten", wave))
	}
}
