// Package idletimeout closes network connections that have gone idle,
// without a runtime timer reset on every Read (as SetReadDeadline per Read
// costs) and without a goroutine per connection.
//
// Wrap a listener, and every accepted connection is closed after a period
// with no traffic; wrap a dialed connection with [Wrap]:
//
//	l, err := idletimeout.NewListener(inner, idletimeout.Config{IdleTimeout: time.Minute})
//	if err != nil {
//		return err
//	}
//	defer l.Close()
//	c, err := l.Accept() // closed after a minute without a byte either way
//
// Three timeouts can be set, alone or together (see [Config]): IdleTimeout
// (no Read and no Write, nginx's proxy_timeout), ReadTimeout (no Read) and
// WriteTimeout (no Write), the last two like Netty's reader- and
// writer-idle. A connection whose timeout expires is closed, and its
// pending and later Reads and Writes fail with an [*IdleError] that wraps
// [ErrIdle] and whose Timeout method reports true. An OnIdle callback may
// decide instead, and keep the connection.
//
// Idleness does not stop a client that trickles. Against slow clients and
// slow attacks, Config adds a first-byte deadline (FirstByteTimeout),
// minimum transfer rates per direction (MinReadRate, MinWriteRate, after
// RateGrace) and a maximum age with a graceful end (MaxAge, MaxAgeGrace);
// see "Slow clients and attacks" below.
//
// In plain words: a connection is never closed while traffic flows, and an
// idle one is closed about 2 × Config.Resolution after its timeout at most
// (default Resolution: the shortest timeout / 16), plus what a busy
// machine adds. With net/http, install [ConnState] as the server's
// ConnState hook so that a slow handler does not count as idleness, and
// keep http.Server's own ReadTimeout and WriteTimeout for slow requests.
//
// Costs: a Read or Write pays two atomic loads and a compare (plus one
// compare-and-swap per Resolution), and one atomic add when a rate or
// FirstByteTimeout is set; no lock, no clock read, no timer reset. An active connection costs about one timer operation per timeout
// period and about 200 bytes. A Listener holds one goroutine, which sleeps
// while no connection is open. How it works is in doc/design/idletimeout.md.
//
// # Guarantees
//
//   - Never early. A connection is reaped only when no qualifying Read or
//     Write completed during the whole timeout before the reap, measured
//     with the monotonic clock. An active connection is never closed, even
//     at the edge of a tick, also when the wheel's goroutine is delayed.
//   - At most 2 × Resolution late, plus scheduling delay. An idle
//     connection is reaped at most timeout + 2 × Resolution after its last
//     activity, one Resolution because activity is stamped with a coarse
//     clock and one because the wheel fires on ticks, plus the time the
//     machine takes to run the wheel's goroutine and the closes. That delay
//     grows with the number of connections reaped together and with the
//     machine's load: with 10,000 going idle at once (200 ms timeout, 10 ms
//     Resolution) on 2 cores, about one in ten was closed after the bound,
//     the latest about 40 ms after it; with the cores ten times
//     oversubscribed by other processes, a third were late, by up to about
//     300 ms (BenchmarkIdleReap in doc/benchmarks.md).
//   - A reap is rechecked before the close: a connection that was
//     touched, paused or released after its timeout was found expired,
//     for instance while OnIdle ran, or had activity that restarts that
//     timeout (a Read for ReadTimeout, a Write for WriteTimeout, either
//     for IdleTimeout), is not closed.
//   - Event.Idle is a lower bound: at least the timeout, at most one
//     Resolution short of the true idle time.
//   - Progress is activity. A Write of more than 64 KiB on a TCP or Unix
//     socket (Unix systems) refreshes the connection each time the kernel
//     accepts a part of it, so a peer reading slowly but steadily keeps
//     even one huge Write alive; a peer that stops reading does not, and
//     the blocked Write fails with an [*IdleError] once the connection is
//     reaped. Other Writes refresh when they return. SetDeadline and
//     friends pass straight through and are never used for idle tracking.
//   - No copy bypasses tracking, and zero-copy paths survive the wrapper.
//     ReadFrom keeps sendfile for regular files (io.Copy(conn, file)
//     too); on Linux it makes the sendfile calls itself and refreshes the
//     connection after each one that moved a byte, so a slow reader keeps
//     a long file transfer alive at any pace (elsewhere: every 64 KiB). On
//     Linux, ReadFrom and WriteTo between TCP connections (bare or
//     wrapped) splice, in steps sized to the bytes already queued on the
//     source (at most 64 KiB), each followed by a refresh, so an
//     interactive stream never looks idle. SyscallConn's raw connection
//     refreshes as its callbacks run and keeps the socket from os.File's
//     own sendfile and splice. Other copies go through Read and Write.
//   - What the sender sees. A sender learns of a slow reader's progress
//     only when its kernel takes more bytes, which it does in steps (about
//     half the socket's send buffer, or a window update of the peer's
//     receive buffer): a peer must take about one such step per timeout,
//     and at least 64 KiB per timeout through a Write of up to 64 KiB or
//     a splice.
//   - Closing a connection cancels its timer at once; Release (and the
//     net/http hook [ConnState] for hijacked connections) does too.
//
// # Goroutines
//
// A [Listener] owns one goroutine, the timing wheel's owner, from
// NewListener to Close. Closing never runs on the owner, since a TLS
// connection's Close may block: without OnIdle, expired connections are
// closed by up to GOMAXPROCS reaper goroutines, started when reaps are
// queued and gone when the queue is empty, so a storm of expiries starts
// no goroutine per connection; with OnIdle, each event gets a short-lived
// goroutine that calls it, so a slow callback never delays another
// connection. Listener.Close stops the owner and waits for those
// goroutines. A Listener without open connections arms no timer and never
// wakes up.
//
// Connections from the package-level [Wrap] share a wheel per Resolution,
// whose goroutine exists while at least one of them is tracked.
//
// # net/http and TLS
//
// http.Server.Serve works with a Listener. Install [ConnState] as the
// server's ConnState hook so a request being handled, however slowly, does
// not count as idleness; each response starts the timeouts afresh. Since
// the whole request is exempt, set http.Server's ReadTimeout and
// WriteTimeout too, against slow bodies and clients that stop reading.
// To serve TLS, put the idle Listener under the TLS one, so the handshake
// and all encrypted traffic count as activity:
//
//	idle, _ := idletimeout.NewListener(tcp, cfg)
//	srv.Serve(tls.NewListener(idle, tlsConfig))
//
// HTTP/2 works too: net/http's HTTP/2 server calls the hook when a
// connection's first stream opens and when its last one ends, so a
// connection is paused while any stream is open and reaped when it has
// none for the timeout (closed outright, without the GOAWAY that
// http.Server.IdleTimeout sends first).
//
// # Idle timeout or http.Server.IdleTimeout
//
// For an HTTP server, http.Server.IdleTimeout already closes connections
// idle between requests, HTTP/1.1 and HTTP/2 alike. Measured side by side
// (BenchmarkHTTPIdle in doc/benchmarks.md: 2,000 idle keep-alive
// connections, a 300 ms timeout, a shared 2-core machine), it closed them
// closer to the timeout at the median (317 ms after the response, against
// 334 ms here with the default Resolution of timeout/16; set a finer one
// to close sooner), with tails that the machine's load decides for both
// (p99 485 and 403 ms in that run), at the same CPU per request
// (ttlkit/nethttp from 0.94 to 1.13 over six runs, process CPU of client
// and server: within the noise). Use it alone when that is all you need,
// and for HTTP/2, where it ends a connection with a GOAWAY.
//
// Use this package where net/http has nothing to offer:
//
//   - Protocols other than HTTP: proxies, line protocols (Redis- or
//     MQTT-like), custom RPC, and the connections a client dials (Wrap) or
//     a proxy opens upstream (Listener.Wrap).
//   - Idleness in one direction: ReadTimeout and WriteTimeout are gaps
//     between Reads or between Writes, like Netty's reader- and
//     writer-idle; http.Server's ReadTimeout and WriteTimeout bound a
//     whole request or response instead.
//   - A decision instead of a close: OnIdle may keep the connection, to
//     ping the peer or log it.
//   - Numbers: Stats counts connections accepted, open, released and
//     reaped by reason; net/http counts nothing.
//   - Cost on raw connections: a read deadline set before every Read
//     resets a runtime timer per call, this package does a load and a
//     compare (BenchmarkIdleEchoRatio, 10,000 echo connections, the
//     variants interleaved: server CPU per message 1.02× of no timeout
//     with a deadline per Read, 1.00× with this package).
//
// TLS suits both: here, under tls.NewListener, the handshake counts as
// activity. Both can also run together, the Listener with ConnState for
// the connection and http.Server's ReadHeaderTimeout, ReadTimeout and
// WriteTimeout for each request.
//
// # Slow clients and attacks
//
// Which limit stops which attack, next to net/http's own timeouts:
//
//	attack                          this package            net/http
//	silent connection               FirstByteTimeout        ReadHeaderTimeout (once a byte came)
//	stalled TLS handshake           HandshakeTimeout        ReadHeaderTimeout (its first part)
//	                                  (NewTLSListener)
//	slowloris (headers trickle)     MinReadRate             ReadHeaderTimeout
//	slow body (body trickles)       MinReadRate             ReadTimeout (cuts slow honest uploads too)
//	slow read (reads the response   MinWriteRate            WriteTimeout (cuts slow honest downloads too)
//	  through a tiny window)
//	trickle on a raw TCP protocol   MinReadRate             nothing (a deadline per Read is reset by each byte)
//	idle keep-alive                 IdleTimeout             IdleTimeout
//	connections that live forever   MaxAge (+ MaxAgeGrace)  nothing
//
// A rate judges transfers, not connections: a connection that moves
// nothing is left to the idle timeouts, a request answered ends its read
// transfer (so keep-alive clients pausing between requests are never
// judged), a client waiting for its answer owes nothing, and an honest
// client above the rate is never cut, however long it takes; a response
// still queued in the kernel when net/http resumes the connection is the
// same write transfer, and keeps the connection from idleness while the
// peer takes it. Each limit's deadline is a deadline of the connection's
// timer, counted from the tick after the transfer's first byte, and
// RateGrace is counted in ticks: a slowloris under ConnState (its head is
// owed in full) or a slow reader is reaped on the tick its grace ends, at
// most RateGrace + Resolution after its first byte plus scheduling delay;
// a trickler on a raw connection on the tick after its byte that ends
// the grace. A write-rate reap resets a TCP connection, so the bytes
// queued to the slow reader are dropped.
//
// Measured by BenchmarkSlowAttack and BenchmarkSlowAttackLine in
// doc/benchmarks.md: slowhttptest on loopback, 300 attack connections for
// 30s, 50 honest clients (half downloading at 2 KB/s, half keep-alive),
// RateGrace 5s and the default Resolution (312.5ms), so the bound is
// 5.625s; a shared 2-core machine at load 7 to 16. Slowloris: all 300
// reaped for the read rate, 99% within 5.31s of their first byte
// (server-side; 5.62s while the grace counted from the first byte's bound
// in nanoseconds, a tick late), and the attacker saw 99% closed 7s into
// the test (it notices at its next send, every 3s), as with net/http's
// ReadHeaderTimeout of 5s and nginx at 5s. Slow read: all 300 reaped for
// the write rate, 99% within 5.42s of the response's first byte (5.63s a
// tick late, 6.9s before an answer's transfer counted from its first
// byte), the queued bytes dropped by a reset; slowhttptest's slow-read
// mode counts its connections open until it ends, closed or not (nginx's
// send_timeout shows the same). Slow body and range: the Go servers answer
// without waiting for the body, so both end them in 2s. No honest client
// was cut in any attack (a slow-read run before the fix of resumed
// responses cut 11 of 50: TestWriteRateResumedWithBytesQueuedNeverCut). A
// raw TCP line protocol under 300 tricklers sending a byte a second: all
// closed, 99% within 5.25s of their first byte server-side (6.3s when the
// byte after the grace decided), where a read deadline per Read closed
// none; no honest client cut.
//
// Recommended for an HTTP server (install ConnState too; net/http's
// ReadHeaderTimeout may stay as a second line, its ReadTimeout and
// WriteTimeout are then unnecessary):
//
//	idletimeout.Config{
//		IdleTimeout:      time.Minute,      // keep-alive between requests
//		FirstByteTimeout: 10 * time.Second, // connect and say nothing
//		HandshakeTimeout: 10 * time.Second, // with NewTLSListener
//		MinReadRate:      240,              // bytes/s, Kestrel's default
//		MinWriteRate:     240,
//		RateGrace:        5 * time.Second,
//		MaxAge:           time.Hour,        // then ends after a response (+ up to 10% jitter)
//		MaxAgeGrace:      time.Minute,
//	}
//
// For a raw TCP request/response protocol (one answer per request, as in
// Redis- or MQTT-like protocols) the same, with IdleTimeout the longest
// pause a client may take; a request is measured to its last byte, so a
// blocking command waiting for its answer is never judged. For a protocol
// where the client streams without answers, set MinReadRate below the
// slowest honest stream, or not at all. To end connections gracefully
// with MaxAge, pause a connection while a request is handled (Pause after
// its first byte, Resume after the answer), as ConnState does for HTTP.
//
// HTTP/2 (TestHTTP2* in http2_test.go): ConnState pauses a connection
// while any stream is open, however quiet, so the idle timeouts apply
// only between streams; there the client's PING, WINDOW_UPDATE and
// SETTINGS frames are measured to their last byte, not owed as a request
// head. MaxAge waits for a moment without streams and closes on the next
// tick, after the last response is flushed; MaxAgeGrace ends it during a
// stream. Every end is a plain close, never a GOAWAY: a request the client
// sends at that moment fails. The write rate does not judge an HTTP/2
// slow reader that grants its window in WINDOW_UPDATE frames (each is the
// peer speaking, which ends a write transfer); http.Server.WriteTimeout,
// which net/http applies per HTTP/2 stream, resets such a stream. To end
// idle HTTP/2 connections with a GOAWAY, set http.Server.IdleTimeout
// below this package's IdleTimeout (net/http sends the GOAWAY and closes
// a second later, and the Listener closes only what net/http left), and
// Shutdown for the whole server; net/http has no per-connection GOAWAY
// for MaxAge.
//
// # Costs
//
// Per Read or Write: two atomic loads and a compare, plus a
// compare-and-swap once per tick, and one atomic add when a rate or
// FirstByteTimeout is set (process CPU per Read and Write pair on a no-op
// connection, BenchmarkOverhead's workload: about 9 ns wrapped, 18 ns
// with the add, 4 ns bare). On a loopback echo server with 10,000
// connections and the recommended raw TCP limits, the server's CPU per
// message was 1.008× that of no timeout (BenchmarkIdleEchoRatio, variant
// matrix, variants interleaved, at load 7 to 10; 1.018× in a run at load
// 24; 1.09× while every look asked the kernel for the write progress). With a rate set, each connection's timer comes up
// every RateGrace / 4, reading the kernel's tcp_info for the write rate on
// Linux TCP, and at each transfer's deadline (on every tick while a read
// transfer past it waits for its next byte). Per connection: one wheel operation per
// timeout period while active, and about 200 bytes of memory. Per Listener:
// one clock tick per Resolution while any connection is open.
package idletimeout
