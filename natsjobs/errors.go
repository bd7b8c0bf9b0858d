package natsjobs

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Errors returned by this package. Errors from the server are wrapped, so
// test them with errors.Is.
var (
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("natsjobs: closed")
	// ErrUnavailable is returned when the server cannot be reached (not
	// connected, or no answer in time). The call failed fast and nothing
	// was changed that the caller must undo; retry later. Workers keep
	// reconnecting on their own and resume when the server is back.
	ErrUnavailable = errors.New("natsjobs: server unavailable")
	// ErrInvalid is wrapped by every error about bad input: an empty or
	// malformed ID, an unknown queue, a payload over the server's limit,
	// a bad cron spec or time zone, a time in the past, a bad Config.
	ErrInvalid = errors.New("natsjobs: invalid argument")
	// ErrNotFound is returned by Redrive when the queue holds no dead
	// letter for the ID.
	ErrNotFound = errors.New("natsjobs: not found")
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

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

func isOutage(err error) bool {
	return errors.Is(err, nats.ErrTimeout) ||
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
