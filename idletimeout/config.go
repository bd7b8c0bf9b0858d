package idletimeout

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalidConfig is wrapped by the errors NewListener and Wrap return for
// a Config that fails validation. Test with errors.Is.
var ErrInvalidConfig = errors.New("idletimeout: invalid config")

// Config says when a connection counts as idle and what happens then. Every
// timeout is measured from the last Read or Write that moved at least one
// byte (or from the wrap, or the last Touch or Resume); a zero timeout is
// disabled, a negative one is an error. Any positive timeout works, up to
// math.MaxInt64 (about 292 years: practically never). A Config whose timeouts are all
// zero is valid: connections are wrapped and counted but never reaped.
//
// The zero Config disables everything. A Config is copied by NewListener
// and Wrap; changing it afterwards has no effect.
type Config struct {
	// IdleTimeout reaps a connection after no Read and no Write moved a
	// byte for this long: nginx's proxy_timeout, Netty's all-idle.
	IdleTimeout time.Duration

	// ReadTimeout reaps a connection after no Read moved a byte for this
	// long, whatever it writes: Netty's reader-idle.
	ReadTimeout time.Duration

	// WriteTimeout reaps a connection after no Write moved a byte for this
	// long, whatever it reads: Netty's writer-idle. It also bounds a Write
	// blocked because the peer stopped reading: the connection is reaped
	// WriteTimeout after the Write last made progress (see Conn.Write), and
	// the Write fails with an *IdleError.
	WriteTimeout time.Duration

	// Resolution is how coarse the activity clock is and the interval of the
	// timing wheel. A connection is never reaped before its timeout has
	// elapsed, and an idle one is reaped at most 2 × Resolution after it,
	// plus scheduling delay (see the package documentation for what that
	// was measured to be). Zero picks the shortest enabled timeout / 16,
	// clamped to [1ms, 1s] and to at most that timeout, and raised if needed
	// so that the longest timeout spans at most 65536 resolutions (timeouts
	// over about 18 hours get a Resolution over 1s). An explicit Resolution
	// must meet both limits.
	Resolution time.Duration

	// FirstByteTimeout reaps a connection from which no byte was read this
	// long after it was accepted or wrapped, whatever the other timeouts
	// say (a Write does not count): a client that connects and sends
	// nothing. Under tls.NewListener the handshake's first byte counts;
	// bound the whole handshake with http.Server's ReadHeaderTimeout, or
	// tls.Conn.HandshakeContext with a deadline.
	FirstByteTimeout time.Duration

	// HandshakeTimeout reaps a connection served through NewTLSListener
	// whose TLS handshake has not completed this long after it was
	// accepted, whatever the other timeouts say: a client that connects
	// and sends nothing, or part of a ClientHello, or stalls before its
	// Finished. Other connections ignore it. Zero disables it, negative
	// is an error.
	HandshakeTimeout time.Duration

	// MinReadRate and MinWriteRate, in bytes per second, reap a connection
	// whose transfer in that direction runs slower, once it has lasted
	// RateGrace: a client that trickles a request (slowloris, a slow body)
	// or reads a response as slowly as it can (slow read). A read transfer
	// begins with the first byte read after the connection last wrote, or
	// last paused or resumed, and lasts until it writes, pauses or resumes
	// again: a request, for a protocol that answers each one. It is
	// measured from its first byte to its last, so a client that sent its
	// request and waits for the answer owes nothing; under ConnState a
	// request head is owed in full, and silence inside it counts too. A
	// write transfer lasts while the connection writes or has bytes
	// queued to the peer (the kernel's send queue of a TCP or Unix socket
	// on Linux; elsewhere while Writes move bytes), until the peer sends
	// something, and is measured to now; while it runs, the connection is
	// not idle (the write rate judges it). A connection moving nothing is
	// left to the idle timeouts.
	//
	// The rate is the bytes of the whole transfer over its duration,
	// counted from the tick after its first byte (a read transfer that
	// begins after a second answer since the timer's last look, as in a
	// pipelined exchange, counts from the next look, up to RateGrace / 4
	// later). RateGrace is counted in the ticks of the activity clock, so
	// a transfer may be judged up to the owner's delay in publishing that
	// tick (at most a Resolution) before RateGrace has passed since its
	// first byte, but its rate is taken over a duration never longer than
	// the truth: an honest transfer above the rate is never judged slow.
	// The time a transfer becomes too slow is a deadline of the
	// connection's timer: a transfer that keeps too slow is reaped on the
	// tick its grace ends, at most RateGrace + Resolution after its first
	// byte plus scheduling delay (a request head, a write transfer), or,
	// for a read transfer measured to its last byte, on the tick after
	// the first byte that comes RateGrace (in ticks) after its first; one
	// that took a burst first (a receive buffer's worth) once the burst
	// no longer pays for it. On TCP
	// (Linux) a write transfer's bytes are those the peer acknowledged,
	// so a Write blocked on a slow reader counts only what it took; the
	// peer acknowledges in steps of up to half its receive buffer, which
	// is why the whole transfer, not a shorter window, is judged. Zero
	// disables a rate, negative is an error. A stream that legitimately
	// sends less without answers (a telemetry feed) needs a lower rate, or
	// none. Bytes moved through SyscallConn are not counted.
	MinReadRate, MinWriteRate int

	// RateGrace is how long a transfer may run before its rate is judged.
	// Zero means 5s when a rate is set; negative is an error.
	RateGrace time.Duration

	// MaxAge ends a connection that has lived this long, plus a jitter of
	// up to a tenth of it so that a fleet's clients do not reconnect at
	// once: at its next quiet moment, that is at once unless it is paused
	// (a request is being handled, see ConnState), and otherwise when it
	// is resumed (after the response). Zero disables it, negative is an
	// error.
	MaxAge time.Duration

	// MaxAgeGrace is how long past MaxAge (and its jitter) a paused
	// connection may finish its request before it is closed anyway. Zero
	// means no hard end: it waits for the quiet moment.
	MaxAgeGrace time.Duration

	// OnIdle, if not nil, is called when IdleTimeout, ReadTimeout or
	// WriteTimeout expires (the other limits always close), and its result
	// decides the connection's fate: Close (also the zero Action) closes
	// it, Keep leaves it open and calls OnIdle again after every further
	// timeout of idleness, like Netty's IdleStateHandler. Close is called
	// off if the connection was active while OnIdle ran (a Read or Write
	// that restarts the expired timeout moved a byte, or Touch, Pause,
	// Resume or Release was called, by OnIdle itself too): the timeouts
	// then run from that activity. A Read does not call off a Close for
	// WriteTimeout, nor a Write one for ReadTimeout. To
	// close regardless, for instance after writing a farewell, call
	// Event.Conn.Close in OnIdle. It runs on a new
	// goroutine, never on the wheel's, so it may block and may call any
	// method of the Conn or Listener except Listener.Close. A panic in it is
	// recovered, logged with log/slog, counted in Stats.Panics, and the
	// connection is closed; so is a runtime.Goexit (t.FailNow in a test),
	// logged as timingwheel.ErrGoexit, which then ends the goroutine. Nil
	// means Close without a call.
	OnIdle func(Event) Action
}

// Resolution bounds and ring limits.
const (
	minResolution = time.Millisecond // of the default
	maxResolution = time.Second      // of the default, unless the ring needs more
	maxRatio      = 1 << 16          // timeout / Resolution

	// maxAnyResolution is the default Resolution for the longest timeout,
	// math.MaxInt64 (about 39h): the most any Config gets, which keeps the
	// wheel's tick arithmetic far from overflowing.
	maxAnyResolution = time.Duration(1 << 47)
)

// settings is a validated Config in the form the hot and owner paths use.
type settings struct {
	timeout [numReasons]int64 // ns per idle Reason; 0 = disabled
	minT    int64             // shortest enabled timeout (idle, first byte, rate grace), ns
	maxT    int64             // longest enabled idle timeout, ns: stamps this old must be placed
	res     time.Duration
	onIdle  func(Event) Action

	firstByte   int64    // FirstByteTimeout, ns
	handshake   int64    // HandshakeTimeout, ns
	rate        [2]int64 // MinReadRate, MinWriteRate, bytes/s
	grace       int64    // RateGrace, ns (when a rate is set)
	maxAge      int64    // MaxAge, ns
	maxAgeGrace int64    // MaxAgeGrace, ns
	counts      bool     // Read and Write count bytes
}

func (s *settings) enabled() bool { return s.minT > 0 || s.maxAge > 0 }

func (s *settings) rates() bool { return s.rate[0] > 0 || s.rate[1] > 0 }

// defaultRateGrace is RateGrace's default.
const defaultRateGrace = 5 * time.Second

// validate checks c and derives the settings; it is the one place Config is
// checked.
func (c Config) validate() (*settings, error) {
	s := &settings{onIdle: c.OnIdle}
	for r, d := range [numReasons]time.Duration{ReasonIdle: c.IdleTimeout, ReasonRead: c.ReadTimeout, ReasonWrite: c.WriteTimeout} {
		if r == 0 || r > int(ReasonWrite) {
			continue
		}
		if d < 0 {
			return nil, fmt.Errorf("%w: %v %v, want >= 0", ErrInvalidConfig, Reason(r).field(), d)
		}
		if d == 0 {
			continue
		}
		s.timeout[r] = int64(d)
		s.shorter(int64(d))
		s.maxT = max(s.maxT, int64(d))
	}
	if err := s.validateMatrix(c); err != nil {
		return nil, err
	}
	if c.Resolution < 0 {
		return nil, fmt.Errorf("%w: Resolution %v, want >= 0", ErrInvalidConfig, c.Resolution)
	}
	if !s.enabled() {
		return s, nil
	}
	s.res = c.Resolution
	short := s.minT
	if short == 0 {
		short = s.maxAge // MaxAge alone
	}
	if s.res == 0 {
		s.res = min(max(time.Duration(short/16), minResolution), maxResolution)
		s.res = min(s.res, time.Duration(short))
		s.res = max(s.res, time.Duration(ceilDiv(max(s.maxT, 1), maxRatio)))
	}
	if s.minT == 0 {
		if s.res > maxAnyResolution {
			return nil, fmt.Errorf("%w: Resolution %v, want at most %v", ErrInvalidConfig, s.res, maxAnyResolution)
		}
		return s, nil
	}
	if c.Resolution == 0 && int64(s.res) > s.minT {
		return nil, fmt.Errorf("%w: timeouts %v and %v too far apart (the longest may be at most %d times the shortest)",
			ErrInvalidConfig, time.Duration(s.minT), time.Duration(s.maxT), maxRatio)
	}
	if int64(s.res) > s.minT {
		return nil, fmt.Errorf("%w: Resolution %v exceeds the shortest timeout %v", ErrInvalidConfig, s.res, time.Duration(s.minT))
	}
	if s.res > maxAnyResolution {
		return nil, fmt.Errorf("%w: Resolution %v, want at most %v", ErrInvalidConfig, s.res, maxAnyResolution)
	}
	if s.maxT/int64(s.res) > maxRatio {
		return nil, fmt.Errorf("%w: Resolution %v too fine for timeout %v (at most %d resolutions per timeout)",
			ErrInvalidConfig, s.res, time.Duration(s.maxT), maxRatio)
	}
	return s, nil
}

// ceilDiv returns a / b rounded up, for a, b > 0, without overflow.
func ceilDiv(a, b int64) int64 { return (a-1)/b + 1 }

// addSat returns a + b, or math.MaxInt64 (never) where that overflows, for
// b >= 0.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulSat returns a × b, or math.MaxInt64 where that overflows, for
// a, b >= 0.
func mulSat(a, b int64) int64 {
	if b != 0 && a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// Reason says which timeout expired.
type Reason uint8

const (
	// ReasonIdle: IdleTimeout, no Read and no Write.
	ReasonIdle Reason = iota + 1
	// ReasonRead: ReadTimeout, no Read.
	ReasonRead
	// ReasonWrite: WriteTimeout, no Write.
	ReasonWrite
	// ReasonFirstByte: FirstByteTimeout, nothing read since the connection
	// began.
	ReasonFirstByte
	// ReasonReadRate: a read transfer slower than MinReadRate.
	ReasonReadRate
	// ReasonWriteRate: a write transfer slower than MinWriteRate.
	ReasonWriteRate
	// ReasonMaxAge: MaxAge.
	ReasonMaxAge
	// ReasonHandshake: HandshakeTimeout, a TLS handshake not completed.
	ReasonHandshake

	numReasons = 9 // index 0 unused
)

// String returns "idle", "read", "write", "first byte", "read rate",
// "write rate", "max age" or "handshake".
func (r Reason) String() string {
	switch r {
	case ReasonIdle:
		return "idle"
	case ReasonRead:
		return "read"
	case ReasonWrite:
		return "write"
	case ReasonFirstByte:
		return "first byte"
	case ReasonReadRate:
		return "read rate"
	case ReasonWriteRate:
		return "write rate"
	case ReasonMaxAge:
		return "max age"
	case ReasonHandshake:
		return "handshake"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

func (r Reason) field() string {
	switch r {
	case ReasonRead:
		return "ReadTimeout"
	case ReasonWrite:
		return "WriteTimeout"
	}
	return "IdleTimeout"
}

// Action is what OnIdle decides.
type Action uint8

const (
	// Close closes the connection; pending and later Reads and Writes fail
	// with an error that wraps ErrIdle. The zero Action means Close too.
	Close Action = iota + 1
	// Keep leaves the connection open; OnIdle is called again after every
	// further timeout of idleness until the connection is active again.
	Keep
)

// String returns "close" or "keep".
func (a Action) String() string {
	switch a {
	case 0, Close:
		return "close"
	case Keep:
		return "keep"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Event describes one expired timeout.
type Event struct {
	// Conn is the connection; OnIdle may use any of its methods.
	Conn *Conn
	// Reason says which timeout expired.
	Reason Reason
	// Idle is how long the connection had no activity of the kind Reason
	// counts. It is a lower bound: at least the timeout, and at most one
	// Resolution (plus scheduling delay) short of the truth. For the other
	// limits it is the connection's age (ReasonFirstByte, ReasonMaxAge,
	// ReasonHandshake) or
	// how long the slow transfer ran (the rates).
	Idle time.Duration
	// Count is 1 for the first event of a stretch of idleness and grows by
	// one with each further timeout while OnIdle returns Keep.
	Count int
}
