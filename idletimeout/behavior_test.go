package idletimeout

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestConfigValidate covers every validation rule and the defaults.
func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		wantErr string        // substring; "" = valid
		wantRes time.Duration // resolution after defaults, if valid
	}{
		{"zero config disables", Config{}, "", 0},
		{"negative idle", Config{IdleTimeout: -1}, "IdleTimeout -1ns", 0},
		{"negative read", Config{ReadTimeout: -time.Second}, "ReadTimeout -1s", 0},
		{"negative write", Config{WriteTimeout: -time.Second}, "WriteTimeout -1s", 0},
		{"negative resolution", Config{IdleTimeout: time.Second, Resolution: -1}, "Resolution -1ns", 0},
		{"resolution above timeout", Config{ReadTimeout: time.Second, Resolution: 2 * time.Second}, "exceeds the shortest timeout", 0},
		{"resolution too fine", Config{IdleTimeout: time.Hour, Resolution: time.Millisecond}, "too fine", 0},
		{"default resolution is timeout/16", Config{IdleTimeout: 1600 * time.Millisecond}, "", 100 * time.Millisecond},
		{"default resolution capped at 1s", Config{IdleTimeout: time.Hour}, "", time.Second},
		{"default resolution at least 1ms", Config{IdleTimeout: 5 * time.Millisecond}, "", time.Millisecond},
		{"default resolution under tiny timeout", Config{IdleTimeout: 500 * time.Microsecond}, "", 500 * time.Microsecond},
		{"shortest timeout sets the default", Config{IdleTimeout: time.Minute, WriteTimeout: 160 * time.Millisecond}, "", 10 * time.Millisecond},
		{"longest timeout raises the default", Config{IdleTimeout: time.Hour, WriteTimeout: 160 * time.Millisecond}, "", time.Duration((int64(time.Hour) + maxRatio - 1) / maxRatio)},
		{"timeouts too far apart", Config{IdleTimeout: time.Hour, WriteTimeout: time.Millisecond}, "too far apart", 0},
		{"explicit resolution under timeouts too far apart", Config{IdleTimeout: time.Hour, WriteTimeout: time.Millisecond, Resolution: time.Millisecond}, "too fine", 0},
		{"MaxInt64 timeout", Config{IdleTimeout: math.MaxInt64}, "", maxAnyResolution},
		{"MaxInt64 read and write timeouts", Config{ReadTimeout: math.MaxInt64, WriteTimeout: math.MaxInt64 - 1}, "", maxAnyResolution},
		{"near-max timeout", Config{IdleTimeout: math.MaxInt64 - 1000}, "", maxAnyResolution},
		{"MaxInt64 timeout and resolution", Config{IdleTimeout: math.MaxInt64, Resolution: math.MaxInt64}, "Resolution 2562047h47m16.854775807s, want at most", 0},
		{"MaxInt64 beside a short timeout", Config{IdleTimeout: math.MaxInt64, ReadTimeout: time.Second}, "too far apart", 0},
		{"MaxInt64 resolution alone", Config{Resolution: math.MaxInt64}, "", 0},
		{"explicit resolution kept", Config{IdleTimeout: time.Minute, Resolution: 50 * time.Millisecond}, "", 50 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.cfg.validate()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("validate() error %v, want ErrInvalidConfig containing %q", err, tc.wantErr)
				}
				if _, err := NewListener(newPipeListener(), tc.cfg); !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("NewListener error %v, want ErrInvalidConfig", err)
				}
				if _, err := Wrap(nopConn{}, tc.cfg); !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("Wrap error %v, want ErrInvalidConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("validate() error %v, want nil", err)
			}
			if s.res != tc.wantRes {
				t.Errorf("resolution %v, want %v", s.res, tc.wantRes)
			}
		})
	}
}

func TestReasonActionStrings(t *testing.T) {
	cases := []struct{ got, want string }{
		{ReasonIdle.String(), "idle"}, {ReasonRead.String(), "read"}, {ReasonWrite.String(), "write"},
		{Reason(9).String(), "Reason(9)"}, {Close.String(), "close"}, {Keep.String(), "keep"},
		{Action(0).String(), "close"}, {Action(7).String(), "Action(7)"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestRefreshNoAllocs: the hot path allocates nothing.
func TestRefreshNoAllocs(t *testing.T) {
	l, err := NewListener(newPipeListener(), Config{IdleTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := l.Wrap(nopConn{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := make([]byte, 64)
	if n := testing.AllocsPerRun(1000, func() { c.Read(b); c.Write(b) }); n != 0 {
		t.Errorf("Read+Write allocate %v times, want 0", n)
	}
}

// TestRefreshStampsOncePerTick: within one tick, Reads leave the stamp at
// the activity clock; the stamp follows the clock and never goes back.
func TestRefreshStampsOncePerTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l, err := NewListener(newPipeListener(), Config{IdleTimeout: tT, Resolution: tRes})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		c, err := l.Wrap(nopConn{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		b := make([]byte, 1)
		for i := range 5 {
			time.Sleep(tRes + tRes*3/10) // never on a tick
			c.Read(b)
			clock := c.tr.now.Load()
			if got := c.rstamp.Load(); got != clock {
				t.Fatalf("step %d: read stamp %v, want the activity clock %v", i, time.Duration(got), time.Duration(clock))
			}
			if got, want := c.LastRead().Sub(start), time.Since(start)/tRes*tRes; got != want {
				t.Errorf("step %d: LastRead at %v, want %v (rounded down to the tick)", i, got, want)
			}
			if got := c.LastWrite(); !got.Equal(start) {
				t.Errorf("step %d: LastWrite %v, want the wrap time %v", i, got, start)
			}
		}
		raise(&c.rstamp, 1) // an older value never lowers the stamp
		if c.rstamp.Load() == 1 {
			t.Errorf("stamp went backwards")
		}
	})
}

// TestOnIdleKeep: Keep leaves the connection open and reports again after
// every further timeout; activity starts the count afresh.
func TestOnIdleKeep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		type rec struct {
			at    time.Duration
			count int
			idle  time.Duration
		}
		events := make(chan rec, 10)
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes, OnIdle: func(e Event) Action {
			events <- rec{time.Since(start), e.Count, e.Idle}
			return Keep
		}})
		defer l.Close()
		c, client := pair(t, l, pl)
		defer c.Close()
		drain(client)
		want := []rec{{tT + tRes, 1, tT}, {2*tT + tRes, 2, 2 * tT}, {3*tT + tRes, 3, 3 * tT}}
		for _, w := range want {
			if got := <-events; got != w {
				t.Errorf("event %+v, want %+v", got, w)
			}
		}
		time.Sleep(tRes / 2) // 3.15s
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatalf("Write after Keep: %v", err)
		}
		if got, want := <-events, (rec{3*tT + 2*tRes + tT, 1, tT}); got != want {
			t.Errorf("after activity: event %+v, want %+v", got, want)
		}
		st := l.Stats()
		if st.Events != 4 || st.Kept != 4 || st.Closed != 0 || st.Open != 1 {
			t.Errorf("Stats %+v, want 4 events, 4 kept, 0 closed, 1 open", st)
		}
	})
}

// TestOnIdlePanicRecovered: a panicking OnIdle is reported, counted, and
// the connection is closed; the wheel goes on reaping.
func TestOnIdlePanicRecovered(t *testing.T) {
	var logged bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(old)
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes, OnIdle: func(e Event) Action { panic("boom") }})
		defer l.Close()
		c1, client1 := pair(t, l, pl)
		defer client1.Close()
		err, _ := waitReaped(c1, time.Now())
		if !errors.Is(err, ErrIdle) {
			t.Errorf("Read after panicking OnIdle: %v, want ErrIdle", err)
		}
		c2, client2 := pair(t, l, pl)
		defer client2.Close()
		if err, _ := waitReaped(c2, time.Now()); !errors.Is(err, ErrIdle) {
			t.Errorf("second connection: %v, want ErrIdle", err)
		}
		if st := l.Stats(); st.Panics != 2 || st.ReapedIdle != 2 {
			t.Errorf("Stats %+v, want 2 panics, 2 reaped", st)
		}
	})
	if !strings.Contains(logged.String(), "OnIdle panicked") || !strings.Contains(logged.String(), "boom") {
		t.Errorf("log %q, want the panic reported", logged.String())
	}
}

// TestOnIdleGoexitCloses: an OnIdle that called runtime.Goexit (t.FailNow
// in a test) was neither a panic nor an answer: nothing was counted and the
// connection stayed open, as if kept, with OnIdle exiting again at every
// later timeout. It now counts as a panic and closes the connection.
func TestOnIdleGoexitCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes, OnIdle: func(e Event) Action {
			calls.Add(1)
			runtime.Goexit()
			return Keep
		}})
		defer l.Close()
		c, client := pair(t, l, pl)
		defer client.Close()
		reaped := make(chan error, 1)
		go func() { err, _ := waitReaped(c, time.Now()); reaped <- err }()
		select {
		case err := <-reaped:
			if !errors.Is(err, ErrIdle) {
				t.Errorf("Read after OnIdle's Goexit: %v, want ErrIdle", err)
			}
		case <-time.After(10 * tT):
			c.Close()
			t.Errorf("connection still open 10 timeouts later, OnIdle called %d times", calls.Load())
		}
		if st := l.Stats(); st.Panics != 1 || st.ReapedIdle != 1 || st.Kept != 0 {
			t.Errorf("Stats %+v, want 1 panic, 1 reaped, 0 kept", st)
		}
	})
}

// TestOnIdleRunsOffOwner: an OnIdle that blocks does not stop the wheel:
// another connection is reaped on time meanwhile.
func TestOnIdleRunsOffOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		release := make(chan struct{})
		var first *Conn
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes, OnIdle: func(e Event) Action {
			if e.Conn == first {
				<-release
			}
			return Close
		}})
		defer l.Close()
		var client1 net.Conn
		first, client1 = pair(t, l, pl)
		defer client1.Close()
		time.Sleep(tT / 2)
		c2, client2 := pair(t, l, pl)
		defer client2.Close()
		if _, at := waitReaped(c2, start); at != tT/2+tT+tRes {
			t.Errorf("second connection reaped at %v while OnIdle blocks, want %v", at, tT/2+tT+tRes)
		}
		close(release)
		if err, _ := waitReaped(first, start); !errors.Is(err, ErrIdle) {
			t.Errorf("first connection: %v, want ErrIdle", err)
		}
	})
}

// TestPauseResume: a paused connection is never reaped; Resume starts the
// timeouts afresh.
func TestPauseResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
		defer l.Close()
		c, client := pair(t, l, pl)
		defer client.Close()
		c.Pause()
		c.Pause() // does not nest
		if !c.Paused() {
			t.Fatalf("Paused() = false after Pause")
		}
		time.Sleep(10 * tT)
		if st := l.Stats(); st.Events != 0 || st.Open != 1 {
			t.Fatalf("paused connection: Stats %+v, want no event", st)
		}
		time.Sleep(tRes / 2)
		c.Resume()
		if c.Paused() {
			t.Fatalf("Paused() = true after Resume")
		}
		resumed := time.Since(start)
		_, at := waitReaped(c, start)
		if idle := at - resumed; idle < tT || idle > tT+2*tRes {
			t.Errorf("reaped %v after Resume, want within [%v, %v]", idle, tT, tT+2*tRes)
		}
	})
}

// TestTouch: Touch counts as activity.
func TestTouch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
		defer l.Close()
		c, client := pair(t, l, pl)
		defer client.Close()
		for range 5 {
			time.Sleep(tT - time.Millisecond)
			c.Touch()
		}
		touched := time.Since(start)
		if got := c.LastRead().Sub(start); got != touched {
			t.Errorf("LastRead after Touch at %v, want %v (Touch reads the clock)", got, touched)
		}
		_, at := waitReaped(c, start)
		if idle := at - touched; idle < tT || idle > tT+2*tRes {
			t.Errorf("reaped %v after the last Touch, want within [%v, %v]", idle, tT, tT+2*tRes)
		}
	})
}

// TestCloseCancelsTimer: Close and Release take the timer out of the wheel
// at once and stop the clock when nothing is left.
func TestCloseCancelsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
		defer l.Close()
		c1, client1 := pair(t, l, pl)
		defer client1.Close()
		c2, client2 := pair(t, l, pl)
		defer client2.Close()
		time.Sleep(tRes / 2)
		if got := l.tr.sched.Len(); got != 3 {
			t.Errorf("scheduled timers with 2 conns: %d, want 3 (2 conns + clock)", got)
		}
		c1.Close()
		if got := l.tr.sched.Len(); got != 2 {
			t.Errorf("after Close: %d timers, want 2", got)
		}
		c2.Release()
		c2.Release()
		defer c2.Close()
		time.Sleep(2 * tRes) // the clock stops at its next tick
		if got := l.tr.sched.Len(); got != 0 {
			t.Errorf("after Release: %d timers, want 0 (clock stopped)", got)
		}
		st := l.Stats()
		if st.Open != 0 || st.Closed != 1 || st.Released != 1 || st.Accepted != 2 {
			t.Errorf("Stats %+v, want 0 open, 1 closed, 1 released, 2 accepted", st)
		}
		// A released connection is never reaped.
		time.Sleep(5 * tT)
		go client2.Write([]byte("x"))
		if _, err := c2.Read(make([]byte, 1)); err != nil {
			t.Errorf("released connection after 5 timeouts: Read %v, want data", err)
		}
		if st := l.Stats(); st.Events != 0 {
			t.Errorf("events after close/release: %d, want 0", st.Events)
		}
	})
}

// TestListenerClose: Close unblocks Accept, is idempotent, stops the wheel;
// accepted connections stay open but are no longer reaped.
func TestListenerClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
		c, client := pair(t, l, pl)
		defer client.Close()
		errc := make(chan error)
		go func() {
			_, err := l.Accept()
			errc <- err
		}()
		synctest.Wait()
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-errc; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second Close: %v, want nil", err)
		}
		if _, err := l.Wrap(nopConn{}); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Wrap after Close: %v, want net.ErrClosed", err)
		}
		time.Sleep(3 * tT)
		go client.Write([]byte("x"))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			t.Errorf("Read on a connection after Listener.Close: %v, want data", err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("Conn.Close after Listener.Close: %v", err)
		}
	})
}

// TestDisabledConfig: with no timeout a Listener counts connections, runs
// no goroutine and never reaps.
func TestDisabledConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, Config{})
		defer l.Close()
		if l.tr.sched != nil {
			t.Fatalf("disabled Listener started a wheel")
		}
		c, client := pair(t, l, pl)
		defer client.Close()
		time.Sleep(time.Hour)
		c.Close()
		if st := l.Stats(); st.Accepted != 1 || st.Closed != 1 || st.Open != 0 || st.Events != 0 {
			t.Errorf("Stats %+v, want 1 accepted, 1 closed", st)
		}
		w, err := Wrap(nopConn{}, Config{})
		if err != nil || w.tr.sched != nil {
			t.Fatalf("Wrap with no timeout: %v, sched %v", err, w.tr.sched)
		}
		w.Close()
	})
}

// TestWrapSharesWheel: Wrap shares a wheel per resolution, which stops
// when its last connection leaves.
func TestWrapSharesWheel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		cfg := Config{IdleTimeout: tT, Resolution: tRes}
		a1, b1 := net.Pipe()
		a2, b2 := net.Pipe()
		defer b1.Close()
		defer b2.Close()
		c1, err := Wrap(a1, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := Wrap(a2, Config{ReadTimeout: 2 * tT, Resolution: tRes})
		if err != nil {
			t.Fatal(err)
		}
		if c1.tr != c2.tr {
			t.Errorf("Wrap with one resolution and similar timeouts: two wheels, want one")
		}
		if _, at := waitReaped(c1, start); at != tT+tRes {
			t.Errorf("c1 reaped at %v, want %v", at, tT+tRes)
		}
		if _, at := waitReaped(c2, start); at != 2*tT+tRes {
			t.Errorf("c2 reaped at %v, want %v", at, 2*tT+tRes)
		}
		sharedMu.Lock()
		n := len(shared)
		sharedMu.Unlock()
		if n != 0 {
			t.Errorf("%d shared wheels left after their connections closed, want 0", n)
		}
	})
}

// TestNoLeak10kConns: 10,000 connections come and go (half reaped, half
// closed by the client, some released); afterwards nothing is scheduled,
// the counters add up, and synctest.Test itself fails if any goroutine is
// left blocked in the bubble.
func TestNoLeak10kConns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
		srv := make(chan struct{})
		go func() {
			defer close(srv)
			for {
				c, err := l.AcceptConn()
				if err != nil {
					return
				}
				go func() {
					var b [16]byte
					for {
						n, err := c.Read(b[:])
						if err != nil {
							c.Close()
							return
						}
						c.Write(b[:n])
					}
				}()
			}
		}()
		const n = 10000
		for i := range n {
			client, err := pl.Dial()
			if err != nil {
				t.Fatal(err)
			}
			client.Write([]byte("hi"))
			client.Read(make([]byte, 2))
			if i%2 == 0 {
				client.Close()
			} else {
				go func() { // wait for the reap, then close
					client.Read(make([]byte, 1))
					client.Close()
				}()
			}
			if i%100 == 0 {
				time.Sleep(tRes)
			}
		}
		time.Sleep(2 * tT)
		synctest.Wait()
		st := l.Stats()
		if st.Accepted != n || st.Open != 0 || st.Closed != n || st.ReapedIdle != n/2 {
			t.Errorf("Stats %+v, want %d accepted and closed, %d reaped, 0 open", st, n, n/2)
		}
		if got := l.tr.sched.Len(); got != 0 {
			t.Errorf("%d timers scheduled after every connection left, want 0", got)
		}
		l.Close()
		<-srv
	})
}

// TestOnIdleClosesItself: OnIdle may close the connection itself and
// return Keep.
func TestOnIdleClosesItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes, OnIdle: func(e Event) Action {
			e.Conn.Write([]byte("bye"))
			e.Conn.Close()
			return Keep
		}})
		defer l.Close()
		_, client := pair(t, l, pl)
		var got bytes.Buffer
		buf := make([]byte, 8)
		for {
			n, err := client.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if got.String() != "bye" {
			t.Errorf("client read %q, want %q", got.String(), "bye")
		}
		synctest.Wait() // OnIdle returns after its Close: the EOF can come first
		if st := l.Stats(); st.Closed != 1 || st.ReapedIdle != 0 || st.Kept != 1 {
			t.Errorf("Stats %+v, want 1 closed (by OnIdle), 0 reaped, 1 kept", st)
		}
	})
}
