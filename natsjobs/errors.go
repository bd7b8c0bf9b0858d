package natsjobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/ttlkit/ttlkit/natsjobs/internal/natsauth"
)

// Errors returned by this package. Errors from the server are wrapped, so
// test them with errors.Is.
var (
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("natsjobs: closed")
	// ErrUnavailable is returned when the server cannot be reached (not
	// connected, or no answer in time: a cluster electing a leader or
	// without a quorum). Nothing was changed that the caller must undo,
	// but a request the server received may have been applied even though
	// its answer was lost: an Enqueue so reported may have stored the job,
	// and calling it again is safe while the job is pending (it replaces
	// it), but enqueues it anew if it already ran. Workers keep
	// reconnecting on their own and resume when the server is back.
	ErrUnavailable = errors.New("natsjobs: server unavailable")
	// ErrInvalid is wrapped by every error about bad input: an empty or
	// malformed ID, an unknown queue, a payload over the server's limit,
	// a bad cron spec or time zone, a time in the past, a bad Config.
	// (package natsjobs/embedded's errors wrap it too: it is the same
	// value as embedded.ErrInvalid).
	ErrInvalid = natsauth.ErrInvalid
	// ErrNotFound is returned by Redrive when the queue holds no dead
	// letter for the ID, by Get when it holds no job of the ID, and by
	// the operations API (List, Get, Pause, Resume, Purge, QueueStats,
	// RedriveDead, DeleteDead) for a queue the server does not have.
	ErrNotFound = errors.New("natsjobs: not found")
	// ErrExists is wrapped by the error of an enqueue under Keep whose ID
	// the queue holds already: the existing job was kept, nothing stored.
	ErrExists = errors.New("natsjobs: job exists")
	// ErrConflict is wrapped by the error of an enqueue under Refuse
	// whose ID the queue holds already: nothing was stored.
	ErrConflict = errors.New("natsjobs: job ID conflict")
	// ErrShutdown is the cause (context.Cause) of a handler's ctx when
	// its Work call stopped and WorkOptions.Grace passed before the
	// handler returned. A handler that then returns an error has no
	// outcome: its job goes back to the queue, the attempt not counted.
	ErrShutdown = errors.New("natsjobs: worker stopped")
)

func invalidf(format string, args ...any) error { return natsauth.Invalidf(format, args...) }

// wrap classifies an error from the client library: connection-level
// failures become ErrUnavailable, the rest is prefixed with what failed.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrClosed) {
		return err
	}
	if isOutage(err) {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
	}
	return fmt.Errorf("natsjobs: %s: %w", what, err)
}

// isOutage reports a failure of the server or cluster rather than of the
// request: no connection, no answer in time (a client-side deadline:
// jetstream's default timeout, Config.Timeout, or a cluster that lost its
// leader or quorum and drops requests), or the cluster's own "not now".
func isOutage(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) ||
		errIs(err, codeClusterNotAvail) ||
		errIs(err, codeClusterNotLeader) ||
		errIs(err, codeStreamOffline) ||
		errIs(err, codeConsumerOffline) ||
		errIs(err, codeLastSeqNotReady) ||
		errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionClosed) ||
		errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrReconnectBufExceeded) ||
		errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionDraining) ||
		errors.Is(err, jetstream.ErrServerShutdown) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}

// The server's error codes for a cluster that cannot answer now: no
// JetStream meta leader or quorum, a stream or consumer whose replicas are
// offline, a per-subject sequence not yet known to a new leader.
const (
	codeClusterNotAvail  jetstream.ErrorCode = 10008
	codeClusterNotLeader jetstream.ErrorCode = 10009
	codeStreamOffline    jetstream.ErrorCode = 10118
	codeConsumerOffline  jetstream.ErrorCode = 10119
	codeLastSeqNotReady  jetstream.ErrorCode = 10163
)
