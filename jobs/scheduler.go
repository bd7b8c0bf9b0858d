package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttlkit/ttlkit/internal/pool"
	"github.com/ttlkit/ttlkit/internal/table"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// Scheduler runs jobs on their schedules. All its methods are safe for
// concurrent use, from any goroutine, including from inside a Func or a
// hook (Shutdown excepted: called from a run, it would wait for itself).
type Scheduler struct {
	sched *timingwheel.Scheduler[*job]
	pool  *pool.Pool[task, execution]
	def   policy
	hooks Hooks
	mw    []func(Func) Func
	loc   *time.Location

	jobs    jobTable
	closing atomic.Bool // set once, by Shutdown, before it empties jobs

	clock clock
	bg    sync.WaitGroup // wall-clock re-arming goroutines

	// pass is the wall clock read for the wheel's tick (see passWall);
	// the owner's only.
	pass struct {
		tick, wall time.Time
		lag        time.Duration
		valid      bool
	}

	st counters
}

// job is one scheduled job. Everything below mu is guarded by it; the
// fields above are set before the job is published and never change. A
// job is 144 bytes (the fields are ordered to leave no padding); one with
// retries armed or an occurrence waiting holds a busy record besides.
//
// Every timer of the wheel holds a job, or nil for the wall-clock watcher:
// tw is the job's occurrence timer, and a timer of the job that is not tw
// is one of its retries (see fire).
type job struct {
	tw   timingwheel.Timer[*job]
	id   string
	fn   Func
	when Schedule
	pol  *policy
	plan plan

	done   bool // cancelled, replaced or ended: no future occurrence
	queued bool // an occurrence waits under OverlapQueue (busy.waiting)
	// skipPending: an OnSkip report of this job is in the pool.
	skipPending bool
	mu          sync.Mutex
	gen         uint32     // bumped when the job is cancelled or replaced
	active      int32      // occurrences queued, running or waiting for a retry
	runs        int32      // scheduled occurrences started or queued (for Limit)
	next        time.Time  // the armed occurrence; zero when none is armed
	execs       *execution // running attempts: their workers' records
	busy        *busy      // nil unless a retry is armed or a run waits
}

// busy is the part of a job's state that exists only while a retry is
// armed or an occurrence waits: rare, so kept out of the job.
type busy struct {
	retries *retry    // armed retries
	waiting time.Time // due time of the occurrence waiting (queued)
}

// activity returns j's busy record, making it if need be. Locked.
func (j *job) activity() *busy {
	if j.busy == nil {
		j.busy = &busy{}
	}
	return j.busy
}

// tidy drops j's busy record once nothing in it is in use. Locked.
func (j *job) tidy() {
	if b := j.busy; b != nil && b.retries == nil && !j.queued {
		j.busy = nil
	}
}

// execution is a worker's record of the attempt it runs, linked into the
// attempt's job (execs) while it runs so that Cancel can cancel its
// context. Each worker has one, reused from attempt to attempt; its fields
// are guarded by the lock of the job it is linked into.
type execution struct {
	cancel context.CancelCauseFunc
	next   *execution
}

// retry is an armed retry of one occurrence; its timer's Value is its job.
type retry struct {
	tw      timingwheel.Timer[*job]
	gen     uint32
	attempt int32
	due     time.Time
	first   time.Time
	next    *retry
}

// New returns a started Scheduler configured by opts (see Options for the
// zero values). It returns an error wrapping ErrInvalid for invalid
// options.
func New(opts Options) (*Scheduler, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{
		def:   resolve(&opts.Defaults),
		hooks: opts.Hooks,
		mw:    append([]func(Func) Func(nil), opts.Middleware...),
		loc:   opts.Location,
	}
	s.jobs.init()
	s.def.name = "" // Defaults.Name is ignored
	s.st.init(opts.Workers)
	s.pool = pool.New(pool.Config[task, execution]{Workers: opts.Workers, Limit: opts.Queue, Run: s.run})
	sched, err := timingwheel.NewScheduler(opts.Resolution, wheelSlots, s.fire,
		timingwheel.WithPanicHandler(func(p *timingwheel.PanicError) {
			// fire runs no user code but Schedule.Next, whose panics
			// strictNext recovers, so this is a bug here (or a Goexit in
			// Next); the wheel goes on.
			slog.Error("jobs: wheel callback panicked", "panic", p.Value, "stack", string(p.Stack))
		}))
	if err != nil {
		return nil, err // not reachable with validated options
	}
	s.sched = sched
	return s, nil
}

// Add schedules fn to run on when's occurrences under the ID id, with the
// Scheduler's default options overridden by opts' non-zero fields (at most
// one JobOptions). It returns ErrDuplicate if id is already scheduled,
// ErrClosed once Shutdown has begun, and an error wrapping ErrInvalid for
// an empty id, a nil fn or when, a schedule with no occurrence (After or
// Every with d <= 0, At(zero Time), a custom Schedule whose Next returns
// the zero Time), invalid options, or a Middleware that returns a nil
// Func for fn. O(1) plus the first call of a
// custom Schedule's Next; the job costs about 170 bytes while pending (with its
// table slot; the ID's bytes aside).
func (s *Scheduler) Add(id string, when Schedule, fn Func, opts ...JobOptions) error {
	return s.add(id, when, fn, opts, false)
}

// Replace is Add for an ID that may already be scheduled: the old job, if
// any, is cancelled as by Cancel (its running attempts' contexts are
// cancelled and it never runs again; OnCancel reports it) and the new one
// takes its ID, in one step, so Trigger, Info and Cancel see either the
// old job or the new one. A running attempt of the old job may still be
// finishing while the new one starts. On error nothing changes.
func (s *Scheduler) Replace(id string, when Schedule, fn Func, opts ...JobOptions) error {
	return s.add(id, when, fn, opts, true)
}

func (s *Scheduler) add(id string, when Schedule, fn Func, opts []JobOptions, replace bool) error {
	j, err := s.newJob(id, when, fn, opts)
	if err != nil {
		return err
	}
	now := time.Now()
	if j.next, err = s.first(j, now); err != nil {
		return err
	}
	old, err := s.publish(j, now, replace)
	if err != nil {
		return err
	}
	if old != nil {
		// With no job locked: OnCancel may call the Scheduler.
		s.kill(old, ErrCanceled)
	}
	return nil
}

// publish puts j in the table and arms it, with j locked so that a
// racing Cancel finds it armed; it returns the job j replaces, if any.
func (s *Scheduler) publish(j *job, now time.Time, replace bool) (old *job, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if old, err = s.jobs.insert(j, replace, &s.closing); err != nil {
		return nil, err
	}
	s.st.added.Add(1)
	if j.plan == planWall {
		s.watchClock(1)
	}
	if err := s.arm(j, now); err != nil {
		// Shutdown stopped the wheel after the check above.
		s.retireLocked(j)
		return nil, ErrClosed
	}
	return old, nil
}

func (s *Scheduler) newJob(id string, when Schedule, fn Func, opts []JobOptions) (*job, error) {
	switch {
	case id == "":
		return nil, invalid("empty job ID")
	case fn == nil:
		return nil, invalid("job %q: nil Func", id)
	case len(opts) > 1:
		return nil, invalid("job %q: %d JobOptions, want at most 1", id, len(opts))
	}
	p, err := planOf(when, "")
	if err != nil {
		_, err = planOf(when, where(id)) // the same error, naming the job
		return nil, err
	}
	j := &job{id: id, when: when, plan: p, pol: &s.def}
	if len(opts) == 1 {
		if err := opts[0].validate(""); err != nil {
			return nil, opts[0].validate(where(id))
		}
		pol := s.def.override(&opts[0])
		j.pol = &pol
	}
	if z, ok := when.(zoned); ok {
		j.when = z.in(s.loc)
	}
	j.fn = fn
	for i := len(s.mw) - 1; i >= 0; i-- {
		if j.fn = s.mw[i](j.fn); j.fn == nil {
			return nil, invalid("job %q: Options.Middleware[%d] returned a nil Func", id, i)
		}
	}
	j.tw.Value = j
	return j, nil
}

// where prefixes the errors about the job id; made only for an error.
func where(id string) string { return fmt.Sprintf("job %q: ", id) }

// first returns j's first occurrence.
func (s *Scheduler) first(j *job, now time.Time) (time.Time, error) {
	switch j.plan {
	case planAfter, planEvery:
		return now.Add(period(j.when)), nil
	}
	if a, ok := j.when.(at); ok {
		return a.t, nil // At runs even if t has passed
	}
	next := j.when.Next(s.wallAt(now))
	if next.IsZero() {
		return time.Time{}, invalid("job %q: schedule %v has no occurrence after %v", j.id, j.when, s.wallAt(now))
	}
	return next, nil
}

// period returns the d of After(d) or Every(d), whole: a delay past the
// wheel's horizon is re-armed for the rest when the wheel fires it
// (fireJob), so it is never cut short.
func period(w Schedule) time.Duration {
	switch w := w.(type) {
	case after:
		return w.d
	case every:
		return w.d
	}
	return 0
}

// arm schedules j's timer for j.next; now is a time.Now reading. Locked.
func (s *Scheduler) arm(j *job, now time.Time) error {
	at := j.next
	if j.plan == planWall {
		at = now.Add(j.next.Sub(s.wallAt(now)))
	}
	return s.sched.ScheduleAt(&j.tw, at)
}

// Cancel removes the job with the ID id and reports whether there was one.
// The job never runs again: its armed occurrence and retries are dropped,
// a queued run does not start, and the contexts of its running attempts
// are cancelled with the cause ErrCanceled (Cancel does not wait for them
// to return). OnCancel is called on the calling goroutine. O(1) plus the
// job's running attempts and armed retries.
func (s *Scheduler) Cancel(id string) bool {
	j := s.jobs.remove(id)
	if j == nil {
		return false
	}
	s.kill(j, ErrCanceled)
	return true
}

// kill ends j, already out of the table: no future occurrence, retry or
// queued run; running attempts are cancelled with cause.
func (s *Scheduler) kill(j *job, cause error) {
	j.mu.Lock()
	j.gen++
	for x := j.execs; x != nil; x = x.next {
		x.cancel(cause)
	}
	if b := j.busy; b != nil {
		for r := b.retries; r != nil; r = r.next {
			_ = s.sched.Cancel(&r.tw)
		}
		b.retries = nil
	}
	if !j.next.IsZero() {
		_ = s.sched.Cancel(&j.tw)
		j.next = time.Time{}
	}
	j.queued = false
	j.tidy()
	wasDone := j.done
	s.retireLocked(j)
	j.mu.Unlock()
	if !wasDone {
		s.st.canceled.Add(1)
		callHook("OnCancel", s.hooks.OnCancel, Event{Run: Run{ID: j.id, Name: j.pol.name}, Outcome: Removed})
	}
}

// retireLocked marks j done and takes it out of the table if it is still
// there. Locked; takes the table lock.
func (s *Scheduler) retireLocked(j *job) {
	if j.done {
		return
	}
	j.done = true
	if j.plan == planWall {
		s.watchClock(-1)
	}
	s.jobs.removeJob(j)
}

// Trigger starts an extra occurrence of the job with the ID id now, out of
// its schedule, which it does not change; it does not count toward
// Limit. The job's overlap policy applies: it returns ErrBusy if the
// occurrence is turned away, nil once it is queued for a worker (or
// waiting under OverlapQueue). It returns ErrNotFound for an unknown id,
// ErrFull when the run queue is full, and ErrClosed after Shutdown.
func (s *Scheduler) Trigger(id string) error {
	if s.closing.Load() {
		return ErrClosed
	}
	j := s.jobs.get(id)
	if j == nil {
		return ErrNotFound
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.done {
		return ErrNotFound
	}
	switch s.offer(j, time.Now(), false) {
	case offerFull:
		if s.closing.Load() {
			return ErrClosed
		}
		return ErrFull
	case offerSkipped:
		return ErrBusy
	}
	return nil
}

// pending takes out of the jobs of all, once the wheel has stopped, the
// runs that can no longer start: armed retries and occurrences waiting
// under OverlapQueue (endLocked starts none once closing is set). A job
// that left the table has none: Cancel and Replace drop them, and a job
// ends only with nothing active.
func pending(all []*table.Table[string, job]) []task {
	var out []task
	for _, t := range all {
		t.All(func(j *job) bool {
			j.mu.Lock()
			if b := j.busy; b != nil {
				for r := b.retries; r != nil; r = r.next {
					out = append(out, task{j: j, gen: r.gen, attempt: r.attempt, due: r.due, first: r.first})
					j.active--
				}
				b.retries = nil
				if j.queued {
					out = append(out, task{j: j, gen: j.gen, attempt: 1, due: b.waiting, first: b.waiting})
					j.queued = false // not counted in active
				}
				j.tidy()
			}
			j.mu.Unlock()
			return true
		})
	}
	return out
}

// drop counts and reports, on the goroutine that called Shutdown, the
// tasks that Shutdown took from the pool's queue and from the jobs: runs
// that never start (Stats.Dropped, OnSkip with Outcome Dropped) and OnSkip
// reports of skipped occurrences still to deliver. A queued run of a job
// cancelled or replaced since is neither: Cancel ended it.
func (s *Scheduler) drop(ts []task) {
	ts = slices.DeleteFunc(ts, func(t task) bool {
		if t.skip {
			return false
		}
		t.j.mu.Lock()
		defer t.j.mu.Unlock()
		return t.j.gen != t.gen
	})
	for _, t := range ts {
		if !t.skip {
			s.st.dropped.Add(1)
		}
	}
	for _, t := range ts {
		callHook("OnSkip", s.hooks.OnSkip, s.dropEvent(t))
	}
}

// JobInfo describes a scheduled job.
type JobInfo struct {
	// ID and Name are the job's.
	ID, Name string
	// Next is when the next scheduled occurrence is due; zero when none
	// is armed (the job waits for its active occurrence to end, or has no
	// more).
	Next time.Time
	// Active counts the occurrences queued, running or waiting for a retry.
	Active int
	// Runs counts the scheduled occurrences started so far (saturating
	// at 2^31-1).
	Runs int
}

// Info returns the job with the ID id, and false if there is none. A job
// is there from Add until Cancel, Replace, or the end of its last
// occurrence.
func (s *Scheduler) Info(id string) (JobInfo, bool) {
	j := s.jobs.get(id)
	if j == nil {
		return JobInfo{}, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return JobInfo{ID: j.id, Name: j.pol.name, Next: j.next, Active: int(j.active), Runs: int(j.runs)}, true
}

// Len returns the number of jobs scheduled: added and neither cancelled,
// replaced nor ended. O(1).
func (s *Scheduler) Len() int {
	return int(s.jobs.n.Load())
}

// Shutdown stops the Scheduler: Add, Replace and Trigger return ErrClosed
// from now on, no occurrence or retry fires any more, and runs that have
// not started (queued for a worker, armed as retries, waiting under
// OverlapQueue) are dropped: counted in Stats.Dropped and reported to
// OnSkip with Outcome Dropped, on the calling goroutine. It then waits for
// the running attempts to return, and returns nil once they have and every
// goroutine of the Scheduler has exited. If ctx ends first, it cancels the
// running attempts' contexts with the cause ErrShutdown and returns
// ctx.Err() without waiting further. Attempts that fail during Shutdown
// are not retried (outcome Canceled). A second call returns ErrClosed.
// Shutdown must not be called from a Func or a hook. It visits every job
// once: O(jobs) besides the wait.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	if s.closing.Swap(true) {
		return ErrClosed
	}
	// An Add that took its shard before detach reached it is in all; one
	// that takes it after sees closing.
	all := s.jobs.detach()
	s.sched.Stop()
	s.drop(append(s.pool.Close(), pending(all)...))
	done := make(chan struct{})
	go func() {
		<-s.pool.Idle()
		s.bg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	// Every attempt still running belongs to a job of the table: one that
	// left it (cancelled, replaced, or ended with nothing active) had its
	// attempts cancelled already, or had none.
	for _, t := range all {
		t.All(func(j *job) bool {
			j.mu.Lock()
			for x := j.execs; x != nil; x = x.next {
				x.cancel(ErrShutdown)
			}
			j.mu.Unlock()
			return true
		})
	}
	return ctx.Err()
}
