package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
)

// capture is a slog.Handler that keeps every record as one line:
// "LEVEL msg k=v k=v ...", attributes in order, times dropped.
type capture struct {
	mu    sync.Mutex
	lines []string
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *capture) WithGroup(string) slog.Handler            { return c }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "scheduled" {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
		return true
	})
	c.mu.Lock()
	c.lines = append(c.lines, b.String())
	c.mu.Unlock()
	return nil
}

func TestLogRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h capture
		s, err := jobs.New(jobs.Options{Hooks: jobs.Hooks{OnFinish: jobs.LogRuns(slog.New(&h))}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown(context.Background())
		s.Add("ok", jobs.After(time.Second), func(context.Context, jobs.Run) error {
			time.Sleep(3 * time.Millisecond)
			return nil
		}, jobs.JobOptions{Name: "fine"})
		s.Add("bad", jobs.After(2*time.Second), func(context.Context, jobs.Run) error {
			return errors.New("down")
		}, jobs.JobOptions{Retry: jobs.Retry{Attempts: 2, Base: time.Second}})
		time.Sleep(time.Minute)
		synctest.Wait()
		want := []string{
			"INFO jobs: run id=ok name=fine attempt=1 outcome=succeeded lateness=0s duration=3ms",
			"WARN jobs: run id=bad attempt=1 outcome=retrying lateness=0s duration=0s error=down",
			"ERROR jobs: run id=bad attempt=2 outcome=failed lateness=0s duration=0s error=down",
		}
		if !slices.Equal(h.lines, want) {
			t.Errorf("records:\n%s\nwant:\n%s", strings.Join(h.lines, "\n"), strings.Join(want, "\n"))
		}
	})
}

// TestLogRunsLevelFilter: a logger whose level excludes Info logs only
// the failures.
func TestLogRunsLevelFilter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b strings.Builder
		var mu sync.Mutex
		logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &b}, &slog.HandlerOptions{Level: slog.LevelWarn}))
		s, err := jobs.New(jobs.Options{Hooks: jobs.Hooks{OnFinish: jobs.LogRuns(logger)}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown(context.Background())
		s.Add("ok", jobs.After(time.Second), func(context.Context, jobs.Run) error { return nil })
		s.Add("bad", jobs.After(time.Second), func(context.Context, jobs.Run) error { return errors.New("down") })
		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		out := b.String()
		mu.Unlock()
		if strings.Count(out, "\n") != 1 || !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "id=bad") {
			t.Errorf("log = %q, want one ERROR record for bad", out)
		}
	})
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
