package compat

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	gz "github.com/zeromicro/go-zero/core/collection"

	"github.com/ttlkit/ttlkit/collection"
)

// windowAPI is a RollingWindow of float64 in *Bucket[float64] with Reduce
// turned into the list it visits, so one scenario can drive go-zero's and
// ours (whose Bucket types differ).
type windowAPI struct {
	add     func(v float64)
	buckets func() []string // "sum/count" per bucket Reduce passes, oldest first
}

var windowImpls = []struct {
	name string
	new  func(size int, interval time.Duration, ignoreCurrent bool) windowAPI
}{
	{"gozero", func(size int, interval time.Duration, ignoreCurrent bool) windowAPI {
		var opts []gz.RollingWindowOption[float64, *gz.Bucket[float64]]
		if ignoreCurrent {
			opts = append(opts, gz.IgnoreCurrentBucket[float64, *gz.Bucket[float64]]())
		}
		w := gz.NewRollingWindow(func() *gz.Bucket[float64] { return new(gz.Bucket[float64]) }, size, interval, opts...)
		return windowAPI{w.Add, func() (out []string) {
			w.Reduce(func(b *gz.Bucket[float64]) { out = append(out, fmt.Sprintf("%g/%d", b.Sum, b.Count)) })
			return out
		}}
	}},
	{"ttlkit", func(size int, interval time.Duration, ignoreCurrent bool) windowAPI {
		var opts []collection.RollingWindowOption[float64, *collection.Bucket[float64]]
		if ignoreCurrent {
			opts = append(opts, collection.IgnoreCurrentBucket[float64, *collection.Bucket[float64]]())
		}
		w := collection.NewRollingWindow(func() *collection.Bucket[float64] { return new(collection.Bucket[float64]) }, size, interval, opts...)
		return windowAPI{w.Add, func() (out []string) {
			w.Reduce(func(b *collection.Bucket[float64]) { out = append(out, fmt.Sprintf("%g/%d", b.Sum, b.Count)) })
			return out
		}}
	}},
}

// windowStep is one step of a scenario: sleep, then add values, then
// expect what Reduce passes.
type windowStep struct {
	sleep time.Duration
	add   []float64
	want  []string // nil: Reduce passes nothing
}

// runWindowScenario runs steps on each implementation in its own synctest
// bubble.
func runWindowScenario(t *testing.T, size int, interval time.Duration, ignoreCurrent bool, steps []windowStep) {
	t.Helper()
	for _, impl := range windowImpls {
		synctest.Test(t, func(t *testing.T) {
			w := impl.new(size, interval, ignoreCurrent)
			for i, s := range steps {
				time.Sleep(s.sleep)
				for _, v := range s.add {
					w.add(v)
				}
				if got := w.buckets(); !slices.Equal(got, s.want) {
					t.Errorf("%s, step %d: Reduce passed %v, want %v", impl.name, i, got, s.want)
				}
			}
		})
	}
}

// TestSame_RollingWindowAdd: go-zero's TestRollingWindowAdd, on both: three
// buckets of 50ms, values added over four intervals.
func TestSame_RollingWindowAdd(t *testing.T) {
	const d = 50 * time.Millisecond
	runWindowScenario(t, 3, d, false, []windowStep{
		{0, nil, []string{"0/0", "0/0", "0/0"}},
		{0, []float64{1}, []string{"0/0", "0/0", "1/1"}},
		{d, []float64{2, 3}, []string{"0/0", "1/1", "5/2"}},
		{d, []float64{4, 5, 6}, []string{"1/1", "5/2", "15/3"}},
		{d, []float64{7}, []string{"5/2", "15/3", "7/1"}},
	})
}

// TestSame_RollingWindowIgnoreCurrentReset: go-zero's
// TestRollingWindowReset, on both: with IgnoreCurrentBucket, buckets leave
// the window one interval at a time, and a window left alone for ten
// intervals passes nothing.
func TestSame_RollingWindowIgnoreCurrentReset(t *testing.T) {
	const d = 50 * time.Millisecond
	runWindowScenario(t, 3, d, true, []windowStep{
		{0, []float64{1}, []string{"0/0", "0/0"}}, // the current bucket, 1/1, is left out
		{d, nil, []string{"0/0", "1/1"}},
		{d, nil, []string{"1/1"}},
		{d, nil, nil},
		{0, []float64{1}, []string{"0/0", "0/0"}},
		{10 * d, nil, nil},
	})
}

// TestSame_RollingWindowReduce: go-zero's TestRollingWindowReduce, on both:
// over four intervals of four buckets, the sums add up to 10, or to 4 when
// the current bucket is ignored.
func TestSame_RollingWindowReduce(t *testing.T) {
	const d = 50 * time.Millisecond
	adds := [][]float64{{0}, {0, 1}, {0, 1, 2}, {0, 1, 2, 3}}
	want := map[bool][][]string{
		false: {
			{"0/0", "0/0", "0/0", "0/1"},
			{"0/0", "0/0", "0/1", "1/2"},
			{"0/0", "0/1", "1/2", "3/3"},
			{"0/1", "1/2", "3/3", "6/4"},
		},
		true: {
			{"0/0", "0/0", "0/0"},
			{"0/0", "0/0", "0/1"},
			{"0/0", "0/1", "1/2"},
			{"0/1", "1/2", "3/3"},
		},
	}
	for _, ignore := range []bool{false, true} {
		var steps []windowStep
		for i, a := range adds {
			steps = append(steps, windowStep{time.Duration(min(i, 1)) * d, a, want[ignore][i]})
		}
		runWindowScenario(t, 4, d, ignore, steps)
	}
}

// TestSame_RollingWindowBucketTimeBoundary: go-zero's test of the same
// name, on both: buckets change at whole intervals from the start, not
// whole intervals after the last Add.
func TestSame_RollingWindowBucketTimeBoundary(t *testing.T) {
	const ms = time.Millisecond
	runWindowScenario(t, 3, 30*ms, false, []windowStep{
		{0, nil, []string{"0/0", "0/0", "0/0"}},
		{0, []float64{1}, []string{"0/0", "0/0", "1/1"}},
		{45 * ms, []float64{2, 3}, []string{"0/0", "1/1", "5/2"}},
		{20 * ms, []float64{4, 5, 6}, []string{"1/1", "5/2", "15/3"}}, // 65ms: the third interval
		{100 * ms, []float64{7, 8, 9}, []string{"0/0", "0/0", "24/3"}},
	})
}

// TestSame_RollingWindowConcurrent: go-zero's data-race test, on both (run
// it with -race): one goroutine adds every half interval while another
// reduces, for five intervals.
func TestSame_RollingWindowConcurrent(t *testing.T) {
	const d = 50 * time.Millisecond
	for _, impl := range windowImpls {
		synctest.Test(t, func(t *testing.T) {
			w := impl.new(3, d, false)
			stop := make(chan struct{})
			done := make(chan struct{}, 2)
			go func() {
				defer func() { done <- struct{}{} }()
				for v := 0.0; ; v++ {
					select {
					case <-stop:
						return
					default:
						w.add(v)
						time.Sleep(d / 2)
					}
				}
			}()
			go func() {
				defer func() { done <- struct{}{} }()
				for {
					select {
					case <-stop:
						return
					default:
						w.buckets()
						time.Sleep(time.Millisecond)
					}
				}
			}()
			time.Sleep(5 * d)
			close(stop)
			<-done
			<-done
		})
	}
}

// TestSame_RollingWindowRandom: random Adds and pauses (a fraction of an
// interval up to a few windows) give the same Reduce in both after every
// step, with and without IgnoreCurrentBucket.
func TestSame_RollingWindowRandom(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		for _, size := range []int{1, 2, 4} {
			synctest.Test(t, func(t *testing.T) {
				const d = 10 * time.Millisecond
				g, o := windowImpls[0].new(size, d, ignore), windowImpls[1].new(size, d, ignore)
				r := rand.New(rand.NewPCG(uint64(size), 9))
				for step := range 1000 {
					switch k := r.IntN(10); {
					case k < 6:
						v := float64(r.IntN(10))
						g.add(v)
						o.add(v)
					case k < 9:
						time.Sleep(time.Duration(r.IntN(int(d))) + 1)
					default:
						time.Sleep(time.Duration(r.IntN(2*size+2)) * d)
					}
					if gb, ob := g.buckets(), o.buckets(); !slices.Equal(gb, ob) {
						t.Fatalf("size %d, ignoreCurrent %v, step %d: go-zero passes %v, ours %v", size, ignore, step, gb, ob)
					}
				}
			})
		}
	}
}
