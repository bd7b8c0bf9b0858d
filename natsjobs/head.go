package natsjobs

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The head marker: a message of no job on headSubject, stored by Open
// beside the work stream unless it is there and never consumed, so that
// the stream's first sequence stays below the workers' consumer's cursor.
//
// When the consumer's cursor is at or before the stream's first sequence,
// nats-server (2.15) looks for the next delivery by counting every stored
// subject under the consumer's filter (fileStore.LoadNextMsg ->
// numFilteredPendingWithLast): one per pending job. That is the case
// whenever every delivery has been acknowledged, which is what pulling
// only for free runners makes common: the acknowledgement of a run and
// the pull for the next reach the server together and are handled on two
// goroutines, and over TCP the acknowledgement usually wins. With 20k
// jobs pending that walk was a third of the external server's CPU, about
// 100 µs per run (BenchmarkRun, 2 handlers). Below the marker the cursor
// is always past the first sequence, and the lookup reads from the cursor
// on (TestHeadMarkerBelowCursor).
//
// A queue created by an earlier version gets the marker at its stream's
// tail, and it becomes the head once the jobs before it are gone. Purge
// stores it again.

// storeHead stores the queue's head marker unless it is there already
// (a conditional publish: one request).
func (c *Client) storeHead(ctx context.Context, q string) error {
	msg := &nats.Msg{Subject: headSubject(q), Header: nats.Header{}}
	err := c.publish(ctx, msg, "head marker", jetstream.WithExpectLastSequenceForSubject(0, msg.Subject))
	if wrongLastSeq(err) {
		return nil // stored by an earlier call
	}
	return err
}
