package idletimeout

import (
	"errors"
	"math"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// TestWrapNil: wrapping a nil connection is an error up front, not a panic
// in the reaper later.
func TestWrapNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, cfg := range []Config{{}, {IdleTimeout: tT, Resolution: tRes}} {
			if c, err := Wrap(nil, cfg); err == nil || c != nil {
				t.Errorf("Wrap(nil, %+v) = %v, %v; want an error", cfg, c, err)
			}
			l, _ := newPipeServer(t, cfg)
			if c, err := l.Wrap(nil); err == nil || c != nil {
				t.Errorf("Listener.Wrap(nil) with %+v = %v, %v; want an error", cfg, c, err)
			}
			time.Sleep(3 * tT) // nothing was tracked, so nothing is reaped
			if st := l.Stats(); st.Wrapped != 0 || st.Open != 0 || st.Events != 0 {
				t.Errorf("Stats %+v, want nothing wrapped", st)
			}
			l.Close()
		}
	})
}

// TestZeroConfigWrapAfterClose: Listener.Wrap after Close fails with
// net.ErrClosed, as documented, also when the Config has no timeout (and
// so no wheel whose Stop would refuse it).
func TestZeroConfigWrapAfterClose(t *testing.T) {
	for _, cfg := range []Config{{}, {IdleTimeout: tT}} {
		l, _ := newPipeServer(t, cfg)
		l.Close()
		a, b := net.Pipe()
		if c, err := l.Wrap(a); !errors.Is(err, net.ErrClosed) || c != nil {
			t.Errorf("Wrap after Close with %+v = %v, %v; want net.ErrClosed", cfg, c, err)
		}
		a.Close()
		b.Close()
	}
}

// TestHugeTimeoutsNeverReap: a timeout of math.MaxInt64 (or close to it)
// is valid and means practically never: no deadline arithmetic wraps to
// the past, so the connection stays open, while a shorter timeout beside
// it still works.
func TestHugeTimeoutsNeverReap(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"idle", Config{IdleTimeout: math.MaxInt64}},
		{"near max", Config{IdleTimeout: math.MaxInt64 - 1}},
		{"read and write", Config{ReadTimeout: math.MaxInt64, WriteTimeout: math.MaxInt64}},
		{"explicit resolution", Config{IdleTimeout: math.MaxInt64, Resolution: maxAnyResolution}},
		{"OnIdle keep", Config{IdleTimeout: math.MaxInt64, OnIdle: func(Event) Action { return Keep }}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, pl := newPipeServer(t, tc.cfg)
				defer l.Close()
				c, client := pair(t, l, pl)
				defer client.Close()
				w, err := Wrap(nopConn{}, tc.cfg)
				if err != nil {
					t.Fatalf("Wrap: %v", err)
				}
				time.Sleep(10 * 365 * 24 * time.Hour)
				if c.state.Load() != stateTracked || w.state.Load() != stateTracked {
					t.Errorf("states %d, %d after 10 years, want tracked (%d)", c.state.Load(), w.state.Load(), stateTracked)
				}
				if st := l.Stats(); st.Events != 0 || st.Closed != 0 {
					t.Errorf("Stats %+v, want no event", st)
				}
				c.Close()
				w.Close()
			})
		})
	}
	t.Run("with a shorter timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			const read = 48 * time.Hour // the shortest allowed beside MaxInt64 is about 39h
			l, pl := newPipeServer(t, Config{IdleTimeout: math.MaxInt64, ReadTimeout: read})
			defer l.Close()
			c, client := pair(t, l, pl)
			defer client.Close()
			drain(client)
			go func() {
				for range 100 {
					time.Sleep(time.Hour) // writes do not count for ReadTimeout
					c.Write([]byte("x"))
				}
			}()
			err, at := waitReaped(c, start)
			var ie *IdleError
			if !errors.As(err, &ie) || ie.Reason != ReasonRead {
				t.Fatalf("Read: %v, want an *IdleError for the read timeout", err)
			}
			if res := maxAnyResolution; at < read || at > read+2*res {
				t.Errorf("reaped at %v, want within [%v, %v]", at, read, read+2*res)
			}
		})
	})
}
