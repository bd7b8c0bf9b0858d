package sharedcache

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// RedisConfig configures Redis.
type RedisConfig struct {
	// Addr is the server's address ("127.0.0.1:6379"). Required. Redis 6
	// or newer (RESP3 and client tracking).
	Addr string

	// Prefix starts every key the cache writes; instances sharing a cache
	// use the same one. Empty means "sharedcache:".
	Prefix string

	// Timeout bounds each call to the server. 0 means 2s.
	Timeout time.Duration

	// Options, when not nil, is the base of the rueidis client's options
	// (passwords, TLS); InitAddress, ClientTrackingOptions and
	// OnInvalidations are set by Redis.
	Options *rueidis.ClientOption
}

// RedisStore is the Redis Store, on rueidis with server-assisted client-side
// caching: the server's invalidation messages (client tracking in broadcast
// mode on the key prefix) tell every instance which keys were written.
// Redis keeps no revision per key, so an invalidation drops the key's local
// copy whatever it holds, and a read in flight at that moment keeps none.
type RedisStore struct {
	cfg      RedisConfig
	client   rueidis.Client
	h        atomic.Pointer[handlerBox]
	leaseTTL time.Duration
	release  *rueidis.Lua
	up       atomic.Bool
	mu       sync.Mutex // serializes the resume loops
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	token    string
}

type handlerBox struct{ h handler }

// Redis connects to a Redis server and returns a store for one Cache.
func Redis(cfg RedisConfig) (*RedisStore, error) {
	if cfg.Addr == "" {
		return nil, fmt.Errorf("%w: RedisConfig.Addr is empty", ErrOptions)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "sharedcache:"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: RedisConfig.Timeout %v is negative", ErrOptions, cfg.Timeout)
	}
	s := &RedisStore{cfg: cfg, token: rand.Text()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	var opt rueidis.ClientOption
	if cfg.Options != nil {
		opt = *cfg.Options
	}
	opt.InitAddress = []string{cfg.Addr}
	opt.ClientTrackingOptions = []string{"PREFIX", cfg.Prefix, "BCAST", "NOLOOP"}
	opt.OnInvalidations = s.invalidations
	opt.DisableRetry = true
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("%w: connect %s: %v", ErrUnavailable, cfg.Addr, err)
	}
	s.client = client
	s.up.Store(true)
	s.release = rueidis.NewLuaScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	return s, nil
}

// Close disconnects. Close the Cache first. Close is idempotent.
func (s *RedisStore) Close() error {
	s.cancel()
	s.wg.Wait()
	s.client.Close()
	return nil
}

// invalidations runs on the client's reading goroutine: keys written by
// other clients, or nil when the connection broke (tracking is lost with it).
func (s *RedisStore) invalidations(msgs []rueidis.RedisMessage) {
	b := s.h.Load()
	if b == nil {
		return
	}
	if msgs == nil {
		// Copies stay served (up to LocalTTL) until a new connection
		// answers; then they are dropped, as writes may have been missed.
		if s.up.Swap(false) {
			b.h.disconnected()
		}
		if s.ctx.Err() != nil {
			return
		}
		s.wg.Add(1)
		go s.resume(b.h)
		return
	}
	for _, m := range msgs {
		k, err := m.ToString()
		if err != nil {
			continue
		}
		// Data keys are Prefix+"v"+key, leases Prefix+"lease:"+key.
		if key, ok := strings.CutPrefix(k, s.cfg.Prefix+"v"); ok {
			b.h.changed(key, math.MaxUint64)
		}
	}
}

// resume pings until a connection (with tracking turned on in its
// handshake) answers, then reports reconnected and resumed.
func (s *RedisStore) resume(h handler) {
	defer s.wg.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Timeout)
		err := s.client.Do(ctx, s.client.B().Ping().Build()).Error()
		cancel()
		if err == nil {
			h.reconnected()
			s.up.Store(true)
			h.resumed()
			return
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *RedisStore) dataKey(key string) string  { return s.cfg.Prefix + "v" + key }
func (s *RedisStore) leaseKey(key string) string { return s.cfg.Prefix + "lease:" + key }

func (s *RedisStore) bind(ctx context.Context, _, leaseTTL time.Duration, h handler) error {
	if !s.h.CompareAndSwap(nil, &handlerBox{h}) {
		return fmt.Errorf("%w: the store already serves a cache", ErrOptions)
	}
	s.leaseTTL = leaseTTL
	// The first command dials, and the handshake turns tracking on.
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.client.Do(ctx, s.client.B().Ping().Build()).Error(); err != nil {
		s.h.Store(nil)
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

func (s *RedisStore) unbind() { s.h.Store(nil) }

func (s *RedisStore) connected() bool { return s.up.Load() }

func (s *RedisStore) op(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if !s.up.Load() {
		return nil, nil, ErrUnavailable
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	return ctx, cancel, nil
}

func (s *RedisStore) get(ctx context.Context, key string) ([]byte, uint64, bool, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, 0, false, err
	}
	defer cancel()
	b, err := s.client.Do(ctx, s.client.B().Get().Key(s.dataKey(key)).Build()).AsBytes()
	if rueidis.IsRedisNil(err) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, storeErr(err)
	}
	return b, 0, true, nil
}

func (s *RedisStore) put(ctx context.Context, key string, rec []byte) (uint64, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	_, deadline, _, err := parseRecord(rec)
	if err != nil {
		return 0, err
	}
	cmd := s.client.B().Set().Key(s.dataKey(key)).Value(rueidis.BinaryString(rec)).Pxat(deadline.Add(time.Millisecond)).Build()
	if err := s.client.Do(ctx, cmd).Error(); err != nil {
		return 0, storeErr(err)
	}
	return 0, nil
}

func (s *RedisStore) del(ctx context.Context, key string) error {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if err := s.client.Do(ctx, s.client.B().Del().Key(s.dataKey(key)).Build()).Error(); err != nil {
		return storeErr(err)
	}
	return nil
}

var leaseSeq atomic.Uint64

func (s *RedisStore) lease(ctx context.Context, key string) (func(), bool, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, false, err
	}
	defer cancel()
	lk := s.leaseKey(key)
	token := fmt.Sprintf("%s-%d", s.token, leaseSeq.Add(1))
	err = s.client.Do(ctx, s.client.B().Set().Key(lk).Value(token).Nx().Px(s.leaseTTL).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, storeErr(err)
	}
	release := func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
		defer cancel()
		// Only our own token: an expired lease may be someone else's now.
		_ = s.release.Exec(ctx, s.client, []string{lk}, []string{token}).Error()
	}
	return release, true, nil
}
