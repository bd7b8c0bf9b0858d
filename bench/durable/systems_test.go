package durable

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs"
)

// A system is one durable job queue under test, connected to its server.
// Every job carries its due time in the first 8 bytes of its payload
// (Unix nanoseconds, 0 for "now"), so that every system's lateness is
// measured the same way.
type system interface {
	Enqueue(ctx context.Context, id string, payload []byte) error
	// EnqueueBatch stores jobs due now through the system's bulk call.
	EnqueueBatch(ctx context.Context, ids []string, payload []byte) error
	EnqueueAt(ctx context.Context, id string, at time.Time, payload []byte) error
	// Cancel removes a pending job; it reports whether it was there.
	Cancel(ctx context.Context, id string) (bool, error)
	// Work starts n workers running fn until stop is called; stop returns
	// once they have stopped.
	Work(ctx context.Context, n int, fn handler) (stop func(), err error)
	Close() error
}

type handler func(ctx context.Context, id string, payload []byte) error

const queueName = "bench"

// payloadAt is a payload of size bytes (at least 8) carrying due.
func payloadAt(size int, due time.Time) []byte {
	p := make([]byte, max(size, 8))
	if !due.IsZero() {
		binary.BigEndian.PutUint64(p, uint64(due.UnixNano()))
	}
	return p
}

// dueOf reads the due time back from a payload (zero for "now").
func dueOf(p []byte) time.Time {
	if len(p) < 8 {
		return time.Time{}
	}
	n := int64(binary.BigEndian.Uint64(p))
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// ---- natsjobs -------------------------------------------------------------

type natsSystem struct {
	c *natsjobs.Client
	// confirmed, if set, is called with the ID of each run whose success
	// the server confirmed (WorkOptions.Hooks.OnFinish, Succeeded).
	confirmed func(id string)
}

func openNATS(ctx context.Context, cfg natsjobs.Config) (*natsSystem, error) {
	cfg.Queues = []string{queueName}
	c, err := natsjobs.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &natsSystem{c: c}, nil
}

func (s *natsSystem) Enqueue(ctx context.Context, id string, p []byte) error {
	return s.c.Enqueue(ctx, natsjobs.Job{Queue: queueName, ID: id, Payload: p})
}

func (s *natsSystem) EnqueueBatch(ctx context.Context, ids []string, p []byte) error {
	batch := make([]natsjobs.Job, len(ids))
	for i, id := range ids {
		batch[i] = natsjobs.Job{Queue: queueName, ID: id, Payload: p}
	}
	return s.c.EnqueueBatch(ctx, time.Time{}, batch...)
}

// EnqueueAt: natsjobs refuses a time already past (ErrInvalid: "use
// Enqueue for now") where the peers run such a job at once; a workload
// whose enqueueing falls behind its schedule gets the peers' behaviour.
func (s *natsSystem) EnqueueAt(ctx context.Context, id string, at time.Time, p []byte) error {
	j := natsjobs.Job{Queue: queueName, ID: id, Payload: p}
	if !time.Now().Before(at) {
		return s.c.Enqueue(ctx, j)
	}
	err := s.c.EnqueueAt(ctx, j, at)
	if errors.Is(err, natsjobs.ErrInvalid) && !time.Now().Before(at) {
		return s.c.Enqueue(ctx, j) // at passed during the call
	}
	return err
}

func (s *natsSystem) Cancel(ctx context.Context, id string) (bool, error) {
	return s.c.Cancel(ctx, queueName, id)
}

func (s *natsSystem) Work(ctx context.Context, n int, fn handler) (func(), error) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.c.Work(wctx, queueName, func(ctx context.Context, r natsjobs.Run) error {
			return fn(ctx, r.ID, r.Payload)
		}, natsjobs.WorkOptions{Concurrency: n, Hooks: jobs.Hooks{OnFinish: func(ev jobs.Event) {
			if s.confirmed != nil && ev.Outcome == jobs.Succeeded {
				s.confirmed(ev.ID)
			}
		}}})
	}()
	return func() { cancel(); <-done }, nil
}

func (s *natsSystem) Close() error { return s.c.Close() }

// ---- asynq ----------------------------------------------------------------

type asynqSystem struct {
	addr string
	c    *asynq.Client
	in   *asynq.Inspector
}

func openAsynq(addr string) *asynqSystem {
	opt := asynq.RedisClientOpt{Addr: addr}
	return &asynqSystem{addr: addr, c: asynq.NewClient(opt), in: asynq.NewInspector(opt)}
}

func (s *asynqSystem) Enqueue(ctx context.Context, id string, p []byte) error {
	_, err := s.c.EnqueueContext(ctx, asynq.NewTask(queueName, p), asynq.TaskID(id), asynq.Queue(queueName))
	return err
}

// EnqueueBatch: asynq has no bulk enqueue; the batch's jobs go through
// Enqueue from 8 goroutines, its fastest way to store many.
func (s *asynqSystem) EnqueueBatch(ctx context.Context, ids []string, p []byte) error {
	return fanOut(ctx, ids, 8, func(id string) error { return s.Enqueue(ctx, id, p) })
}

func (s *asynqSystem) EnqueueAt(ctx context.Context, id string, at time.Time, p []byte) error {
	_, err := s.c.EnqueueContext(ctx, asynq.NewTask(queueName, p), asynq.TaskID(id), asynq.Queue(queueName), asynq.ProcessAt(at))
	return err
}

func (s *asynqSystem) Cancel(ctx context.Context, id string) (bool, error) {
	err := s.in.DeleteTask(queueName, id)
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (s *asynqSystem) Work(ctx context.Context, n int, fn handler) (func(), error) {
	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: s.addr}, asynq.Config{
		Concurrency: n,
		Queues:      map[string]int{queueName: 1},
		LogLevel:    asynq.FatalLevel,
	})
	err := srv.Start(asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		return fn(ctx, id, t.Payload())
	}))
	if err != nil {
		return nil, err
	}
	return srv.Shutdown, nil
}

func (s *asynqSystem) Close() error {
	s.in.Close()
	return s.c.Close()
}

// ---- river ----------------------------------------------------------------

type benchArgs struct {
	ID      string `json:"id"`
	Payload []byte `json:"p"`
}

func (benchArgs) Kind() string { return "bench" }

type benchWorker struct {
	river.WorkerDefaults[benchArgs]
	fn handler
}

func (w *benchWorker) Work(ctx context.Context, j *river.Job[benchArgs]) error {
	return w.fn(ctx, j.Args.ID, j.Args.Payload)
}

type riverSystem struct {
	pool *pgxpool.Pool
	c    *river.Client[pgx.Tx] // insert-only client

	mu  sync.Mutex
	ids map[string]int64 // our ID → river's, for Cancel
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openRiver(ctx context.Context, dsn string) (*riverSystem, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, err
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: quiet})
	if err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		pool.Close()
		return nil, fmt.Errorf("river migrate: %w", err)
	}
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: quiet})
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &riverSystem{pool: pool, c: c, ids: make(map[string]int64)}, nil
}

func (s *riverSystem) insert(ctx context.Context, id string, p []byte, at time.Time) error {
	var opts *river.InsertOpts
	if !at.IsZero() {
		opts = &river.InsertOpts{ScheduledAt: at}
	}
	res, err := s.c.Insert(ctx, benchArgs{ID: id, Payload: p}, opts)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.ids[id] = res.Job.ID
	s.mu.Unlock()
	return nil
}

func (s *riverSystem) Enqueue(ctx context.Context, id string, p []byte) error {
	return s.insert(ctx, id, p, time.Time{})
}

// EnqueueBatch uses InsertManyFast (PostgreSQL's COPY), river's fastest
// bulk insert.
func (s *riverSystem) EnqueueBatch(ctx context.Context, ids []string, p []byte) error {
	params := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		params[i] = river.InsertManyParams{Args: benchArgs{ID: id, Payload: p}}
	}
	_, err := s.c.InsertManyFast(ctx, params)
	return err
}

func (s *riverSystem) EnqueueAt(ctx context.Context, id string, at time.Time, p []byte) error {
	return s.insert(ctx, id, p, at)
}

func (s *riverSystem) Cancel(ctx context.Context, id string) (bool, error) {
	s.mu.Lock()
	rid, ok := s.ids[id]
	s.mu.Unlock()
	if !ok {
		return false, nil
	}
	// JobCancel returns the row whatever its state was: a job already
	// finished or cancelled is reported absent, as the others do.
	row, err := s.c.JobGet(ctx, rid)
	if errors.Is(err, river.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	switch row.State {
	case rivertype.JobStateCancelled, rivertype.JobStateCompleted, rivertype.JobStateDiscarded:
		return false, nil
	}
	_, err = s.c.JobCancel(ctx, rid)
	if errors.Is(err, river.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (s *riverSystem) Work(ctx context.Context, n int, fn handler) (func(), error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &benchWorker{fn: fn})
	c, err := river.NewClient(riverpgxv5.New(s.pool), &river.Config{
		Logger:  quiet,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: n}},
		Workers: workers,
		// A running job's claim lapses after 30 s, as natsjobs' AckWait
		// and asynq's lease do by default (river's own default is an hour).
		JobTimeout:           20 * time.Second,
		RescueStuckJobsAfter: 30 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c.Stop(sctx)
	}, nil
}

func (s *riverSystem) Close() error {
	s.pool.Close()
	return nil
}

func pgPing(ctx context.Context, dsn string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	return c.Ping(ctx)
}

// fanOut calls f for every id from n goroutines; the first error wins.
func fanOut(ctx context.Context, ids []string, n int, f func(string) error) error {
	var (
		wg    sync.WaitGroup
		next  = make(chan string)
		errMu sync.Mutex
		first error
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				if err := f(id); err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
				}
			}
		}()
	}
	for _, id := range ids {
		select {
		case next <- id:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
