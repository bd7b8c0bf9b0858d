package bench

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/idletimeout"
)

// BenchmarkSlowAttack (issue 25) sets slowhttptest, a real slow-attack
// tool, against four servers on loopback, one attack at a time, while
// honest slow clients use the same server:
//
//   - ttlkit: a Go http.Server on an idletimeout Listener with the
//     protective config attackConfig (idle, first byte and minimum rates),
//     ConnState installed, and no net/http timeout;
//   - nethttp: the same server with net/http's own timeouts only
//     (ReadHeaderTimeout and IdleTimeout, 5s);
//   - nginx-default and nginx-hardened: Debian's nginx serving the same
//     file, with its defaults (60s header, body and send timeouts) and with
//     them at 5s.
//
// Attacks (slowhttptest modes): slowloris -H (a header line every 3s),
// slow body -B (a body chunk every 3s), slow read -X (a tiny receive
// window, 32 bytes read every second) and range -R. Figures per run:
// conns (attack connections), held-max (most the attacker held open at
// once), closed99-s (seconds from the start until 99% of the attack's
// connections were closed, or the test length if never), unavail-s
// (seconds slowhttptest's probe found the service unavailable), honest and
// honest-cut (honest clients, and how many saw an error or a close):
// downloaders reading a file at 2 KB/s and keep-alive clients sending a
// request every 3s, under the idle timeout.
//
// slowhttptest and nginx come from Debian (idle_attack_setup.sh installs
// them); without them the benchmark skips, except under CI=true, where it
// fails. Sizes: 300 attack connections, 30s per attack, 50 honest
// clients; with -short 40, 10s and 10.

// attackGrace is the RateGrace of attackConfig.
var attackGrace = 5 * time.Second

// attackConfig is the documented protective config for HTTP, with the
// grace shortened under -short.
func attackConfig() idletimeout.Config {
	return idletimeout.Config{
		IdleTimeout:      5 * time.Second,
		FirstByteTimeout: 5 * time.Second,
		MinReadRate:      240,
		MinWriteRate:     240,
		RateGrace:        attackGrace,
	}
}

type attackSize struct {
	conns, honest int
	length        time.Duration
}

func attackSizes() attackSize {
	if testing.Short() {
		return attackSize{conns: 40, honest: 10, length: 10 * time.Second}
	}
	return attackSize{conns: 300, honest: 50, length: 30 * time.Second}
}

// attackFile is the file every server serves: large enough that a slow
// reader blocks the server's writes.
const attackFileSize = 256 << 10

// needAttackTools returns the paths of slowhttptest and nginx, skipping
// (or, under CI=true, failing) when they are missing.
func needAttackTools(tb testing.TB) (slow, nginx string) {
	slow, err1 := exec.LookPath("slowhttptest")
	nginx, err2 := exec.LookPath("nginx")
	if err2 != nil {
		if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
			nginx, err2 = "/usr/sbin/nginx", nil
		}
	}
	if err := errors.Join(err1, err2); err != nil {
		msg := fmt.Sprintf("slowhttptest and nginx are needed (bench/idle_attack_setup.sh installs them): %v", err)
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return slow, nginx
}

// attackTarget is a running server: its URL and how to stop it.
type attackTarget struct {
	url  string
	stop func()
	ln   *idletimeout.Listener // ttlkit only
	rc   *reapClock            // ttlkit only
}

func startGoTarget(tb testing.TB, protect bool, dir string) *attackTarget {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(dir)))
	srv := &http.Server{Handler: mux}
	var ln net.Listener = inner
	t := &attackTarget{url: "http://" + inner.Addr().String() + "/file"}
	if protect {
		l, err := idletimeout.NewListener(inner, attackConfig())
		if err != nil {
			tb.Fatal(err)
		}
		srv.ConnState = idletimeout.ConnState
		t.rc = newReapClock()
		ln, t.ln = t.rc.listener(l), l
	} else {
		srv.ReadHeaderTimeout = 5 * time.Second
		srv.IdleTimeout = 5 * time.Second
	}
	go srv.Serve(ln)
	t.stop = func() { srv.Close() }
	return t
}

func startNginx(tb testing.TB, nginx, www string, hardened bool) *attackTarget {
	dir := tb.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	timeouts := ""
	if hardened {
		timeouts = "client_header_timeout 5s; client_body_timeout 5s; send_timeout 5s; keepalive_timeout 5s;"
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	conf := fmt.Sprintf(`%s
worker_processes 1;
daemon off;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path %[2]s/body; proxy_temp_path %[2]s/proxy; fastcgi_temp_path %[2]s/fcgi;
  uwsgi_temp_path %[2]s/uwsgi; scgi_temp_path %[2]s/scgi;
  %[3]s
  server { listen %[4]s; root %[5]s; location / { } }
}
`, user, dir, timeouts, addr, www)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-c", path)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	for i := 0; ; i++ { // wait for the port: nginx starts in a few ms
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i == 200 {
			stopNginx(cmd)
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			tb.Fatalf("nginx did not start: %v\n%s", err, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &attackTarget{url: "http://" + addr + "/file", stop: func() { stopNginx(cmd) }}
}

// stopNginx stops nginx with its workers: SIGTERM makes the master end them
// and exit, where a SIGKILL of the master leaves the workers running,
// orphaned (seen after a CI run). A master still there after 10s is killed.
func stopNginx(cmd *exec.Cmd) {
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		cmd.Process.Kill()
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// endedRE finds the second slowhttptest ended on in its output.
var endedRE = regexp.MustCompile(`Test ended on (\d+)`)

// attackResult is one slowhttptest run as its CSV tells it.
type attackResult struct {
	heldMax, closed int
	closed99        float64 // seconds
	unavail         int
}

// runSlowhttptest runs mode against url and parses the per-second CSV
// (Seconds, Closed, Pending, Connected, Service Available).
func runSlowhttptest(ctx context.Context, slow, mode, url string, sz attackSize, dir string) (*attackResult, error) {
	out := filepath.Join(dir, "out"+strings.TrimPrefix(mode, "-"))
	args := []string{mode, "-c", strconv.Itoa(sz.conns), "-r", strconv.Itoa(max(sz.conns/2, 1)), "-l", strconv.Itoa(int(sz.length / time.Second)),
		"-i", "3", "-u", url, "-g", "-o", out, "-v", "1", "-p", "3"}
	switch mode {
	case "-X":
		args = append(args, "-n", "1", "-z", "32", "-w", "1", "-y", "64", "-k", "4")
	case "-B":
		args = append(args, "-s", "100000")
	}
	cmd := exec.CommandContext(ctx, slow, args...)
	stdout, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("slowhttptest %s: %v\n%s", mode, err, stdout)
	}
	f, err := os.Open(out + ".csv")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	if testing.Verbose() {
		b, _ := os.ReadFile(out + ".csv")
		fmt.Printf("slowhttptest %s %s:\n%s", mode, url, b)
	}
	r := &attackResult{closed99: sz.length.Seconds()}
	for _, row := range rows[1:] {
		if len(row) < 5 {
			continue
		}
		sec, _ := strconv.Atoi(row[0])
		closed, _ := strconv.Atoi(row[1])
		connected, _ := strconv.Atoi(row[3])
		avail, _ := strconv.Atoi(row[4])
		r.heldMax = max(r.heldMax, connected)
		r.closed = closed
		if avail == 0 {
			r.unavail++
		}
		if closed*100 >= sz.conns*99 && r.closed99 == sz.length.Seconds() {
			r.closed99 = float64(sec)
		}
	}
	// slowhttptest learns of a close when it next sends (every 3s), and it
	// stops, without a last CSV line, once none of its connections is left.
	if m := endedRE.FindSubmatch(stdout); m != nil && strings.Contains(string(stdout), "No open connections left") {
		sec, _ := strconv.Atoi(string(m[1]))
		r.closed = sz.conns
		r.closed99 = min(r.closed99, float64(sec))
	}
	return r, nil
}

// honestClients runs n/2 downloaders reading the file at 2 KB/s and n/2
// keep-alive clients sending a request every 3s, until ctx ends, and
// returns how many saw an error or a close before that.
func honestClients(ctx context.Context, url string, n int) int {
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/file")
	var cut atomic.Int64
	var wg sync.WaitGroup
	req := "GET /file HTTP/1.1\r\nHost: bench\r\n\r\n"
	small := "GET /small HTTP/1.1\r\nHost: bench\r\n\r\n"
	for i := range n {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				cut.Add(1)
				return
			}
			defer c.Close()
			context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
			br := bufio.NewReader(c)
			fail := func(err error) {
				if ctx.Err() == nil {
					cut.Add(1)
					if testing.Verbose() {
						fmt.Printf("honest client %d cut: %v\n", i, err)
					}
				}
			}
			if i%2 == 0 { // a 2 KB/s download, again and again
				buf := make([]byte, 2000)
				for ctx.Err() == nil {
					if _, err := io.WriteString(c, req); err != nil {
						fail(err)
						return
					}
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						fail(err)
						return
					}
					for {
						_, err := io.ReadFull(resp.Body, buf)
						if err == io.EOF || err == io.ErrUnexpectedEOF {
							break
						}
						if err != nil {
							fail(err)
							return
						}
						select {
						case <-ctx.Done():
							return
						case <-time.After(time.Second): // the client's pace
						}
					}
					resp.Body.Close()
				}
				return
			}
			for ctx.Err() == nil { // keep-alive: a small request every 3s
				if _, err := io.WriteString(c, small); err != nil {
					fail(err)
					return
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					fail(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				select {
				case <-ctx.Done():
				case <-time.After(3 * time.Second): // under the 5s idle timeout
				}
			}
		})
	}
	wg.Wait()
	return int(cut.Load())
}

func BenchmarkSlowAttack(b *testing.B) {
	slow, nginx := needAttackTools(b)
	sz := attackSizes()
	if testing.Short() {
		attackGrace = 2 * time.Second
	}
	raiseNoFile(4*(sz.conns+sz.honest) + fdSlack)
	www := b.TempDir()
	if err := os.WriteFile(filepath.Join(www, "file"), make([]byte, attackFileSize), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(www, "small"), []byte("ok"), 0o644); err != nil {
		b.Fatal(err)
	}
	if os.Geteuid() == 0 {
		os.Chmod(www, 0o755)
	}
	targets := []struct {
		name  string
		start func() *attackTarget
	}{
		{"ttlkit", func() *attackTarget { return startGoTarget(b, true, www) }},
		{"nethttp", func() *attackTarget { return startGoTarget(b, false, www) }},
		{"nginx-default", func() *attackTarget { return startNginx(b, nginx, www, false) }},
		{"nginx-hardened", func() *attackTarget { return startNginx(b, nginx, www, true) }},
	}
	for _, mode := range []string{"-H", "-B", "-X", "-R"} {
		for _, tg := range targets {
			b.Run("attack="+strings.TrimPrefix(mode, "-")+"/impl="+tg.name, func(b *testing.B) {
				t := tg.start()
				defer t.stop()
				ctx, cancel := context.WithTimeout(context.Background(), sz.length+20*time.Second)
				defer cancel()
				honestCtx, stopHonest := context.WithCancel(ctx)
				cutc := make(chan int, 1)
				go func() { cutc <- honestClients(honestCtx, t.url, sz.honest) }()
				res, err := runSlowhttptest(ctx, slow, mode, t.url, sz, b.TempDir())
				stopHonest()
				cut := <-cutc
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(sz.conns), "conns")
				b.ReportMetric(float64(res.heldMax), "held-max")
				b.ReportMetric(res.closed99, "closed99-s")
				b.ReportMetric(float64(res.unavail), "unavail-s")
				b.ReportMetric(float64(sz.honest), "honest")
				b.ReportMetric(float64(cut), "honest-cut")
				if t.ln != nil {
					st := t.ln.Stats()
					b.ReportMetric(float64(st.ReapedReadRate), "reaped-rrate")
					b.ReportMetric(float64(st.ReapedWriteRate), "reaped-wrate")
					b.ReportMetric(float64(st.ReapedIdle+st.ReapedFirstByte), "reaped-idle")
					p99, _ := t.rc.p99(0)
					b.ReportMetric(p99, "srv-reap99-s")
					if testing.Verbose() {
						for r := idletimeout.ReasonIdle; r <= idletimeout.ReasonMaxAge; r++ {
							if p, n := t.rc.p99(r); n > 0 {
								fmt.Printf("%s: %d reaped for %v, p99 %.2fs after accept\n", b.Name(), n, r, p)
							}
						}
					}
				}
			})
		}
	}
}
