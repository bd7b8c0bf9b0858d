package idletimeout

import (
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// blockingOnIdle returns an OnIdle that reports each event on entered and
// returns Close once release is closed.
func blockingOnIdle(entered chan<- Event, release <-chan struct{}) func(Event) Action {
	return func(e Event) Action {
		entered <- e
		<-release
		return Close
	}
}

// TestReapRecheckedBeforeClose: a connection that becomes active while the
// reap decided for it is still pending (here: OnIdle blocks while a request
// arrives, is read and the connection is paused) is not closed when OnIdle
// returns Close; its timer stays armed, and it is reaped once it really is
// idle for a whole timeout.
func TestReapRecheckedBeforeClose(t *testing.T) {
	for _, tc := range []struct {
		name   string
		active func(c *Conn, client net.Conn) error
	}{
		{"read", func(c *Conn, client net.Conn) error {
			go client.Write([]byte("POST"))
			_, err := io.ReadFull(c, make([]byte, 4))
			return err
		}},
		{"write", func(c *Conn, client net.Conn) error {
			go io.ReadFull(client, make([]byte, 2))
			_, err := c.Write([]byte("hi"))
			return err
		}},
		{"pause", func(c *Conn, client net.Conn) error { c.Pause(); c.Resume(); return nil }},
		{"touch", func(c *Conn, client net.Conn) error { c.Touch(); return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				entered := make(chan Event, 4)
				release := make(chan struct{})
				l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes, OnIdle: blockingOnIdle(entered, release)})
				defer l.Close()
				c, client := pair(t, l, pl)
				defer client.Close()
				<-entered
				time.Sleep(tRes) // the activity comes a tick after the decision
				activeAt := time.Since(start)
				if err := tc.active(c, client); err != nil {
					t.Fatalf("activity: %v", err)
				}
				close(release)
				synctest.Wait() // OnIdle has returned Close
				if got := c.state.Load(); got != stateTracked {
					t.Fatalf("state %d after OnIdle returned Close on an active connection, want tracked (%d)", got, stateTracked)
				}
				if st := l.Stats(); st.Closed != 0 || st.Open != 1 {
					t.Fatalf("Stats %+v, want 0 closed, 1 open", st)
				}
				// Re-armed: idle again from the activity, it is reported and,
				// OnIdle now returning Close at once, reaped.
				err, at := waitReaped(c, start)
				if !errors.Is(err, ErrIdle) {
					t.Fatalf("Read after the connection went idle again: %v, want ErrIdle", err)
				}
				if at < activeAt+tT || at > activeAt+tT+2*tRes {
					t.Errorf("reaped at %v, want within [%v, %v]", at, activeAt+tT, activeAt+tT+2*tRes)
				}
				if st := l.Stats(); st.ReapedIdle != 1 || st.Events != 2 {
					t.Errorf("Stats %+v, want 1 reaped after 2 events", st)
				}
			})
		})
	}
}

// TestReapRecheckedWithoutOnIdle: the reaper goroutines (no OnIdle) apply
// the same recheck: a verdict whose stamps are no longer current, or whose
// connection was paused, closes nothing.
func TestReapRecheckedWithoutOnIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
		defer l.Close()
		c, client := pair(t, l, pl)
		defer client.Close()
		time.Sleep(tRes)
		stale := verdict{Event: Event{Conn: c, Reason: ReasonIdle}, rstamp: c.rstamp.Load(), wstamp: c.wstamp.Load()}
		time.Sleep(tRes)
		go client.Write([]byte("x"))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		if c.reap(stale) {
			t.Fatal("a verdict older than the last Read closed the connection")
		}
		c.Pause()
		fresh := verdict{Event: Event{Conn: c, Reason: ReasonIdle}, rstamp: c.rstamp.Load(), wstamp: c.wstamp.Load()}
		if c.reap(fresh) {
			t.Fatal("a paused connection was reaped")
		}
		c.Resume()
		fresh = verdict{Event: Event{Conn: c, Reason: ReasonIdle}, rstamp: c.rstamp.Load(), wstamp: c.wstamp.Load()}
		if !c.reap(fresh) {
			t.Fatal("an unchanged connection was not reaped")
		}
		if st := l.Stats(); st.ReapedIdle != 1 || st.Closed != 1 || st.Open != 0 {
			t.Errorf("Stats %+v, want 1 reaped", st)
		}
	})
}

// TestReapCalledOffRearms: a reaper goroutine that calls a reap off
// re-arms the connection's timer (the owner left it unarmed when it queued
// the reap), so the connection is still reaped once it is idle for a whole
// timeout.
func TestReapCalledOffRearms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
		defer l.Close()
		c, client := pair(t, l, pl)
		defer client.Close()
		time.Sleep(tRes)
		stale := verdict{Event: Event{Conn: c, Reason: ReasonIdle}, rstamp: c.rstamp.Load(), wstamp: c.wstamp.Load()}
		time.Sleep(tRes)
		c.Touch()
		touched := time.Since(start)
		// As the owner does when it queues a reap: the timer is unarmed.
		l.tr.sched.Cancel(&c.timer)
		l.tr.queueReap(stale)
		c.SetReadDeadline(start.Add(10 * tT)) // if not re-armed, it is never reaped
		err, at := waitReaped(c, start)
		if !errors.Is(err, ErrIdle) {
			t.Fatalf("Read: %v, want ErrIdle", err)
		}
		if at < touched+tT || at > touched+tT+2*tRes {
			t.Errorf("reaped at %v, want within [%v, %v]", at, touched+tT, touched+tT+2*tRes)
		}
		if st := l.Stats(); st.ReapedIdle != 1 || st.Events != 2 {
			t.Errorf("Stats %+v, want 1 reaped after 2 events (one called off)", st)
		}
	})
}

// TestReapRacingRelease: a reap decided before Release (or a hijack) and
// landing after it leaves the connection alone: it stays open, is not
// counted as reaped, and its errors are its own, not *IdleError.
func TestReapRacingRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered := make(chan Event, 1)
		release := make(chan struct{})
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes, OnIdle: blockingOnIdle(entered, release)})
		defer l.Close()
		c, client := pair(t, l, pl)
		<-entered
		c.Release()
		close(release)
		synctest.Wait()
		if st := l.Stats(); st.Released != 1 || st.Closed != 0 || st.ReapedIdle != 0 {
			t.Errorf("Stats %+v, want 1 released, 0 closed, 0 reaped", st)
		}
		go client.Write([]byte("x"))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			t.Fatalf("Read on the released connection: %v", err)
		}
		client.Close()
		_, err := c.Read(make([]byte, 1))
		if err != io.EOF {
			t.Errorf("Read after the peer closed: %v, want io.EOF", err)
		}
		c.Close()
	})
}

// TestIdleErrorUnwrapsBoth: the error of I/O on a reaped connection is
// both ErrIdle and what the wrapped connection returned.
func TestIdleErrorUnwrapsBoth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
		defer l.Close()
		c, client := pair(t, l, pl)
		defer client.Close()
		err, _ := waitReaped(c, time.Now())
		var ie *IdleError
		if !errors.As(err, &ie) || !errors.Is(err, ErrIdle) || !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("Read after reap: %v, want an *IdleError that is ErrIdle and io.ErrClosedPipe", err)
		}
		if got := (&IdleError{Op: "read", Reason: ReasonIdle}).Unwrap(); len(got) != 1 || got[0] != ErrIdle {
			t.Errorf("Unwrap without Err = %v, want [ErrIdle]", got)
		}
	})
}

// TestDirectionalReapNotCalledOffByOtherDirection: the recheck before a
// reap looks only at the activity that restarts the expired timeout. A
// connection found write-idle is closed even if it was read from since
// (WriteTimeout applies "whatever it reads"), and one found read-idle even
// if it was written to; an idle verdict is called off by either. Before,
// any Read or Write called every reap off, and the timeout ran again
// from the old activity, so a connection read from steadily (every tick)
// but never written to was never reaped for WriteTimeout.
func TestDirectionalReapNotCalledOffByOtherDirection(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		reason   Reason
		read     bool // the activity after the verdict: a Read, else a Write
		wantReap bool
	}{
		{"write verdict, read since", Config{WriteTimeout: tT, Resolution: tRes}, ReasonWrite, true, true},
		{"write verdict, written since", Config{WriteTimeout: tT, Resolution: tRes}, ReasonWrite, false, false},
		{"read verdict, written since", Config{ReadTimeout: tT, Resolution: tRes}, ReasonRead, false, true},
		{"read verdict, read since", Config{ReadTimeout: tT, Resolution: tRes}, ReasonRead, true, false},
		{"idle verdict, read since", Config{IdleTimeout: tT, Resolution: tRes}, ReasonIdle, true, false},
		{"idle verdict, written since", Config{IdleTimeout: tT, Resolution: tRes}, ReasonIdle, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, pl := newPipeServer(t, tc.cfg)
				defer l.Close()
				c, client := pair(t, l, pl)
				defer client.Close()
				time.Sleep(tRes)
				v := verdict{Event: Event{Conn: c, Reason: tc.reason}, rstamp: c.rstamp.Load(), wstamp: c.wstamp.Load()}
				time.Sleep(tRes)
				if tc.read {
					go client.Write([]byte("x"))
					if _, err := c.Read(make([]byte, 1)); err != nil {
						t.Fatal(err)
					}
				} else {
					go io.ReadFull(client, make([]byte, 1))
					if _, err := c.Write([]byte("x")); err != nil {
						t.Fatal(err)
					}
				}
				if got := c.reap(v); got != tc.wantReap {
					t.Errorf("reap = %v, want %v", got, tc.wantReap)
				}
			})
		})
	}
}
