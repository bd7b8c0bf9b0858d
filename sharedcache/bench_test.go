package sharedcache

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/rueidis"
	"github.com/ttlkit/ttlkit/cache"
)

// benchCaches returns n caches on one embedded server, each with its own
// connection, as n instances would have.
func benchCaches(b *testing.B, n int) []*Cache[string] {
	b.Helper()
	s, _, err := startServer("127.0.0.1:0", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	var cs []*Cache[string]
	for range n {
		st, err := NATS(NATSConfig{URL: s.ClientURL(), Bucket: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		c, err := New[string](context.Background(), st, Options[string]{TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close(); st.Close() })
		cs = append(cs, c)
	}
	return cs
}

// BenchmarkL1Hit compares a hit on a local copy with a Get of a plain ttlkit
// cache holding the same entries.
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
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, ok := c.Get(names[i%keys]); !ok {
					b.Fatal("miss")
				}
				i++
			}
		})
	})
	b.Run("impl=sharedcache", func(b *testing.B) {
		c := benchCaches(b, 1)[0]
		ctx := context.Background()
		for _, k := range names {
			if err := c.Set(ctx, k, "value"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := c.Get(ctx, names[i%keys]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	})
}

// BenchmarkL2Hit compares a read that misses locally and is answered by the
// store with a plain JetStream KV Get of the same record.
func BenchmarkL2Hit(b *testing.B) {
	ctx := context.Background()
	c := benchCaches(b, 1)[0]
	if err := c.Set(ctx, "k", "value"); err != nil {
		b.Fatal(err)
	}
	b.Run("impl=nats-kv-get", func(b *testing.B) {
		nc, err := nats.Connect(c.store.(*NATSStore).ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		kv, err := js.KeyValue(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := kv.Get(ctx, encodeKey("k")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=sharedcache", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.l1.Delete("k") // a local miss each time
			if _, err := c.Get(ctx, "k"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkInvalidation measures, with two instances on one server, the
// time from a Set on one returning to the other dropping its copy; it
// reports the p50 and p99 of those latencies.
func BenchmarkInvalidation(b *testing.B) {
	ctx := context.Background()
	cs := benchCaches(b, 2)
	w, r := cs[0], cs[1]
	var dropped atomic.Int64 // unix nanos of r's last event for "k"
	got := make(chan struct{}, 1)
	testHookChanged = func(c any, key string, rev uint64) {
		if c != r {
			return
		}
		dropped.Store(time.Now().UnixNano())
		select {
		case got <- struct{}{}:
		default:
		}
	}
	defer func() { testHookChanged = nil }()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		if err := w.Set(ctx, "k", fmt.Sprint(i)); err != nil {
			b.Fatal(err)
		}
		ret := time.Now().UnixNano()
		<-got
		if v, err := r.Get(ctx, "k"); err != nil || v != fmt.Sprint(i) {
			b.Fatalf("reader got %q, %v after the event, want %d", v, err, i)
		}
		lat = append(lat, time.Duration(max(dropped.Load()-ret, 0)))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1])/1e3, "max-µs")
}

// BenchmarkRedisL2Hit compares a read that misses locally and is answered
// by Redis with a plain rueidis GET of the same record.
func BenchmarkRedisL2Hit(b *testing.B) {
	ctx := context.Background()
	if _, err := exec.LookPath("redis-server"); err != nil {
		b.Skip("redis-server not installed")
	}
	addr := benchRedis(b)
	st, err := Redis(RedisConfig{Addr: addr})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	c, err := New[string](ctx, st, Options[string]{TTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "k", "value"); err != nil {
		b.Fatal(err)
	}
	b.Run("impl=rueidis-get", func(b *testing.B) {
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		defer client.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := client.Do(ctx, client.B().Get().Key(st.dataKey("k")).Build()).AsBytes(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=sharedcache", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.l1.Delete("k") // a local miss each time
			if _, err := c.Get(ctx, "k"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchRedis starts a redis-server for a benchmark and returns its address.
func benchRedis(b *testing.B) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no", "--dir", b.TempDir(), "--logfile", "")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "Ready to accept connections") {
			go io.Copy(io.Discard, out)
			return addr
		}
	}
	b.Fatal("redis-server exited before it was ready")
	return ""
}
