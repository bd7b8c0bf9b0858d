package idletimeout

import (
	"errors"
	"math/rand/v2"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

const (
	tT   = time.Second            // the timeout in timing tests
	tRes = 100 * time.Millisecond // the resolution in timing tests
)

// modelReap is the reference: when an idle connection whose last activity
// was at offset x (since the wheel started) is reaped with timeout T and
// resolution res. Activity inside tick k (stamped k·res) is bounded by the
// next publication, (k+1)·res, and the reap happens on the first tick at or
// after that bound plus T. Activity exactly on a tick may be stamped before
// or after that tick's publication: both reap times are allowed.
func modelReap(x, T, res time.Duration) []time.Duration {
	up := func(d time.Duration) time.Duration { return (d + res - 1) / res * res }
	after := up(x/res*res + res + T) // stamped with the tick at or before x
	if x%res != 0 {
		return []time.Duration{after}
	}
	return []time.Duration{up(x + T), after} // stamped with the previous tick, or x's
}

func within(got time.Duration, want []time.Duration) bool {
	for _, w := range want {
		if got == w {
			return true
		}
	}
	return false
}

// TestReapTimeExact pins the reap time of an idle connection after its
// last Write, for offsets inside and at the edges of a tick.
func TestReapTimeExact(t *testing.T) {
	cases := []struct {
		name string
		last time.Duration // last Write, since the start; -1: none
		want time.Duration
	}{
		{"never active", -1, tT + tRes},
		{"early in tick", 10 * time.Millisecond, tT + tRes},
		{"late in tick", 99 * time.Millisecond, tT + tRes},
		{"just after tick", 101 * time.Millisecond, tT + 2*tRes},
		{"mid later tick", 950 * time.Millisecond, 2 * tT},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
				defer l.Close()
				c, client := pair(t, l, pl)
				drain(client)
				if tc.last >= 0 {
					time.Sleep(tc.last)
					if _, err := c.Write([]byte("x")); err != nil {
						t.Fatalf("Write: %v", err)
					}
				}
				err, at := waitReaped(c, start)
				if at != tc.want {
					t.Errorf("reaped at %v, want %v", at, tc.want)
				}
				if !errors.Is(err, ErrIdle) {
					t.Errorf("Read error %v, want ErrIdle", err)
				}
				if want := tc.want - max(tc.last, 0); at-max(tc.last, 0) < tT || want > tT+2*tRes {
					t.Errorf("idle for %v before the reap, want within [%v, %v]", want, tT, tT+2*tRes)
				}
			})
		})
	}
}

// TestNeverEarlyActiveConn keeps a connection active with gaps just under
// the timeout, at many phases relative to the ticks (including exactly on
// them): it must never be reaped; once it goes quiet it is reaped on time.
func TestNeverEarlyActiveConn(t *testing.T) {
	phases := []struct {
		name  string
		phase time.Duration
	}{
		{"on tick", 0},
		{"1ns after tick", 1},
		{"1ns before tick", tRes - 1},
		{"mid tick", tRes / 2},
	}
	for _, p := range phases {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
				defer l.Close()
				c, client := pair(t, l, pl)
				drain(client)
				time.Sleep(p.phase)
				for i := range 30 {
					gap := tT - 1
					if i%2 == 1 {
						gap = tT - tRes - 1
					}
					time.Sleep(gap)
					if _, err := c.Write([]byte("x")); err != nil {
						t.Fatalf("Write %d at %v: %v (active connection closed)", i, time.Since(start), err)
					}
				}
				last := time.Since(start)
				_, at := waitReaped(c, start)
				if want := modelReap(last, tT, tRes); !within(at, want) {
					t.Errorf("reaped at %v, want one of %v", at, want)
				}
				if got := l.Stats().ReapedIdle; got != 1 {
					t.Errorf("Stats.ReapedIdle = %d, want 1", got)
				}
			})
		})
	}
}

// reapRun plays gaps (each a Write or a Read on the server side) on one
// connection and returns when it was reaped, or the index of the activity
// that failed.
func reapRun(t *testing.T, cfg Config, gaps []time.Duration, reads []bool) (last, reaped time.Duration, failed int) {
	l, pl := newPipeServer(t, cfg)
	defer l.Close()
	start := time.Now()
	c, client := pair(t, l, pl)
	// The client echoes nothing: it reads what the server writes and
	// writes when asked.
	drain(client)
	for i, g := range gaps {
		time.Sleep(g)
		var err error
		if reads[i] {
			go client.Write([]byte("r"))
			var b [1]byte
			_, err = c.Read(b[:])
		} else {
			_, err = c.Write([]byte("w"))
		}
		if err != nil {
			return 0, 0, i
		}
		last = time.Since(start)
	}
	_, reaped = waitReaped(c, start)
	return last, reaped, -1
}

// checkReap compares one randomized run against the reference model.
func checkReap(t *testing.T, gaps []time.Duration, reads []bool) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		last, reaped, failed := reapRun(t, Config{IdleTimeout: tT, Resolution: tRes}, gaps, reads)
		if failed >= 0 {
			t.Fatalf("activity %d (gaps %v) failed: closed while active", failed, gaps)
		}
		if want := modelReap(last, tT, tRes); !within(reaped, want) {
			t.Fatalf("gaps %v: last activity %v, reaped at %v, want one of %v", gaps, last, reaped, want)
		}
		if idle := reaped - last; idle < tT || idle > tT+2*tRes {
			t.Fatalf("gaps %v: reaped after %v idle, want within [%v, %v]", gaps, idle, tT, tT+2*tRes)
		}
	})
}

// TestReapBoundsSweep: random activity (reads and writes with gaps below
// the timeout, at random phases), then silence; the reap matches the model
// exactly and lies within [T, T + 2×resolution] of the last activity.
func TestReapBoundsSweep(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for range 40 {
		n := 1 + rng.IntN(12)
		gaps := make([]time.Duration, n)
		reads := make([]bool, n)
		for i := range gaps {
			switch rng.IntN(4) {
			case 0: // on a tick boundary relative to the previous activity
				gaps[i] = time.Duration(1+rng.IntN(9)) * tRes
			case 1: // just under the timeout
				gaps[i] = tT - 1 - time.Duration(rng.IntN(3))
			default:
				gaps[i] = time.Duration(rng.Int64N(int64(tT)))
			}
			reads[i] = rng.IntN(2) == 0
		}
		checkReap(t, gaps, reads)
	}
}

// FuzzReapTime is the sweep driven by go test -fuzz.
func FuzzReapTime(f *testing.F) {
	f.Add([]byte{0, 10, 200, 99, 100})
	f.Add([]byte{255, 255, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 16 {
			data = data[:16]
		}
		gaps := make([]time.Duration, len(data))
		reads := make([]bool, len(data))
		for i, b := range data {
			// 0..127: multiples of 10ms up to 1.27s capped under T; 128..255: fine offsets.
			if b < 128 {
				gaps[i] = min(time.Duration(b)*10*time.Millisecond, tT-1)
			} else {
				gaps[i] = time.Duration(b-128)*7*time.Millisecond + time.Duration(b)
			}
			reads[i] = b%3 == 0
		}
		checkReap(t, gaps, reads)
	})
}

// TestTimeoutKinds: ReadTimeout ignores writes, WriteTimeout ignores
// reads, IdleTimeout counts both; the event names the timeout.
func TestTimeoutKinds(t *testing.T) {
	cases := []struct {
		name   string
		cfg    Config
		reads  bool // activity is reads (else writes), every 500ms
		reason Reason
		at     time.Duration // reap time
	}{
		{"read timeout, writes only", Config{ReadTimeout: tT, Resolution: tRes}, false, ReasonRead, tT + tRes},
		{"write timeout, reads only", Config{WriteTimeout: tT, Resolution: tRes}, true, ReasonWrite, tT + tRes},
		{"idle timeout, writes only", Config{IdleTimeout: tT, Resolution: tRes}, false, 0, 0},
		{"idle timeout, reads only", Config{IdleTimeout: tT, Resolution: tRes}, true, 0, 0},
		{"read and idle, writes only", Config{IdleTimeout: 3 * tT, ReadTimeout: 2 * tT, Resolution: tRes}, false, ReasonRead, 2*tT + tRes},
		{"write shorter than idle", Config{IdleTimeout: 3 * tT, WriteTimeout: 2 * tT, Resolution: tRes}, true, ReasonWrite, 2*tT + tRes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				type stamped struct {
					Event
					at time.Duration
				}
				events := make(chan stamped, 1)
				tc.cfg.OnIdle = func(e Event) Action { events <- stamped{e, time.Since(start)}; return Close }
				l, pl := newPipeServer(t, tc.cfg)
				defer l.Close()
				c, client := pair(t, l, pl)
				defer c.Close()
				drain(client)
				for i := range 8 {
					time.Sleep(500*time.Millisecond + time.Millisecond)
					var err error
					if tc.reads {
						go client.Write([]byte("r"))
						_, err = c.Read(make([]byte, 1))
					} else {
						_, err = c.Write([]byte("w"))
					}
					if err != nil {
						if tc.reason == 0 {
							t.Fatalf("activity %d: %v (closed while active)", i, err)
						}
						break
					}
				}
				if tc.reason == 0 {
					select {
					case e := <-events:
						t.Fatalf("unexpected event %+v", e)
					default:
					}
					return
				}
				e := <-events
				if got := e.at; got != tc.at {
					t.Errorf("event at %v, want %v", got, tc.at)
				}
				if e.Reason != tc.reason {
					t.Errorf("Reason = %v, want %v", e.Reason, tc.reason)
				}
				if e.Idle < tc.at-tRes || e.Idle > tc.at {
					t.Errorf("Idle = %v, want within [%v, %v]", e.Idle, tc.at-tRes, tc.at)
				}
				var ie *IdleError
				if _, err := c.Write([]byte("x")); !errors.As(err, &ie) || ie.Reason != tc.reason {
					t.Errorf("Write after reap: %v, want *IdleError with reason %v", err, tc.reason)
				}
			})
		})
	}
}

// TestReapedReadFailsWithErrIdle: a Read pending when the connection is
// reaped fails with an error that is ErrIdle and a net.Error timeout.
func TestReapedReadFailsWithErrIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, Config{ReadTimeout: tT, Resolution: tRes})
		defer l.Close()
		c, client := pair(t, l, pl)
		defer client.Close()
		_, err := c.Read(make([]byte, 1))
		if !errors.Is(err, ErrIdle) {
			t.Fatalf("Read error %v, want ErrIdle", err)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("Read error %v: not a net.Error with Timeout() true", err)
		}
		var ie *IdleError
		if !errors.As(err, &ie) || ie.Op != "read" || ie.Reason != ReasonRead {
			t.Errorf("Read error %#v, want *IdleError{Op: read, Reason: read}", err)
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, ErrIdle) {
			t.Errorf("Write after reap: %v, want ErrIdle", err)
		}
		if _, err := client.Read(make([]byte, 1)); err == nil {
			t.Errorf("client Read after reap succeeded, want EOF")
		}
	})
}
