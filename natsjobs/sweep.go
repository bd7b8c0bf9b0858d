package natsjobs

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
)

// sweep removes the queue's tombstones stored at least tombstoneAge ago,
// oldest first, up to sweepBatch of them, each after purging the copy of
// its generation that landed late (natsjobs.<q>.r.<id>.<gen>), if any. No
// copy of the generation can land any more (see tombstoneAge), and none
// stays stored without its tombstone: a run that checks after the purge
// finds its copy gone. Sweeps may run at once (every Work call runs one):
// a purge or delete done twice is a no-op. It returns how many it removed.
func (c *Client) sweep(ctx context.Context, queue string) (int, error) {
	type tomb struct {
		seq     uint64
		id, gen string
	}
	var old []tomb
	cutoff := time.Now().Add(-tombstoneAge)
	prefix := tombSubject(queue, "")
	_, err := c.scan(ctx, workStream(queue), prefix+"*", 1, 0, scanBatch, func(m *nats.Msg, seq uint64, stored time.Time) bool {
		if stored.After(cutoff) {
			return false // stored in order: the rest are younger
		}
		old = append(old, tomb{seq, string(m.Data), m.Subject[len(prefix):]})
		return len(old) < sweepBatch
	})
	if err != nil {
		return 0, err
	}
	for i, t := range old {
		if checkID(t.id) == nil {
			if _, err := c.purge(ctx, queue, readySubject(queue, t.id, t.gen), 0); err != nil {
				return i, err
			}
		}
		if err := c.deleteMsg(ctx, queue, t.seq); err != nil && !errors.Is(err, errTaken) {
			return i, err
		}
	}
	return len(old), nil
}

// sweepBatch bounds the tombstones one sweep removes (about two requests
// each); the next sweep goes on.
const sweepBatch = 1000

// sweepEvery sweeps the worker's queue every tombstoneAge until stop is
// closed. A failed sweep is left to the next one.
func (w *worker) sweepEvery(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	go func() {
		<-stop
		cancel()
	}()
	t := time.NewTicker(tombstoneAge)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		n, err := w.c.sweep(ctx, w.queue)
		if h := testHookSwept; h != nil {
			h(n, err)
		}
	}
}

// testHookSwept, if set, is called after each periodic sweep with what it
// removed and its error.
var testHookSwept func(n int, err error)
