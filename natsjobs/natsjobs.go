package natsjobs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/ttlkit/ttlkit/jobs"
)

// Config configures Open. Queues is required; so is StoreDir for an
// embedded server unless Ephemeral is set.
type Config struct {
	// URL of an existing server or cluster ("nats://a:4222,nats://b:4222").
	// Empty starts an embedded server in this process instead.
	URL string
	// Options are extra client options for URL (credentials, TLS, name).
	Options []nats.Option

	// StoreDir is the embedded server's store directory. It is locked while
	// open: a second Open on it, from any process, fails.
	StoreDir string
	// Ephemeral stores the embedded server's data in a temporary directory
	// that Close removes (tests). StoreDir must then be empty.
	Ephemeral bool
	// Listen is the address ("127.0.0.1:4222"; port 0 picks one) on which
	// the embedded server accepts other processes. Empty: no port at all,
	// this process talks to its server in memory. An address that is not
	// loopback (a host name other than localhost, an unspecified or
	// another interface's address) requires credentials (Token, User or
	// NKeySeed) unless InsecureNoAuth is set: Open refuses it otherwise
	// (ErrInvalid), since anyone who reaches the port could enqueue,
	// cancel and read jobs.
	Listen string
	// InsecureNoAuth lets Listen accept clients on a non-loopback address
	// without credentials (a private network that is trusted as a whole).
	InsecureNoAuth bool

	// Credentials: at most one of Token, User with Password, NKeySeed.
	// With URL they authenticate this client. With the embedded server
	// they are what it requires of every client, this process's own
	// in-memory connection included: other processes connect to Listen
	// with the same credentials in their Config.
	Token    string
	User     string
	Password string
	// NKeySeed is an nkey user seed ("SU..."; nk -gen user): the client
	// signs the server's challenge with it, the embedded server admits
	// its public key. The seed is a secret, as a password is.
	NKeySeed string
	// TLS, with URL, is the client's TLS configuration (root CAs, a
	// client certificate): the connection must use TLS. With the
	// embedded server and Listen, it is the server's, and must hold a
	// certificate: clients connecting to Listen must use TLS (and present
	// a verified certificate if ClientAuth is RequireAndVerifyClientCert);
	// this process's in-memory connection does not.
	TLS *tls.Config

	// Queues names every queue this client enqueues to or works on:
	// letters, digits, '-' and '_'. Open creates their streams if missing.
	// With URL it may be empty: such an administrative client (the
	// natsjobs command, a console) creates nothing and accepts every
	// queue the server has (see Queues and the operations API).
	Queues []string
	// Replicas is the number of copies the cluster keeps of each stream
	// and consumer this package creates (jobs, dead letters, advisories):
	// 1, 3 or 5. R3 survives the loss of one server, R5 of two; the
	// cluster needs at least that many JetStream servers. Zero means 1;
	// other values are refused (ErrInvalid), and so is more than 1 for
	// the embedded server. Open updates existing streams to this count.
	Replicas int
	// AckWait is how long the server waits for a worker's sign of life
	// before it gives a delivery to another worker. Running handlers
	// extend it on their own every AckWait/3. Zero means 30 s.
	AckWait time.Duration
	// Timeout bounds each call to the server. Zero means 5 s.
	Timeout time.Duration
}

func (c *Config) validate() error {
	if c.URL == "" {
		if c.Ephemeral && c.StoreDir != "" {
			return invalidf("Config: StoreDir and Ephemeral are exclusive")
		}
		if !c.Ephemeral && c.StoreDir == "" {
			return invalidf("Config: StoreDir is required for the embedded server (or set Ephemeral)")
		}
	} else if c.StoreDir != "" || c.Ephemeral || c.Listen != "" || c.InsecureNoAuth {
		return invalidf("Config: StoreDir, Ephemeral, Listen and InsecureNoAuth apply to the embedded server only, not with URL")
	}
	if err := c.validateAuth(); err != nil {
		return err
	}
	if len(c.Queues) == 0 && c.URL == "" {
		return invalidf("Config: no Queues")
	}
	for _, q := range c.Queues {
		if err := checkQueueName(q); err != nil {
			return err
		}
	}
	switch {
	case c.Replicas == 0:
		c.Replicas = 1
	case c.Replicas < 0 || c.Replicas > 5:
		return invalidf("Config: Replicas %d out of range 1..5", c.Replicas)
	case c.Replicas%2 == 0:
		return invalidf("Config: Replicas %d: use 1, 3 or 5 (an even count survives no more server losses than one less)", c.Replicas)
	case c.Replicas > 1 && c.URL == "":
		return invalidf("Config: Replicas %d needs a cluster (URL); the embedded server is one server", c.Replicas)
	}
	if c.AckWait < 0 || (c.AckWait > 0 && c.AckWait < time.Second) {
		return invalidf("Config: AckWait %v under 1s", c.AckWait)
	}
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.Timeout < 0 {
		return invalidf("Config: negative Timeout")
	}
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	return nil
}

// validateAuth checks the credentials, TLS and Listen's need for them.
func (c *Config) validateAuth() error {
	kinds := 0
	for _, set := range []bool{c.Token != "", c.User != "" || c.Password != "", c.NKeySeed != ""} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return invalidf("Config: give one of Token, User and Password, NKeySeed")
	case (c.User == "") != (c.Password == ""):
		return invalidf("Config: User and Password go together")
	}
	if c.NKeySeed != "" {
		if _, _, err := nkeyUser(c.NKeySeed); err != nil {
			return err
		}
	}
	if c.URL != "" {
		return nil
	}
	if c.TLS != nil {
		if c.Listen == "" {
			return invalidf("Config: TLS for the embedded server needs Listen")
		}
		if len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil {
			return invalidf("Config: TLS for the embedded server needs a certificate")
		}
	}
	if c.Listen != "" && kinds == 0 && !c.InsecureNoAuth {
		host, _, err := net.SplitHostPort(c.Listen)
		if err != nil {
			return invalidf("Config.Listen %q: %v", c.Listen, err)
		}
		if !loopback(host) {
			return invalidf("Config.Listen %q is not loopback: set Token, User and Password or NKeySeed (or InsecureNoAuth)", c.Listen)
		}
	}
	return nil
}

// loopback reports whether host names only this machine: "localhost" or
// a loopback address. An empty host listens on every interface.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// nkeyUser parses a user seed and returns its key pair and public key.
func nkeyUser(seed string) (nkeys.KeyPair, string, error) {
	kp, err := nkeys.FromSeed([]byte(seed))
	if err != nil {
		return nil, "", invalidf("Config.NKeySeed: %v", err)
	}
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, "", invalidf("Config.NKeySeed: not a user seed (SU...)")
	}
	return kp, pub, nil
}

// authOptions are the client options that present the credentials.
func (c *Config) authOptions() []nats.Option {
	switch {
	case c.Token != "":
		return []nats.Option{nats.Token(c.Token)}
	case c.User != "":
		return []nats.Option{nats.UserInfo(c.User, c.Password)}
	case c.NKeySeed != "":
		kp, pub, _ := nkeyUser(c.NKeySeed) // validated
		return []nats.Option{nats.Nkey(pub, kp.Sign)}
	}
	return nil
}

// Client enqueues jobs and runs workers. It is safe for concurrent use.
type Client struct {
	cfg    Config
	nc     *nats.Conn
	js     jetstream.JetStream
	server *embedded // nil with Config.URL

	schedules sync.Map // cron spec (with its CRON_TZ prefix) -> *cron.Schedule

	mu     sync.Mutex
	closed bool
	stop   chan struct{} // closed by Close: stops every Work
	works  sync.WaitGroup
}

// Open connects to Config.URL, or starts an embedded server, and creates
// the queues' streams if they do not exist. It fails with ErrInvalid for a
// bad Config, ErrUnavailable when the server cannot be reached, and an
// error naming the version when the server is older than 2.14.
func Open(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, stop: make(chan struct{})}
	opts := []nats.Option{
		nats.MaxReconnects(-1),
		// A publish while disconnected fails at once instead of
		// waiting in a buffer that a crash would lose.
		nats.ReconnectBufSize(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// Outages are reported by the calls that fail, not printed.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}
	url := cfg.URL
	if url == "" {
		e, err := startEmbedded(&cfg)
		if err != nil {
			return nil, err
		}
		c.server = e
		// In memory: no TLS even when Listen requires it (a tls://
		// URL would make the client ask for it).
		url = strings.Replace(e.srv.ClientURL(), "tls://", "nats://", 1)
		opts = append(opts, nats.InProcessServer(e.srv))
	} else {
		opts = append(opts, nats.Timeout(cfg.Timeout))
		if cfg.TLS != nil {
			opts = append(opts, nats.Secure(cfg.TLS))
		}
		opts = append(opts, cfg.Options...)
	}
	opts = append(opts, cfg.authOptions()...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		c.shutdownServer()
		return nil, fmt.Errorf("%w: connect %s: %w", ErrUnavailable, url, err)
	}
	c.nc = nc
	if err := checkVersion(nc.ConnectedServerVersion()); err != nil {
		c.closeConn()
		return nil, err
	}
	c.js, err = jetstream.New(nc, jetstream.WithDefaultTimeout(cfg.Timeout))
	if err != nil {
		c.closeConn()
		return nil, fmt.Errorf("natsjobs: %w", err)
	}
	for _, q := range cfg.Queues {
		if err := c.declare(ctx, q); err != nil {
			c.closeConn()
			return nil, err
		}
	}
	return c, nil
}

// URL returns the address other processes use to reach the embedded server
// (empty unless Config.Listen is set), or Config.URL.
func (c *Client) URL() string {
	if c.server == nil {
		return c.cfg.URL
	}
	if c.cfg.Listen == "" {
		return ""
	}
	return c.server.srv.ClientURL()
}

// Close stops every Work (each shuts down as Work describes: its running
// handlers get WorkOptions.Grace, then their ctx is cancelled), waits for
// them, closes the connection and, with an
// embedded server, shuts it down after its store is flushed. Jobs not yet
// run stay stored for the next Open. Close is idempotent; later calls of
// any method return ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.stop)
	c.mu.Unlock()
	c.works.Wait()
	c.closeConn()
	return nil
}

func (c *Client) closeConn() {
	if c.nc != nil {
		c.nc.Flush()
		c.nc.Close()
	}
	c.shutdownServer()
}

func (c *Client) shutdownServer() {
	if c.server != nil {
		c.server.stop()
	}
}

// ready checks that the client is open and connected, so that calls fail
// fast during an outage instead of waiting for a timeout.
func (c *Client) ready() error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if !c.nc.IsConnected() {
		return fmt.Errorf("%w: not connected (%v)", ErrUnavailable, c.nc.Status())
	}
	return nil
}

func (c *Client) checkQueue(q string) error {
	if len(c.cfg.Queues) == 0 {
		return checkQueueName(q) // an administrative client
	}
	if !slices.Contains(c.cfg.Queues, q) {
		return invalidf("unknown queue %q (not in Config.Queues)", q)
	}
	return nil
}

func checkQueueName(q string) error {
	if q == "" {
		return invalidf("empty queue name")
	}
	if len(q) > 64 {
		return invalidf("queue name %q longer than 64 bytes", q)
	}
	for _, r := range q {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return invalidf("queue name %q: only letters, digits, '-' and '_'", q)
		}
	}
	return nil
}

// Stream and subject layout, per queue q:
//
//	stream natsjobs_q (work queue)  natsjobs.q.s.<id>  schedule: the job waiting for its time
//	                                natsjobs.q.r.<id>  ready: the job due, for the workers
//	stream natsjobs_q_dead (limits) natsjobs.q.dead.<id>  dead letters, one per ID
//	stream natsjobs_q_adv (work queue) the server's max-deliveries advisories for q
func workStream(q string) string       { return "natsjobs_" + q }
func deadStream(q string) string       { return "natsjobs_" + q + "_dead" }
func advStream(q string) string        { return "natsjobs_" + q + "_adv" }
func schedSubject(q, id string) string { return "natsjobs." + q + ".s." + id }
func readySubject(q, id string) string { return "natsjobs." + q + ".r." + id }
func deadSubject(q, id string) string  { return "natsjobs." + q + ".dead." + id }
func jobSubjects(q, id string) string  { return "natsjobs." + q + ".*." + id } // schedule and ready
func tombSubject(q, id, gen string) string {
	return "natsjobs." + q + ".x." + id + "." + gen // outside jobSubjects (one more token)
}
func advSubject(q string) string {
	return "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + workStream(q) + "." + workerConsumer
}
func idOf(subject, prefix string) string { return subject[len(prefix):] }

const (
	workerConsumer = "workers"
	advConsumer    = "advisories"
)

// noDedupe is the shortest duplicate window the server takes, for the
// streams whose messages carry no Nats-Msg-Id: at start the server reads
// every message stored within the window to rebuild its table of IDs,
// which with the default of two minutes was most of a restart's time.
const noDedupe = 100 * time.Millisecond

// declare creates or updates the queue's three streams.
func (c *Client) declare(ctx context.Context, q string) error {
	storage := jetstream.FileStorage
	streams := []jetstream.StreamConfig{{
		Name:              workStream(q),
		Subjects:          []string{"natsjobs." + q + ".s.>", "natsjobs." + q + ".r.>", "natsjobs." + q + ".x.>"},
		Retention:         jetstream.WorkQueuePolicy,
		Storage:           storage,
		Replicas:          c.cfg.Replicas,
		MaxMsgsPerSubject: 1, // one schedule and one ready message per ID: re-enqueueing replaces
		AllowMsgSchedules: true,
		AllowMsgTTL:       true, // tombstones (replace.go)
		AllowRollup:       true,
		// Direct reads: batched for the operations API (ops_read.go), and
		// a run's check that its message is still stored (Client.stored)
		// with one replica; with more, that check asks the leader's API,
		// since a follower could answer from before a purge.
		AllowDirect: true,
		Duplicates:  noDedupe,
	}, {
		Name:              deadStream(q),
		Subjects:          []string{"natsjobs." + q + ".dead.>"},
		Storage:           storage,
		Replicas:          c.cfg.Replicas,
		MaxMsgsPerSubject: 1,
		AllowDirect:       true,
		Duplicates:        10 * time.Minute, // dead-letter IDs: one per stored delivery
	}, {
		Name:       advStream(q),
		Subjects:   []string{advSubject(q)},
		Retention:  jetstream.WorkQueuePolicy,
		Storage:    storage,
		Replicas:   c.cfg.Replicas,
		Duplicates: noDedupe,
	}}
	for _, sc := range streams {
		if _, err := c.js.CreateOrUpdateStream(ctx, sc); err != nil {
			// With a cluster too small for Replicas, the server
			// says "no suitable peers for placement".
			return wrap(fmt.Sprintf("create stream %s with Replicas %d", sc.Name, sc.Replicas), err)
		}
	}
	// The workers' consumer is configured by Work (its MaxDeliver is the
	// retry policy's); create it here only if missing, so that Stats works
	// before any worker started and jobs are kept for the first one.
	if _, err := c.js.Consumer(ctx, workStream(q), workerConsumer); errors.Is(err, jetstream.ErrConsumerNotFound) {
		_, err = c.js.CreateConsumer(ctx, workStream(q), workerConfig(q, c.cfg, defaultRetry))
		if err != nil && !errIs(err, jetstream.JSErrCodeConsumerExists) {
			return wrap("create consumer "+workerConsumer, err)
		}
	} else if err != nil {
		return wrap("consumer "+workerConsumer, err)
	}
	return nil
}

// workerConfig is the workers' shared consumer: deliveries of the ready
// subjects, redelivered after AckWait, at most r.Attempts times.
func workerConfig(q string, cfg Config, r jobs.Retry) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       workerConsumer,
		FilterSubject: readySubject(q, ">"),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    r.Attempts,
		// No cap on unacknowledged deliveries: those a worker holds in
		// its wheel until due count too, and the server's default (1000)
		// kept a burst of early ones on the server past their time. A
		// worker still takes due jobs only as its runners free up.
		MaxAckPending: -1,
		Replicas:      cfg.Replicas,
	}
}

// errIs reports whether err is a JetStream API error with the given code.
func errIs(err error, code jetstream.ErrorCode) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == code
}
