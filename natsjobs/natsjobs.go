package natsjobs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/ttlkit/ttlkit/natsjobs/internal/natsauth"
)

// Config configures Open. Queues is required, and one of URL and Server.
type Config struct {
	// URL of an existing server or cluster ("nats://a:4222,nats://b:4222").
	URL string
	// Server, instead of URL, is a server that Open starts inside this
	// process and Close stops: embedded.Server (package
	// natsjobs/embedded), with its store directory, its Listen address
	// for other processes and the credentials it requires. Open connects
	// to it in memory. It is an interface so that a worker that connects
	// by URL links no nats-server.
	Server Server
	// Options are extra client options (credentials, TLS, name), after
	// those of Server or URL.
	Options []nats.Option

	// Credentials for URL: at most one of Token, User with Password,
	// NKeySeed. (An embedded server's own go in embedded.Server, which
	// presents them on this process's connection by itself.)
	Token    string
	User     string
	Password string
	// NKeySeed is an nkey user seed ("SU..."; nk -gen user): the client
	// signs the server's challenge with it. The seed is a secret, as a
	// password is.
	NKeySeed string
	// TLS, with URL, is the client's TLS configuration (root CAs, a
	// client certificate): the connection must use TLS.
	TLS *tls.Config

	// Queues names every queue this client enqueues to or works on:
	// letters, digits, '-' and '_'. Open creates their streams if missing.
	// With URL it may be empty: such an administrative client (the
	// natsjobs command, a console) creates nothing and accepts every
	// queue the server has (see Queues and the operations API).
	Queues []string
	// Replicas is the number of copies the cluster keeps of each stream
	// and consumer this package creates (jobs, dead letters):
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

func (c *Config) creds() natsauth.Creds {
	return natsauth.Creds{Token: c.Token, User: c.User, Password: c.Password, NKeySeed: c.NKeySeed}
}

func (c *Config) validate() error {
	switch {
	case c.URL == "" && c.Server == nil:
		return invalidf("Config: set URL, or Server for a server in this process (embedded.Server{StoreDir: dir})")
	case c.URL != "" && c.Server != nil:
		return invalidf("Config: URL and Server are exclusive")
	case c.Server != nil && (c.creds().Set() || c.TLS != nil):
		return invalidf("Config: Token, User, Password, NKeySeed and TLS go with URL; an embedded server's go in embedded.Server")
	}
	if err := c.creds().Check("Config"); err != nil {
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

// Client enqueues jobs and runs workers. It is safe for concurrent use.
type Client struct {
	cfg Config
	nc  *nats.Conn
	js  jetstream.JetStream
	// With Config.Server: the address other processes use (empty if
	// none) and the server's stop (nil with Config.URL).
	serverURL  string
	stopServer func()

	schedules sync.Map // cron spec (with its CRON_TZ prefix) -> *cron.Schedule

	mu     sync.Mutex
	closed bool
	stop   chan struct{} // closed by Close: stops every Work
	works  sync.WaitGroup
}

// Open connects to Config.URL, or starts Config.Server and connects to it
// in memory, and creates the queues' streams if they do not exist. It
// fails with ErrInvalid for a bad Config (or Server), ErrUnavailable when
// the server cannot be reached, and an error naming the version when the
// server is older than 2.14. On failure a started server is stopped.
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
	if cfg.Server != nil {
		sopts, public, stop, err := cfg.Server.StartServer()
		if err != nil {
			return nil, err
		}
		c.serverURL, c.stopServer = public, stop
		// sopts reach the server in memory: no address is dialled.
		url = inProcessURL
		opts = append(opts, sopts...)
	} else {
		opts = append(opts, nats.Timeout(cfg.Timeout))
		if cfg.TLS != nil {
			opts = append(opts, nats.Secure(cfg.TLS))
		}
		opts = append(opts, cfg.creds().ClientOptions()...)
	}
	opts = append(opts, cfg.Options...)
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

// URL returns Config.URL, or the address other processes use to reach
// Config.Server (empty unless it listens: embedded.Server.Listen).
func (c *Client) URL() string {
	if c.cfg.Server != nil {
		return c.serverURL
	}
	return c.cfg.URL
}

// Close stops every Work (each shuts down as Work describes: its running
// handlers get WorkOptions.Grace, then their ctx is cancelled), waits for
// them, closes the connection and, with Config.Server, stops the server
// after its store is flushed. Jobs not yet run stay stored for the next
// Open. Close is idempotent; later calls of
// any method return ErrClosed.
//
// Before closing the connection Close waits, at most Config.Timeout, for
// the server to take what the client has buffered for it; during an
// outage (the client not connected) it does not wait, and what was
// buffered is dropped: acknowledgements among it only make their jobs
// run again. So with no Work running, Close returns within
// Config.Timeout, at once when the server is unreachable
// (TestCloseDuringOutageIsPrompt).
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
		// Flush waits 10 s by default, for nothing while disconnected.
		if c.nc.IsConnected() {
			c.nc.FlushTimeout(c.cfg.Timeout)
		}
		c.nc.Close()
	}
	c.shutdownServer()
}

func (c *Client) shutdownServer() {
	if c.stopServer != nil {
		c.stopServer()
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
//	stream natsjobs_q (work queue)  natsjobs.q.s.<id>.<gen>  schedule: the job waiting for its time
//	                                natsjobs.q.r.<id>.<gen>  ready: the job due, for the workers
//	                                natsjobs.q.x.<gen>       tombstone of a withdrawn generation
//	                                natsjobs.q.x.head.of.stream  head marker (head.go)
//	stream natsjobs_q_dead (limits) natsjobs.q.dead.<id>     dead letters, one per ID
//
// Each message of a job carries its generation (replace.go) as the last
// token, so that a copy the server fires late from a withdrawn schedule
// lands on a subject of its own, where it neither replaces the job's new
// ready copy nor purges its new schedule. Earlier versions stored
// natsjobs.q.s.<id>, natsjobs.q.r.<id> and natsjobs.q.x.<id>.<gen>; Open
// moves them (upgrade.go). Earlier versions kept a third stream,
// natsjobs_q_adv, for the server's max-deliveries advisories; Work empties
// and deletes it (buryLeftovers).
func workStream(q string) string            { return "natsjobs_" + q }
func deadStream(q string) string            { return "natsjobs_" + q + "_dead" }
func advStream(q string) string             { return "natsjobs_" + q + "_adv" }
func schedSubject(q, id, gen string) string { return "natsjobs." + q + ".s." + id + "." + gen }
func readySubject(q, id, gen string) string { return "natsjobs." + q + ".r." + id + "." + gen }
func deadSubject(q, id string) string       { return "natsjobs." + q + ".dead." + id }
func jobSubjects(q, id string) string       { return "natsjobs." + q + ".*." + id + ".*" } // schedules and ready copies
func tombSubject(q, gen string) string      { return "natsjobs." + q + ".x." + gen }       // outside jobSubjects (one token less)

// statePrefix is the subject prefix of the queue's messages in state
// letter st ("s", "r"): a job's subject is the prefix, its ID, and its
// generation.
func statePrefix(q, st string) string { return "natsjobs." + q + "." + st + "." }

// idGen splits the subject of a job's message, after its state prefix,
// into its ID and generation (empty in the old layout).
func idGen(subject, prefix string) (id, gen string) {
	id, gen, _ = strings.Cut(subject[len(prefix):], ".")
	return id, gen
}

func headSubject(q string) string        { return "natsjobs." + q + ".x.head.of.stream" } // no ID or generation has a '.'
func idOf(subject, prefix string) string { return subject[len(prefix):] }

const workerConsumer = "workers"

// noDedupe is the shortest duplicate window the server takes, for the
// streams whose messages carry no Nats-Msg-Id: at start the server reads
// every message stored within the window to rebuild its table of IDs,
// which with the default of two minutes was most of a restart's time.
const noDedupe = 100 * time.Millisecond

// declare creates or updates the queue's two streams, and moves what an
// earlier version stored there (upgrade).
func (c *Client) declare(ctx context.Context, q string) error {
	storage := jetstream.FileStorage
	streams := []jetstream.StreamConfig{{
		Name:              workStream(q),
		Subjects:          []string{"natsjobs." + q + ".s.>", "natsjobs." + q + ".r.>", "natsjobs." + q + ".x.>"},
		Retention:         jetstream.WorkQueuePolicy,
		Storage:           storage,
		Replicas:          c.cfg.Replicas,
		MaxMsgsPerSubject: 1, // a give-back, a cron activation replaces its generation's copy
		AllowMsgSchedules: true,
		AllowMsgTTL:       true, // tombstones of earlier versions (upgrade.go)
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
	}}
	for _, sc := range streams {
		if _, err := c.js.CreateOrUpdateStream(ctx, sc); err != nil {
			// With a cluster too small for Replicas, the server
			// says "no suitable peers for placement".
			return wrap(fmt.Sprintf("create stream %s with Replicas %d", sc.Name, sc.Replicas), err)
		}
	}
	if err := c.storeHead(ctx, q); err != nil {
		return err
	}
	// The workers' consumer is updated by Work (with its client's AckWait,
	// and MaxDeliver -1 for one an earlier version made); create it here
	// only if missing, so that Stats works before any worker started and
	// jobs are kept for the first one.
	if _, err := c.js.Consumer(ctx, workStream(q), workerConsumer); errors.Is(err, jetstream.ErrConsumerNotFound) {
		_, err = c.js.CreateConsumer(ctx, workStream(q), workerConfig(q, c.cfg))
		if err != nil && !errIs(err, jetstream.JSErrCodeConsumerExists) {
			return wrap("create consumer "+workerConsumer, err)
		}
	} else if err != nil {
		return wrap("consumer "+workerConsumer, err)
	}
	return c.upgrade(ctx, q)
}

// workerConfig is the workers' shared consumer: deliveries of the ready
// subjects, redelivered after AckWait without limit. The worker that
// receives a delivery beyond the retry policy's attempts buries it
// without running it (see run), so the server need not count them.
func workerConfig(q string, cfg Config) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       workerConsumer,
		FilterSubject: statePrefix(q, "r") + ">",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    -1,
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
