package sharedcache

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/cache"
)

// reportCPU reports the process CPU time per op since start (user and
// system, every goroutine: on a shared machine, time other processes take
// does not inflate it as it does ns/op).
func reportCPU(b *testing.B, start time.Duration) {
	if now, ok := processCPU(); ok {
		b.ReportMetric(float64(now-start)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkL1Hit compares a hit on a local copy with a Get of a plain ttlkit
// cache holding the same entries; with StaleIfError a hit reads the clock
// once more. The store is the in-memory fake of the tests: a local hit
// never reaches it, and a real server's goroutines would share the cores
// with the loop being measured.
func BenchmarkL1Hit(b *testing.B) {
	const keys = 1024
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("key-%d", i)
	}
	b.Run("impl=ttlkit-cache", func(b *testing.B) {
		c, err := cache.New(cache.Options[string, string]{TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		for _, k := range names {
			c.Set(k, "value")
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu, _ := processCPU()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, ok := c.Get(names[i%keys]); !ok {
					b.Fatal("miss")
				}
				i++
			}
		})
		reportCPU(b, cpu)
	})
	for _, m := range []struct {
		name         string
		staleIfError time.Duration
	}{{"sharedcache", 0}, {"sharedcache-stale-if-error", time.Minute}} {
		b.Run("impl="+m.name, func(b *testing.B) {
			c, err := New[string](context.Background(), newMemStore(), Options[string]{TTL: time.Hour, StaleIfError: m.staleIfError})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			for _, k := range names {
				if err := c.Set(ctx, k, "value"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu, _ := processCPU()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := c.Get(ctx, names[i%keys]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkInvalidation: three instance processes on one store; each round
// one of them sets a key the two others hold locally, and each of those
// reports when a Get first returns the new value (woken by the event). It
// reports the p50, p99 and max of those latencies, from the writer's
// return to the other's read, across processes (wall clock of one machine).
func BenchmarkInvalidation(b *testing.B) {
	for _, be := range backends {
		b.Run("store="+be.name, func(b *testing.B) {
			url, env := be.start(b)
			insts := []*instance{
				startInstance(b, "a", url, env...),
				startInstance(b, "b", url, env...),
				startInstance(b, "c", url, env...),
			}
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				w := insts[i%3]
				val := fmt.Sprintf("v%d", i)
				var watches []chan string
				var others []*instance
				for _, o := range insts {
					if o != w {
						if i > 1 {
							o.call("get k") // a local copy of the previous value
						}
						watches = append(watches, o.send("watch k %s", val))
						others = append(others, o)
					}
				}
				a := w.call("set k %s", val)
				ret, err := strconv.ParseInt(strings.TrimPrefix(a, "ok "), 10, 64)
				if err != nil {
					b.Fatalf("%s set: %q", w.name, a)
				}
				for j, ch := range watches {
					seen, err := strconv.ParseInt(strings.TrimPrefix(others[j].answer(ch), "ok "), 10, 64)
					if err != nil {
						b.Fatalf("watch: %v", err)
					}
					lat = append(lat, time.Duration(max(seen-ret, 0)))
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-µs")
			b.ReportMetric(float64(lat[len(lat)-1])/1e3, "max-µs")
		})
	}
}

// BenchmarkColdKeyLoads: n instance processes Take the same cold key at
// once (a new key each round; the loader returns at once). loads/key is the
// loader calls across all of them per key: 1 is the target; waits/key is
// the Takes that waited for another instance's load.
func BenchmarkColdKeyLoads(b *testing.B) {
	sizes := []int{3, 6}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, be := range backends {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("store=%s/instances=%d", be.name, n), func(b *testing.B) {
				url, env := be.start(b)
				var insts []*instance
				for i := range n {
					insts = append(insts, startInstance(b, fmt.Sprint("i", i), url, env...))
				}
				keys := 0
				for b.Loop() {
					keys++
					var takes []chan string
					for _, in := range insts {
						takes = append(takes, in.send("takenow cold-%d", keys))
					}
					for i, ch := range takes {
						if a := insts[i].answer(ch); !strings.HasPrefix(a, "ok loaded-by-") {
							b.Fatalf("%s take = %q", insts[i].name, a)
						}
					}
				}
				var loads, waits uint64
				for _, in := range insts {
					s := in.stats()
					loads += s.Loads
					waits += s.LeaseWaits
				}
				b.ReportMetric(float64(loads)/float64(keys), "loads/key")
				b.ReportMetric(float64(waits)/float64(keys), "waits/key")
			})
		}
	}
}
