package bench

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// The benchmarks are only as good as the adapters and helpers they drive:
// these tests pin their behaviour.

func TestFloorMatchesReference(t *testing.T) {
	w0, _ := newFloor(0, 0, nil)
	w := w0.(*floorWheel)
	ref := map[string]time.Duration{}
	rng := rand.New(rand.NewPCG(1, 1))
	for step := range 20_000 {
		key := "k" + strconv.Itoa(rng.IntN(64))
		d := time.Duration(rng.IntN(1000)+1) * time.Millisecond
		switch op := rng.IntN(3); op {
		case 0:
			_ = w.Set(key, step, d)
			ref[key] = d
		case 1:
			_ = w.Move(key, d)
			if _, ok := ref[key]; ok {
				ref[key] = d
			}
		case 2:
			_ = w.Remove(key)
			delete(ref, key)
		}
		if err := w.check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if got, want := len(w.index), len(ref); got != want {
			t.Fatalf("step %d: got %d entries, want %d", step, got, want)
		}
		for k, d := range ref {
			if got := w.index[k].deadline; got != d {
				t.Fatalf("step %d: key %q deadline got %v, want %v", step, k, got, d)
			}
		}
	}
	w.Close()
	if err := w.check(); err != nil || len(w.index) != 0 {
		t.Fatalf("after Close: %d entries, check %v; want 0 and nil", len(w.index), err)
	}
}

// TestAdaptersHonourRemoveAndMove drives every firing adapter through one
// removal and one move and waits for the survivors on a channel. It judges
// the moved timer by its own clock readings, not by its order against
// another timer: a test goroutine descheduled between two Sets (a loaded CI
// machine) can put any two real-time deadlines in either order.
func TestAdaptersHonourRemoveAndMove(t *testing.T) {
	type firing struct {
		key string
		at  time.Time
	}
	for _, im := range impls {
		if !im.fires {
			continue
		}
		t.Run(im.name, func(t *testing.T) {
			fired := make(chan firing, 16)
			w, err := im.new(time.Millisecond, 64, func(k string, _ int) { fired <- firing{k, time.Now()} })
			if err != nil {
				t.Fatalf("new: %v", err)
			}
			defer w.Close()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(w.Set("removed", 1, 5*time.Millisecond))
			must(w.Remove("removed"))
			must(w.Set("moved", 2, 5*time.Millisecond))
			movedAt := time.Now()
			must(w.Move("moved", 40*time.Millisecond))
			must(w.Set("plain", 3, 10*time.Millisecond))
			w.Sync()
			got := map[string]time.Time{}
			for len(got) < 2 {
				select {
				case f := <-fired:
					if _, twice := got[f.key]; twice || f.key == "removed" {
						t.Fatalf("fired %q after %v, want plain and moved once each", f.key, got)
					}
					got[f.key] = f.at
				case <-time.After(5 * time.Second):
					t.Fatalf("fired %v after 5s, want plain and moved", got)
				}
			}
			// Moved 40ms ahead at movedAt: firing at its old 5ms deadline
			// would come well before that (30ms leaves a wheel that
			// counts ticks, as go-zero's does, its intervals of slack).
			if at := got["moved"]; at.Before(movedAt.Add(30 * time.Millisecond)) {
				t.Errorf("moved fired %v after the Move, want at least 30ms (got %v)", at.Sub(movedAt), got)
			}
			select {
			case f := <-fired:
				t.Errorf("fired %q after plain and moved, want nothing more", f.key)
			default:
			}
		})
	}
}

func TestWalkVisitsEveryPositionOncePerLap(t *testing.T) {
	for _, n := range []int{1, 2, 3, 1000, 1024, 65536, 1_000_000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			w := newWalk(n)
			seen := make([]bool, n)
			for range n {
				p := w.next()
				if p < 0 || p >= n || seen[p] {
					t.Fatalf("stride %d: position %d out of range or repeated", w.stride, p)
				}
				seen[p] = true
			}
			if w.laps != 1 || w.pos != 0 {
				t.Errorf("after one lap: laps %d, pos %d; want 1, 0", w.laps, w.pos)
			}
		})
	}
}

func TestMakeKeysAreDistinct(t *testing.T) {
	keys := makeKeys("key-", 10_000)
	seen := make(map[string]bool, len(keys))
	for i, k := range keys {
		if want := "key-" + strconv.Itoa(i); k != want {
			t.Fatalf("keys[%d] = %q, want %q", i, k, want)
		}
		if seen[k] {
			t.Fatalf("duplicate key %q", k)
		}
		seen[k] = true
	}
}
