package natsjobs

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

func TestRestartKeepsPendingJobs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	cfg := Config{Server: embedded.Server{StoreDir: dir}, Queues: []string{"q"}}
	c, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	now, later := size(300, 50_000), size(100, 50_000)
	batch := func(prefix string, n int, at time.Time) {
		jobs := make([]Job, n)
		for i := range jobs {
			jobs[i] = Job{Queue: "q", ID: fmt.Sprint(prefix, i)}
		}
		if err := c.EnqueueBatch(ctx, at, jobs...); err != nil {
			t.Fatal(err)
		}
	}
	batch("n", now, time.Time{})
	due := time.Now().Add(2*time.Second + time.Duration(later)*300*time.Microsecond)
	batch("l", later, due)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	c = open(t, cfg)
	t.Logf("reopened in %v", time.Since(start))
	if st, err := c.Stats(ctx, "q"); err != nil || st.Pending+st.Due != now+later {
		t.Errorf("Stats after restart = %+v, %v; want %d jobs Pending or Due", st, err, now+later)
	}
	runs := collect(t, c)
	start = time.Now()
	seen := map[string]int{}
	for range now + later {
		r := recv(t, runs, "run")
		seen[r.ID]++
		if strings.HasPrefix(r.ID, "l") && time.Now().Before(due) {
			t.Errorf("%s ran early", r.ID)
		}
	}
	if len(seen) != now+later {
		t.Errorf("%d distinct jobs ran, want %d", len(seen), now+later)
	}
	t.Logf("%d jobs ran in %v after the restart", now+later, time.Since(start))
}

func TestStoreDirLocked(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Server: embedded.Server{StoreDir: dir}, Queues: []string{"q"}}
	c := open(t, cfg)
	if _, err := Open(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open on a locked store: %v, want an in-use error", err)
	}
	c.Close()
	c2, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	c2.Close()
}

// A client of an external server fails fast while the server is down and
// its worker resumes by itself when it is back.
func TestOutageFailsFastAndWorkResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	srv := open(t, Config{Server: embedded.Server{StoreDir: dir, Listen: "127.0.0.1:0"}, Queues: []string{"q"}})
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	back := make(chan struct{}, 1)
	c := open(t, Config{URL: srv.URL(), Queues: []string{"q"},
		Options: []nats.Option{nats.ReconnectHandler(func(*nats.Conn) { back <- struct{}{} })}})
	runs := make(chan Run, 1000)
	stop := work(t, c, "q", func(ctx context.Context, r Run) error { runs <- r; return nil }, WorkOptions{Concurrency: 4})
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "before"}); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, runs, "run before the outage"); r.ID != "before" {
		t.Fatalf("ran %s, want before", r.ID)
	}

	srv.Close()
	err = c.Enqueue(ctx, Job{Queue: "q", ID: "during"})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Enqueue during the outage: %v, want ErrUnavailable", err)
	}
	if _, err := c.Stats(ctx, "q"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Stats during the outage: %v, want ErrUnavailable", err)
	}

	open(t, Config{Server: embedded.Server{StoreDir: dir, Listen: u.Host}, Queues: []string{"q"}})
	recv(t, back, "reconnection")
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "after"}); err != nil {
		t.Fatalf("Enqueue after the outage: %v", err)
	}
	if r := recv(t, runs, "run after the outage"); r.ID != "after" {
		t.Errorf("ran %s, want after", r.ID)
	}
	// Stopped and closed while the server is up: the cleanups would close
	// the restarted server first, and then the Work's stop waits Timeout
	// for its subscription's drain.
	stop()
	c.Close()
}

// The work stream keeps the shortest duplicate window: at start the server
// reads every message stored within the window (two minutes by default)
// to rebuild its table of message IDs, which none of its messages carry;
// with 100k jobs that was most of a restart.
func TestStreamsKeepNoDuplicateWindow(t *testing.T) {
	c := open(t, Config{})
	for _, name := range []string{workStream("q")} {
		s, err := c.js.Stream(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.Duplicates; got != noDedupe {
			t.Errorf("stream %s: duplicate window %v, want %v", name, got, noDedupe)
		}
	}
}

// TestCloseDuringOutageIsPrompt: Close of a client whose server is down
// does not wait for it. It once flushed the connection first, which waits
// (10 s by default) for a server that is not there.
func TestCloseDuringOutageIsPrompt(t *testing.T) {
	t.Parallel()
	srv := open(t, Config{Server: embedded.Server{Listen: "127.0.0.1:0"}, Queues: []string{"q"}})
	down := make(chan struct{}, 1)
	c, err := Open(context.Background(), Config{URL: srv.URL(), Queues: []string{"q"}, Timeout: time.Minute,
		Options: []nats.Option{nats.DisconnectErrHandler(func(*nats.Conn, error) { down <- struct{}{} })}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "j"}); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	recv(t, down, "disconnection")
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	// Far under the flush's 10 s and the client's Timeout: only a Close
	// that waits for the server misses it.
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close during an outage still waiting after 5 s")
	}
}
