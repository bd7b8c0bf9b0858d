package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	robfig "github.com/robfig/cron/v3"

	"github.com/ttlkit/ttlkit/jobs"
)

// A jobSched is one job scheduler under test. Jobs are added with once
// (one run at the wall-clock time at, which is delay after the caller's
// reading of the clock) or cron; start makes the scheduler run. The
// benchmarks start a scheduler before adding, except one with
// addBeforeStart: robfig/cron re-sorts every entry on each addition while
// running, so adding 100k jobs to a running one takes minutes.
type jobSched interface {
	once(id string, at time.Time, delay time.Duration, fn func()) error
	cron(id, spec string, fn func()) error
	start()
	// sync returns once the jobs added so far are armed.
	sync()
	close()
}

type jobImpl struct {
	name           string
	new            func() (jobSched, error)
	addBeforeStart bool
	// maxOneShot caps the one-shot jobs of BenchmarkJobsOneShot and
	// BenchmarkJobsBurst (0: no cap). gocron v2.21.2 hangs when a one-time
	// job's start has passed before its scheduler goroutine takes the job
	// (selectStart and selectNewJob loop on next.Before(now)), which
	// happens once adding takes longer than the jobs' lead time: at 100k
	// jobs, added before Start or while running, it never starts them.
	maxOneShot int
}

var jobImpls = []jobImpl{
	{"ttlkit", newTTLJobs, false, 0},
	{"gocron", newGocron, false, 10_000},
	{"robfig", newRobfig, true, 0},
}

// oneShots returns how many one-shot jobs im gets.
func (im jobImpl) oneShots() int {
	if im.maxOneShot > 0 {
		return min(jobsOneShot(), im.maxOneShot)
	}
	return jobsOneShot()
}

// begin makes a scheduler of im and starts it unless im adds before
// starting; the caller calls end after adding.
func (im jobImpl) begin(b *testing.B) jobSched {
	b.Helper()
	s, err := im.new()
	if err != nil {
		b.Fatal(err)
	}
	if !im.addBeforeStart {
		s.start()
	}
	return s
}

// end starts s if begin did not.
func (im jobImpl) end(s jobSched) {
	if im.addBeforeStart {
		s.start()
	}
}

// ttlkit: jobs.Scheduler with its defaults (1 ms wheel, 8×GOMAXPROCS
// workers).
type ttlJobs struct {
	s     *jobs.Scheduler
	every jobs.Schedule
}

func newTTLJobs() (jobSched, error) {
	s, err := jobs.New(jobs.Options{})
	if err != nil {
		return nil, err
	}
	return &ttlJobs{s: s}, nil
}

func (t *ttlJobs) once(id string, _ time.Time, delay time.Duration, fn func()) error {
	return t.s.Add(id, jobs.After(delay), func(context.Context, jobs.Run) error { fn(); return nil })
}

func (t *ttlJobs) cron(id, spec string, fn func()) error {
	if t.every == nil || fmt.Sprint(t.every) != spec {
		c, err := jobs.Cron(spec)
		if err != nil {
			return err
		}
		t.every = c
	}
	return t.s.Add(id, t.every, func(context.Context, jobs.Run) error { fn(); return nil })
}

func (t *ttlJobs) start() {}
func (t *ttlJobs) sync()  { t.s.Stats() }
func (t *ttlJobs) close() { _ = t.s.Shutdown(context.Background()) }

// gocron v2: one time.AfterFunc per job; runs on goroutines of its own.
type gocronJobs struct{ s gocron.Scheduler }

func newGocron() (jobSched, error) {
	s, err := gocron.NewScheduler()
	if err != nil {
		return nil, err
	}
	return &gocronJobs{s: s}, nil
}

func (g *gocronJobs) once(_ string, at time.Time, _ time.Duration, fn func()) error {
	_, err := g.s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartDateTime(at)), gocron.NewTask(fn))
	return err
}

func (g *gocronJobs) cron(_, spec string, fn func()) error {
	_, err := g.s.NewJob(gocron.CronJob(spec, true), gocron.NewTask(fn))
	return err
}

func (g *gocronJobs) start() { g.s.Start() }
func (g *gocronJobs) sync()  {}
func (g *gocronJobs) close() { _ = g.s.Shutdown() }

// robfig/cron v3: one sorted slice of entries, a goroutine per run.
type robfigJobs struct {
	c      *robfig.Cron
	parser robfig.Parser
	sched  robfig.Schedule
	spec   string
}

func newRobfig() (jobSched, error) {
	p := robfig.NewParser(robfig.Second | robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)
	return &robfigJobs{c: robfig.New(robfig.WithParser(p)), parser: p}, nil
}

// robfigOnce fires once, at at: robfig/cron never runs an entry whose
// next activation is the zero time.
type robfigOnce struct{ at time.Time }

func (o robfigOnce) Next(t time.Time) time.Time {
	if t.Before(o.at) {
		return o.at
	}
	return time.Time{}
}

func (r *robfigJobs) once(_ string, at time.Time, _ time.Duration, fn func()) error {
	r.c.Schedule(robfigOnce{at}, robfig.FuncJob(fn))
	return nil
}

func (r *robfigJobs) cron(_, spec string, fn func()) error {
	if r.sched == nil || r.spec != spec {
		s, err := r.parser.Parse(spec)
		if err != nil {
			return err
		}
		r.sched, r.spec = s, spec
	}
	r.c.Schedule(r.sched, robfig.FuncJob(fn))
	return nil
}

func (r *robfigJobs) start() { r.c.Start() }

// sync waits for the run loop: Entries is answered by it once it has
// taken every addition sent before.
func (r *robfigJobs) sync()  { r.c.Entries() }
func (r *robfigJobs) close() { <-r.c.Stop().Done() }
