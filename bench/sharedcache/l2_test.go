package sharedcachebench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/rueidis"
	"github.com/ttlkit/ttlkit/sharedcache"
	"github.com/ttlkit/ttlkit/sharedcache/embedded"
	"github.com/zeromicro/go-zero/core/logx"
	zcache "github.com/zeromicro/go-zero/core/stores/cache"
	"github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/core/syncx"
)

// User is the value every implementation reads: about 70 bytes of JSON.
type User struct {
	ID    int    `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

var ada = User{ID: 42, Name: "Ada Lovelace", Email: "ada@example.com"}

// impl is one implementation's write and read of a key holding ada. The
// benchmark writes every key it will read before the timer starts and
// reads each once, so a read is never answered by a local copy: for
// sharedcache, another instance (its own connection and cache) writes.
type impl struct {
	name string
	put  func(ctx context.Context, key string) error
	get  func(ctx context.Context, key string) error
	// local reports how many of sharedcache's reads were local hits (nil
	// for the others): TestImpls checks that there are none.
	local func() uint64
}

// startRedis starts redis-server on a free loopback port with no
// persistence and returns its address; without it, a local run skips and
// CI fails.
func startRedis(tb testing.TB) string {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal("redis-server not installed (CI: .ci/run installs it)")
		}
		tb.Skip("redis-server not installed: apt-get install -y redis-server")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port,
		"--save", "", "--appendonly", "no", "--dir", tb.TempDir(), "--logfile", "")
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "Ready to accept connections") {
			go io.Copy(io.Discard, out)
			return addr
		}
	}
	tb.Fatal("redis-server exited before it was ready")
	return ""
}

// redisImpls returns go-zero's cache, a plain rueidis GET and sharedcache
// on one redis-server.
func redisImpls(tb testing.TB) []impl {
	tb.Helper()
	addr := startRedis(tb)
	raw, err := json.Marshal(ada)
	if err != nil {
		tb.Fatal(err)
	}

	logx.Disable()
	zc := zcache.New(zcache.ClusterConf{{RedisConf: redis.RedisConf{Host: addr, Type: redis.NodeType}, Weight: 100}},
		syncx.NewSingleFlight(), zcache.NewStat("bench"), errNotFound, zcache.WithExpiry(time.Hour))

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rc.Close)

	reader, writer := sharedPair(tb, func() (sharedcache.Store, error) {
		return sharedcache.Redis(sharedcache.RedisConfig{Addr: addr})
	})
	return []impl{
		{name: "gozero",
			put: func(ctx context.Context, key string) error { return zc.SetCtx(ctx, "gozero:"+key, ada) },
			get: func(ctx context.Context, key string) error {
				var u User
				if err := zc.GetCtx(ctx, "gozero:"+key, &u); err != nil {
					return err
				}
				return check(u)
			}},
		{name: "rueidis-get",
			put: func(ctx context.Context, key string) error {
				return rc.Do(ctx, rc.B().Set().Key("plain:"+key).Value(rueidis.BinaryString(raw)).Build()).Error()
			},
			get: func(ctx context.Context, key string) error {
				_, err := rc.Do(ctx, rc.B().Get().Key("plain:"+key).Build()).AsBytes()
				return err
			}},
		sharedImpl(reader, writer),
	}
}

// sharedPair returns two caches on two stores made by open: one that reads
// and one that writes, as two instances.
func sharedPair(tb testing.TB, open func() (sharedcache.Store, error)) (reader, writer *sharedcache.Cache[User]) {
	tb.Helper()
	var cs [2]*sharedcache.Cache[User]
	for i := range cs {
		st, err := open()
		if err != nil {
			tb.Fatal(err)
		}
		c, err := sharedcache.New[User](context.Background(), st, sharedcache.Options[User]{TTL: time.Hour})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			c.Close()
			st.(interface{ Close() error }).Close()
		})
		cs[i] = c
	}
	return cs[0], cs[1]
}

func sharedImpl(reader, writer *sharedcache.Cache[User]) impl {
	return impl{name: "sharedcache",
		put: func(ctx context.Context, key string) error { return writer.Set(ctx, key, ada) },
		get: func(ctx context.Context, key string) error {
			u, err := reader.Get(ctx, key)
			if err != nil {
				return err
			}
			return check(u)
		},
		local: func() uint64 { return reader.Stats().L1Hits },
	}
}

// natsImpls returns a plain key-value Get and sharedcache on one embedded
// NATS server, reached over loopback TCP as other processes would.
func natsImpls(tb testing.TB) []impl {
	tb.Helper()
	ctx := context.Background()
	srv, err := sharedcache.NATS(sharedcache.NATSConfig{Server: embedded.Server{Listen: "127.0.0.1:0", StoreDir: tb.TempDir()}, Bucket: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	reader, writer := sharedPair(tb, func() (sharedcache.Store, error) {
		return sharedcache.NATS(sharedcache.NATSConfig{URL: srv.ClientURL(), Bucket: "bench"})
	})

	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	// The bucket sharedcache made; plain keys beside its own.
	kv, err := js.KeyValue(ctx, "bench")
	if err != nil {
		tb.Fatal(err)
	}
	raw, _ := json.Marshal(ada)
	return []impl{
		{name: "nats-kv-get",
			put: func(ctx context.Context, key string) error { _, err := kv.Put(ctx, "plain-"+key, raw); return err },
			get: func(ctx context.Context, key string) error { _, err := kv.Get(ctx, "plain-"+key); return err }},
		sharedImpl(reader, writer),
	}
}

var errNotFound = errors.New("not found")

func check(u User) error {
	if u != ada {
		return fmt.Errorf("read %+v, want %+v", u, ada)
	}
	return nil
}

var stores = []struct {
	name  string
	impls func(testing.TB) []impl
}{{"redis", redisImpls}, {"nats", natsImpls}}

// BenchmarkL2Hit: a read of a key answered by the store, one at a time:
// go-zero's cache Get and sharedcache's local miss (the JSON decoded, a
// local copy kept) against a plain GET of the same bytes (rueidis, NATS
// KV). Each read is of a key written before the timer, read only once.
func BenchmarkL2Hit(b *testing.B) {
	for _, s := range stores {
		b.Run("store="+s.name, func(b *testing.B) {
			impls := s.impls(b)
			for _, m := range impls {
				run := 0
				b.Run("impl="+m.name, func(b *testing.B) {
					ctx := context.Background()
					run++
					keys := make([]string, b.N)
					for i := range keys {
						keys[i] = fmt.Sprintf("r%d-u%d", run, i)
						if err := m.put(ctx, keys[i]); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportAllocs()
					b.ResetTimer()
					for _, k := range keys {
						if err := m.get(ctx, k); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// TestImpls: every implementation reads back what it wrote, and none of
// sharedcache's reads is a local hit, as BenchmarkL2Hit assumes.
func TestImpls(t *testing.T) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			for _, m := range s.impls(t) {
				for i := range 20 {
					k := fmt.Sprint("t", i)
					if err := m.put(ctx, k); err != nil {
						t.Fatalf("%s put: %v", m.name, err)
					}
					if err := m.get(ctx, k); err != nil {
						t.Errorf("%s get: %v", m.name, err)
					}
				}
				if m.local != nil {
					if n := m.local(); n != 0 {
						t.Errorf("%s: %d of 20 reads were local hits, want 0", m.name, n)
					}
				}
			}
		})
	}
}
