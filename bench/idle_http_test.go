package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/bench/internal/harness"
	"github.com/ttlkit/ttlkit/idletimeout"
)

// BenchmarkHTTPIdle (issue 20 item 12) sets idletimeout against net/http's
// own http.Server.IdleTimeout on the one job both do: closing HTTP/1.1
// keep-alive connections that sit idle between requests. Client and
// server share this process, and the implementations run one after the
// other in the same benchmark binary.
//
//   - close: conns connections each make one request and then wait; the
//     figures are the time from the response to the server's close as the
//     client saw it. "early" counts closes sooner than the timeout after
//     the request was sent (proof of a close before the timeout), "late"
//     those later than timeout + 2 × Resolution after the response
//     (idletimeout's bound; net/http states none).
//   - request: keep-alive requests spread over conns open connections
//     per implementation, the implementations taking turns; <impl>-cpu-ns/op
//     is the process's CPU (client and server) per request, and a/b the
//     ratio of two. "bare" sets no idle timeout at all.

// httpIdleTimeout is the idle timeout both implementations get.
const httpIdleTimeout = 300 * time.Millisecond

// httpIdleRes is idletimeout's default Resolution for httpIdleTimeout
// (the timeout / 16).
const httpIdleRes = httpIdleTimeout / 16

// httpIdleImpl starts an HTTP server on ln that answers every request with
// "ok" and closes connections idle for timeout, and returns its stop
// function.
type httpIdleImpl struct {
	name  string
	serve func(ln net.Listener, timeout time.Duration) (stop func(), err error)
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
}

var httpIdleImpls = []httpIdleImpl{
	{"bare", func(ln net.Listener, _ time.Duration) (func(), error) {
		srv := &http.Server{Handler: okHandler()}
		go srv.Serve(ln)
		return func() { srv.Close() }, nil
	}},
	{"ttlkit", func(ln net.Listener, timeout time.Duration) (func(), error) {
		l, err := idletimeout.NewListener(ln, idletimeout.Config{IdleTimeout: timeout})
		if err != nil {
			return nil, err
		}
		srv := &http.Server{Handler: okHandler(), ConnState: idletimeout.ConnState}
		go srv.Serve(l)
		return func() { srv.Close() }, nil
	}},
	{"nethttp", func(ln net.Listener, timeout time.Duration) (func(), error) {
		srv := &http.Server{Handler: okHandler(), IdleTimeout: timeout}
		go srv.Serve(ln)
		return func() { srv.Close() }, nil
	}},
}

// startHTTPIdle starts im on a loopback port and returns its address.
func startHTTPIdle(im httpIdleImpl, timeout time.Duration) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	stop, err := im.serve(ln, timeout)
	if err != nil {
		ln.Close()
		return "", nil, err
	}
	return ln.Addr().String(), stop, nil
}

// httpIdleConns is the number of connections: idleConns, capped at 2,000
// (this benchmark holds both ends in one process).
func httpIdleConns(tb testing.TB) int {
	n := min(idleConns(tb), 2000)
	if lim := raiseNoFile(2*n + fdSlack); lim >= 0 && lim < 2*n+fdSlack {
		n = (lim - fdSlack) / 2
	}
	return n
}

// httpClient is one keep-alive client connection.
type httpClient struct {
	c  net.Conn
	br *bufio.Reader
}

const httpIdleRequest = "GET / HTTP/1.1\r\nHost: bench\r\n\r\n"

// roundTrip sends one request and reads the whole response.
func (h *httpClient) roundTrip() error {
	if _, err := io.WriteString(h.c, httpIdleRequest); err != nil {
		return err
	}
	resp, err := http.ReadResponse(h.br, nil)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil && (resp.StatusCode != 200 || string(body) != "ok") {
		err = fmt.Errorf("response %d %q, want 200 \"ok\"", resp.StatusCode, body)
	}
	return err
}

// httpCloseReport is the outcome of one close round.
type httpCloseReport struct {
	toEOF       []time.Duration // response to EOF, sorted
	early, late int
}

// httpCloseRound dials n connections to addr, makes one request on each
// and waits until the server closed every one.
func httpCloseRound(addr string, n int) (*httpCloseReport, error) {
	type sample struct{ start, resp, eof time.Time }
	samples := make([]sample, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for d := range reapDialers {
		wg.Go(func() {
			for i := d; i < n; i += reapDialers {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					errs[i] = err
					continue
				}
				h := &httpClient{c: c, br: bufio.NewReader(c)}
				s := &samples[i]
				s.start = time.Now()
				if err := h.roundTrip(); err != nil {
					errs[i] = err
					c.Close()
					continue
				}
				s.resp = time.Now()
				wg.Go(func() {
					defer c.Close()
					c.SetReadDeadline(s.resp.Add(reapGuard))
					var b [1]byte
					m, err := h.br.Read(b[:])
					s.eof = time.Now()
					switch {
					case m > 0:
						errs[i] = fmt.Errorf("got %d unexpected bytes, want EOF", m)
					case err != io.EOF:
						errs[i] = fmt.Errorf("got %v, want EOF", err)
					}
				})
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rep := &httpCloseReport{}
	for _, s := range samples {
		if s.eof.Sub(s.start) < httpIdleTimeout {
			rep.early++
		}
		if s.eof.Sub(s.resp) > httpIdleTimeout+2*httpIdleRes {
			rep.late++
		}
		rep.toEOF = append(rep.toEOF, s.eof.Sub(s.resp))
	}
	slices.Sort(rep.toEOF)
	return rep, nil
}

func BenchmarkHTTPIdle(b *testing.B) {
	n := httpIdleConns(b)
	b.Run("close", func(b *testing.B) {
		for _, im := range httpIdleImpls {
			if im.name == "bare" {
				continue // never closes
			}
			// One round per call, whatever b.N: its figures are the
			// closes, not a time per operation.
			b.Run("impl="+im.name, func(b *testing.B) {
				addr, stop, err := startHTTPIdle(im, httpIdleTimeout)
				if err != nil {
					b.Fatal(err)
				}
				rep, err := httpCloseRound(addr, n)
				stop()
				if err != nil {
					b.Fatal(err)
				}
				all := rep.toEOF
				b.ReportMetric(0, "ns/op") // one round: no time per op
				b.ReportMetric(float64(n), "conns")
				b.ReportMetric(float64(rep.early), "early")
				b.ReportMetric(float64(rep.late), "late")
				b.ReportMetric(toMS(quantile(all, 0)), "min-ms")
				b.ReportMetric(toMS(quantile(all, 0.5)), "p50-ms")
				b.ReportMetric(toMS(quantile(all, 0.99)), "p99-ms")
				b.ReportMetric(toMS(quantile(all, 1)), "max-ms")
			})
		}
	})
	b.Run("request", func(b *testing.B) {
		// The implementations take turns in rounds of httpRound requests
		// each, in a rotating order, so that the machine's changing load
		// falls on all alike; each is charged the process CPU of its own
		// turns. A long idle timeout: this measures the cost, and no
		// connection may be closed while it waits for its turn.
		n := n / 2 // three servers, both ends in this process
		n -= n % httpWorkers
		clients := make([][]*httpClient, len(httpIdleImpls))
		for i, im := range httpIdleImpls {
			addr, stop, err := startHTTPIdle(im, time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			cs, err := dialHTTPClients(addr, n)
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				for _, h := range cs {
					h.c.Close()
				}
			}()
			clients[i] = cs
		}
		cpu := make([]time.Duration, len(httpIdleImpls))
		b.ResetTimer()
		for done, round := 0, 0; done < b.N; round++ {
			k := min(httpRound, b.N-done)
			for j := range httpIdleImpls {
				i := (j + round) % len(httpIdleImpls)
				before, _ := harness.ProcessCPU()
				if err := httpRequests(clients[i], k); err != nil {
					b.Fatalf("%s: %v", httpIdleImpls[i].name, err)
				}
				after, _ := harness.ProcessCPU()
				cpu[i] += after - before
			}
			done += k
		}
		b.StopTimer()
		per := make(map[string]float64)
		for i, im := range httpIdleImpls {
			per[im.name] = float64(cpu[i].Nanoseconds()) / float64(b.N)
			b.ReportMetric(per[im.name], im.name+"-cpu-ns/op")
		}
		b.ReportMetric(per["ttlkit"]/per["bare"], "ttlkit/bare")
		b.ReportMetric(per["nethttp"]/per["bare"], "nethttp/bare")
		b.ReportMetric(per["ttlkit"]/per["nethttp"], "ttlkit/nethttp")
		b.ReportMetric(float64(n), "conns")
		b.ReportMetric(0, "ns/op") // the wall time of three servers' turns
	})
}

// httpRound is how many requests an implementation makes per turn in the
// request benchmark.
const httpRound = 2000

// httpRequests makes k keep-alive requests over clients, by httpWorkers
// goroutines, request i on connection i mod len(clients).
func httpRequests(clients []*httpClient, k int) error {
	var wg sync.WaitGroup
	errs := make([]error, httpWorkers)
	for w := range httpWorkers {
		wg.Go(func() {
			for i := w; i < k; i += httpWorkers {
				if err := clients[i%len(clients)].roundTrip(); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// httpWorkers is how many goroutines send the request benchmark's
// requests.
const httpWorkers = 4

// dialHTTPClients opens n keep-alive connections to addr. The request
// benchmark's workers send request i on connection i mod n, so with n a
// multiple of httpWorkers each connection belongs to one worker.
func dialHTTPClients(addr string, n int) ([]*httpClient, error) {
	conns, err := dialAll(addr, n, idleDialers)
	if err != nil {
		return nil, err
	}
	clients := make([]*httpClient, n)
	for i, c := range conns {
		clients[i] = &httpClient{c: c, br: bufio.NewReader(c)}
	}
	// One request on each, so that the server has accepted every
	// connection and started its goroutine before anything is timed.
	for i, h := range clients {
		if err := h.roundTrip(); err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("connection %d: first request: %w", i, err)
		}
	}
	return clients, nil
}
