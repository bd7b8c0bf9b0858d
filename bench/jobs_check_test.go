package bench

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestJobAdaptersRunOnce: every job scheduler adapter runs a one-shot job
// once, not before its time, whether added before or after start.
func TestJobAdaptersRunOnce(t *testing.T) {
	for _, im := range jobImpls {
		t.Run(im.name, func(t *testing.T) {
			s, err := im.new()
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			if !im.addBeforeStart {
				s.start()
			}
			var runs atomic.Int32
			ran := make(chan time.Time, 2)
			const delay = 20 * time.Millisecond
			before := time.Now()
			if err := s.once("j", before.Add(delay), delay, func() {
				runs.Add(1)
				ran <- time.Now()
			}); err != nil {
				t.Fatal(err)
			}
			if im.addBeforeStart {
				s.start()
			}
			s.sync()
			at := <-ran
			if early := before.Add(delay).Sub(at); early > time.Millisecond {
				// gocron and robfig read the wall clock; allow for its
				// granularity, never for a real early run.
				t.Fatalf("ran %v early", early)
			}
			s.close()
			if n := runs.Load(); n != 1 {
				t.Fatalf("%d runs, want 1", n)
			}
		})
	}
}
