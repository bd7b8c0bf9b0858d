package sharedcache

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSConfig configures NATS: URL, or Server for a server in this process.
type NATSConfig struct {
	// URL of a NATS server with JetStream ("nats://10.0.0.5:4222").
	// Exclusive with Server.
	URL string

	// Server is a server this process runs and the store connects to in
	// memory: embedded.Server (package
	// github.com/ttlkit/ttlkit/sharedcache/embedded), whose Listen lets the
	// other instances in. NATS starts it and Close stops it. Nil with URL,
	// so that an instance that connects by URL links no nats-server.
	Server NATSServer

	// Bucket names the key-value bucket holding the entries; the lease
	// bucket is Bucket+"_lease". Instances sharing a cache use the same
	// name. Empty means "sharedcache".
	Bucket string

	// Timeout bounds each call to the server. 0 means 2s.
	Timeout time.Duration
}

// NATSServer is a NATS server run inside this process: embedded.Server.
// StartServer starts it and returns client options that reach it in
// memory, the URL other processes connect to ("" if none) and a function
// that stops it, which NATSStore.Close calls once, after closing the
// connection. An error about a bad configuration wraps ErrOptions.
type NATSServer interface {
	StartServer() (opts []nats.Option, url string, stop func(), err error)
}

// NATSStore is the NATS JetStream key-value Store. Create it with NATS;
// Close it after the Cache using it.
type NATSStore struct {
	cfg       NATSConfig
	serverURL string // Server's address for other processes, "" if none
	stop      func() // stops Server; nil with a URL or once stopped
	nc        *nats.Conn
	js        jetstream.JetStream

	kv, leases jetstream.KeyValue // set by bind
	ctx        context.Context    // cancelled by unbind
	cancel     context.CancelFunc

	mu      sync.Mutex // guards h and watcher
	h       handler
	watcher jetstream.KeyWatcher
	wg      sync.WaitGroup // the event goroutine
	kick    chan struct{}  // reconnects, for the event goroutine
}

// inProcessURL is what NATS gives nats.Connect for a Server that does not
// listen: the in-memory connection replaces the dial, so it is only a name.
const inProcessURL = "nats://in-process"

// NATS connects to cfg.URL, or starts cfg.Server and connects to it, and
// returns a store for one Cache.
func NATS(cfg NATSConfig) (*NATSStore, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = "sharedcache"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	switch {
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("%w: NATSConfig.Timeout %v is negative", ErrOptions, cfg.Timeout)
	case cfg.URL == "" && cfg.Server == nil:
		return nil, fmt.Errorf("%w: NATSConfig: set URL, or Server for a server in this process (embedded.Server{})", ErrOptions)
	case cfg.URL != "" && cfg.Server != nil:
		return nil, fmt.Errorf("%w: NATSConfig: URL and Server are exclusive", ErrOptions)
	}
	s := &NATSStore{cfg: cfg, kick: make(chan struct{}, 1)}
	url := cfg.URL
	opts := []nats.Option{
		nats.Name("sharedcache"),
		nats.MaxReconnects(-1),
		// A write made while reconnecting fails at once instead of waiting
		// in the client's buffer, which would send it after the reconnect:
		// a Set already reported failed would then land over whatever was
		// written meanwhile (TestWriteWhileReconnectingNeverLandsLater).
		nats.ReconnectBufSize(-1),
		nats.ReconnectWait(50 * time.Millisecond),
		nats.PingInterval(time.Second),
		nats.MaxPingsOutstanding(2),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { s.disconnected() }),
		nats.ReconnectHandler(func(*nats.Conn) { s.reconnected() }),
	}
	if cfg.Server != nil {
		srvOpts, srvURL, stop, err := cfg.Server.StartServer()
		if err != nil {
			return nil, err
		}
		s.serverURL, s.stop = srvURL, stop
		url = inProcessURL
		opts = append(opts, srvOpts...)
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("%w: connect %s: %v", ErrUnavailable, url, err)
	}
	s.nc = nc
	if s.js, err = jetstream.New(nc); err != nil {
		s.Close()
		return nil, fmt.Errorf("sharedcache: jetstream: %w", err)
	}
	return s, nil
}

// ClientURL returns the URL other instances connect to: the address of
// NATSConfig.Server when it listens (embedded.Server.Listen), "" when it
// does not, otherwise NATSConfig.URL.
func (s *NATSStore) ClientURL() string {
	if s.cfg.Server != nil {
		return s.serverURL
	}
	return s.cfg.URL
}

// Close disconnects and stops NATSConfig.Server, if any. Close the Cache
// first. Close is idempotent.
func (s *NATSStore) Close() error {
	s.unbind()
	if s.nc != nil {
		s.nc.Close()
	}
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
	return nil
}

// encodeKey maps any string to a valid key-value key (letters, digits, '-'
// and '_'); the leading 'k' keeps the empty string valid.
func encodeKey(key string) string { return "k" + base64.RawURLEncoding.EncodeToString([]byte(key)) }

func decodeKey(k string) (string, bool) {
	if len(k) == 0 || k[0] != 'k' {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(k[1:])
	return string(b), err == nil
}

func (s *NATSStore) bind(ctx context.Context, maxAge, leaseTTL time.Duration, h handler) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h != nil {
		return fmt.Errorf("%w: the store already serves a cache", ErrOptions)
	}
	var err error
	s.kv, err = s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: s.cfg.Bucket, TTL: maxAge, History: 1,
	})
	if err != nil {
		return fmt.Errorf("%w: bucket %s: %v", ErrUnavailable, s.cfg.Bucket, err)
	}
	s.leases, err = s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: s.cfg.Bucket + "_lease", TTL: leaseTTL, History: 1,
	})
	if err != nil {
		return fmt.Errorf("%w: lease bucket %s_lease: %v", ErrUnavailable, s.cfg.Bucket, err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.watcher, err = s.kv.WatchAll(s.ctx, jetstream.UpdatesOnly(), jetstream.MetaOnly()); err != nil {
		s.cancel()
		return fmt.Errorf("%w: watch %s: %v", ErrUnavailable, s.cfg.Bucket, err)
	}
	s.h = h
	s.wg.Add(1)
	go s.events(s.watcher)
	return nil
}

// events delivers the watcher's updates to the handler and, after a
// reconnect, replaces the watcher before it reports reconnected: the handler
// trusts its local copies again only once a watch is known to be running.
func (s *NATSStore) events(w jetstream.KeyWatcher) {
	defer s.wg.Done()
	updates := w.Updates()
	for {
		select {
		case <-s.ctx.Done():
			return
		case e, ok := <-updates:
			if !ok {
				updates = nil // stopped; a reconnect brings a new one
				continue
			}
			if e == nil {
				continue
			}
			if key, ok := decodeKey(e.Key()); ok {
				s.h.changed(key, e.Revision())
			}
		case <-s.kick:
			w.Stop()
			for {
				nw, err := s.kv.WatchAll(s.ctx, jetstream.UpdatesOnly(), jetstream.MetaOnly())
				if err == nil {
					w, updates = nw, nw.Updates()
					s.mu.Lock()
					s.watcher = nw
					s.mu.Unlock()
					s.h.resumed()
					break
				}
				if s.ctx.Err() != nil {
					return
				}
				select { // not connected again yet: the next reconnect kicks
				case <-s.ctx.Done():
					return
				case <-s.kick:
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}
}

func (s *NATSStore) disconnected() {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	if h != nil {
		h.disconnected()
	}
}

func (s *NATSStore) reconnected() {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	if h == nil {
		return
	}
	h.reconnected()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *NATSStore) unbind() {
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
	if s.watcher != nil {
		s.watcher.Stop()
		s.watcher = nil
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	s.h = nil
	s.mu.Unlock()
}

func (s *NATSStore) connected() bool { return s.nc.IsConnected() }

func (s *NATSStore) op(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if !s.nc.IsConnected() {
		return nil, nil, ErrUnavailable
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	return ctx, cancel, nil
}

func storeErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

func (s *NATSStore) get(ctx context.Context, key string) ([]byte, uint64, bool, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, 0, false, err
	}
	defer cancel()
	e, err := s.kv.Get(ctx, encodeKey(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, storeErr(err)
	}
	return e.Value(), e.Revision(), true, nil
}

func (s *NATSStore) put(ctx context.Context, key string, rec []byte) (uint64, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	rev, err := s.kv.Put(ctx, encodeKey(key), rec)
	if err != nil {
		return 0, storeErr(err)
	}
	return rev, nil
}

func (s *NATSStore) del(ctx context.Context, key string) error {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if err := s.kv.Delete(ctx, encodeKey(key)); err != nil {
		return storeErr(err)
	}
	return nil
}

func (s *NATSStore) lease(ctx context.Context, key string) (func(), bool, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, false, err
	}
	defer cancel()
	k := encodeKey(key)
	rev, err := s.leases.Create(ctx, k, nil)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, storeErr(err)
	}
	release := func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
		defer cancel()
		// Only our own revision: an expired lease may be someone else's now.
		_ = s.leases.Delete(ctx, k, jetstream.LastRevision(rev))
	}
	return release, true, nil
}
