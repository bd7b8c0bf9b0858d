package durable

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestSystems checks every adapter against its real server before any
// figure is taken from it: jobs due now and one due later each run exactly
// once, the later one not before its time, and Cancel reports a scheduled
// job once and then not again.
func TestSystems(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			e := im.open(t)
			ctx := context.Background()
			now := ids("n", 20)
			if err := e.sys.EnqueueBatch(ctx, now[:10], payloadAt(8, time.Time{})); err != nil {
				t.Fatal(err)
			}
			for _, id := range now[10:] {
				if err := e.sys.Enqueue(ctx, id, payloadAt(8, time.Time{})); err != nil {
					t.Fatal(err)
				}
			}
			due := time.Now().Add(time.Second)
			if err := e.sys.EnqueueAt(ctx, "later", due, payloadAt(8, due)); err != nil {
				t.Fatal(err)
			}
			if err := e.sys.EnqueueAt(ctx, "cancelled", due, payloadAt(8, due)); err != nil {
				t.Fatal(err)
			}
			if ok, err := e.sys.Cancel(ctx, "cancelled"); err != nil || !ok {
				t.Fatalf("Cancel of a scheduled job: got %v, %v, want true, nil", ok, err)
			}
			if ok, err := e.sys.Cancel(ctx, "cancelled"); err != nil || ok {
				t.Fatalf("second Cancel: got %v, %v, want false, nil", ok, err)
			}
			tl := newTally(21)
			var mu sync.Mutex
			var laterStart time.Time
			stop, err := e.sys.Work(ctx, 4, func(_ context.Context, id string, _ []byte) error {
				if id == "later" {
					mu.Lock()
					laterStart = time.Now()
					mu.Unlock()
				}
				tl.ran(id)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			if lost := tl.wait(time.Minute); lost != 0 {
				t.Fatalf("%d of 21 jobs not run within a minute", lost)
			}
			if k := tl.twice(); k != 0 {
				t.Errorf("%d jobs ran twice, want 0", k)
			}
			mu.Lock()
			if laterStart.Before(due) {
				t.Errorf("job due at %v started %v early", due, due.Sub(laterStart))
			}
			mu.Unlock()
			tl.mu.Lock()
			if n := tl.runs["cancelled"]; n != 0 {
				t.Errorf("cancelled job ran %d times", n)
			}
			tl.mu.Unlock()
		})
	}
}

// TestServerProcessTree pins what cpu-us/job and ServerMemory count for a
// server of many processes: PostgreSQL's backends make themselves process
// group leaders, so counting the server's process group missed them (river's
// B/job came out negative). Every backend a client opened is in the
// server's tree, and the server runs as this process's own child, so that
// it dies with the benchmark (through runuser, it outlived a killed one).
func TestServerProcessTree(t *testing.T) {
	s, dsn := startPostgres(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// Hold four connections, so that four backends exist.
	var conns []*pgxpool.Conn
	for range 4 {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	inTree := map[int]bool{}
	for _, p := range processTree(s.cmd.Process.Pid) {
		inTree[p.pid] = true
	}
	for _, c := range conns {
		pid := int(c.Conn().PgConn().PID())
		if !inTree[pid] {
			t.Errorf("backend %d is not in the server's process tree %v", pid, inTree)
		}
	}
	if ppid := ppidOf(t, s.cmd.Process.Pid); ppid != os.Getpid() {
		t.Errorf("the server's parent is %d, want this process %d (no runuser between them)", ppid, os.Getpid())
	}
}

func ppidOf(t *testing.T, pid int) int {
	t.Helper()
	for _, p := range processTree(pid) {
		if p.pid == pid {
			return p.ppid
		}
	}
	t.Fatalf("process %d not found", pid)
	return 0
}

// TestStartedAfterConfirmed pins Kill's after-confirm count on a hand-made
// runs log: a start after the job's confirmation counts once per job, a
// start before it does not, and a log without confirmations has no count.
func TestStartedAfterConfirmed(t *testing.T) {
	for _, tc := range []struct {
		name, log string
		want      int
		wantOK    bool
	}{
		{"rerun after confirm", "s a\nd a\nc a\ns a\nd a\ns a\n", 1, true},
		{"rerun before confirm", "s b\nd b\ns b\nd b\nc b\n", 0, true},
		{"two jobs", "s a\nc a\ns b\nc b\ns a\ns b\n", 2, true},
		{"no confirmations", "s a\nd a\ns a\n", 0, false},
		{"line cut by the kill", "s a\nc a\ns", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runs.log")
			if err := os.WriteFile(path, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			got, ok := startedAfterConfirmed(t, path)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got %d, %v, want %d, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
