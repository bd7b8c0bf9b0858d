// Package idletimeout closes idle network connections without paying a
// runtime timer reset on every Read, as SetReadDeadline-per-Read does, and
// without a goroutine per connection.
//
// Wrap a listener, and every accepted connection is reaped after a period
// with no traffic; wrap a dialed connection with [Wrap]:
//
//	l, err := idletimeout.NewListener(inner, idletimeout.Config{IdleTimeout: time.Minute})
//	...
//	c, err := l.Accept() // a *idletimeout.Conn
//
// Three timeouts can be set, alone or together (see [Config]): IdleTimeout
// (no Read and no Write, nginx's proxy_timeout), ReadTimeout (no Read) and
// WriteTimeout (no Write), the last two like Netty's reader- and
// writer-idle. By default a connection whose timeout expires is closed,
// and its pending and later Reads and Writes fail with an [*IdleError]
// that wraps [ErrIdle] and whose Timeout method reports true. An OnIdle
// callback may instead keep it and be told again after every further
// timeout.
//
// # Model
//
// The hot path touches no lock, no channel and no clock. All connections of
// a Listener share one timing wheel ([timingwheel.Scheduler]) with a tick
// of Config.Resolution, driven by one goroutine, the owner. While any
// connection is tracked, the owner publishes its clock on every tick into
// an atomic, the activity clock. A Read or Write that moves at least one
// byte loads the activity clock and, when it moved on since the
// connection's last stamp, stores it there (a compare-and-swap at most once
// per tick and connection, so the stamp never goes backwards).
//
// Each connection has one timer in the wheel, armed for its shortest
// timeout. When it fires, the owner turns the stamps into activity times
// and either finds a timeout expired or re-arms the timer for the earliest
// moment one could expire: an active connection costs about one wheel
// operation per timeout period, however much traffic it carries.
//
//	activity clock   0        ρ        2ρ       3ρ       ...  published each tick
//	                 |--------|--------|--------|
//	Read at x                   ^ stamps ρ: happened after ρ was published,
//	                                        before 2ρ was stored
//	check                                     activity bound = when 2ρ was stored
//	reap                                      bound + timeout, rounded up to a tick
//
// A stamp s says the activity happened after s was published and before
// the next value was stored. The owner keeps, for the last timeout's worth
// of ticks, each published value with a clock reading taken right after it
// was stored, so the bound it uses for a stamp is never before the activity
// and at most one tick after it. While a stamp is still the current value
// the activity may be going on now, and no timeout is considered expired.
//
// # Guarantees
//
//   - Never early. A connection is reaped only when no qualifying Read or
//     Write completed during the whole timeout before the reap, measured
//     with the monotonic clock. An active connection is never closed, even
//     at the edge of a tick: the bound above errs late, never early, also
//     when the owner goroutine is delayed.
//   - At most 2 × Resolution late. An idle connection is reaped at most
//     timeout + 2 × Resolution after its last activity: one Resolution
//     because the activity clock is coarse, one because the wheel fires on
//     ticks. Scheduling delay of the owner and of the reaping goroutine
//     come on top.
//   - Event.Idle is a lower bound: at least the timeout, at most one
//     Resolution short of the true idle time.
//   - Progress is activity. A Write of more than 64 KiB on a TCP or Unix
//     socket (on Unix systems) refreshes each time the kernel accepts a
//     part of it, so a peer that reads slowly but steadily keeps even one
//     huge Write alive; a peer that stops reading does not, and the blocked
//     Write fails with an [*IdleError] once the connection is reaped.
//     Smaller Writes, and Writes on other connections, refresh when they
//     return. SetDeadline and friends pass straight through and are never
//     used for idle tracking.
//   - No copy bypasses tracking, and zero-copy paths survive the wrapper.
//     ReadFrom keeps sendfile for regular files (io.Copy(conn, file)
//     included), refreshing the stamp every 64 KiB. On Linux, ReadFrom
//     and WriteTo between TCP connections (bare or wrapped) splice, each
//     splice sized to the bytes already queued on the source (at most
//     64 KiB) and followed by a refresh: one large splice would return
//     only when its whole chunk had arrived, and an interactive stream
//     would look idle. SyscallConn's raw connection stamps as its
//     callbacks run and keeps the socket from os.File's own sendfile and
//     splice. Other copies go through Read and Write. A peer that moves at
//     least 64 KiB per timeout is therefore never idle.
//   - Closing a connection cancels its timer at once; Release (and the
//     net/http hook [ConnState] for hijacked connections) does too.
//
// # Goroutines
//
// A [Listener] owns one goroutine, the wheel's owner, from NewListener to
// Close. Closing never runs on the owner, since a TLS connection's Close
// may block: without OnIdle, expired connections are closed by up to
// GOMAXPROCS reaper goroutines, started when reaps are queued and gone when
// the queue is empty, so a storm of expiries starts no goroutine per
// connection; with OnIdle, each event gets a short-lived goroutine that
// calls it, so a slow callback never delays another connection.
// Listener.Close stops the owner and waits for those goroutines. A
// Listener without open connections arms no timer and never wakes up.
//
// Connections from the package-level [Wrap] share a wheel per Resolution,
// whose goroutine exists while at least one of them is tracked.
//
// # net/http and TLS
//
// http.Server.Serve works with a Listener. Install [ConnState] as the
// server's ConnState hook so a request being handled, however slowly, does
// not count as idleness; each response starts the timeouts afresh.
// To serve TLS, put the idle Listener under the TLS one, so the handshake
// and all encrypted traffic count as activity:
//
//	idle, _ := idletimeout.NewListener(tcp, cfg)
//	srv.Serve(tls.NewListener(idle, tlsConfig))
//
// # Costs
//
// Per Read or Write: two atomic loads and a compare, plus a
// compare-and-swap once per tick. Per connection: one wheel operation per
// timeout period while active, and about 200 bytes of memory. Per Listener:
// one clock tick per Resolution while any connection is open.
package idletimeout
