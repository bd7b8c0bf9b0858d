package sharedcache

import (
	"context"
	"encoding/binary"
	"errors"
	"time"
)

// Store is the shared tier (L2) that every instance's Cache reads, writes
// and watches. NATS returns the one this package provides; its methods are
// unexported, so only this package implements it. A Store serves one Cache
// at a time.
type Store interface {
	// bind prepares the store for a cache whose records live at most
	// maxAge, and starts delivering events to h. It is called once, by New.
	bind(ctx context.Context, maxAge, leaseTTL time.Duration, h handler) error
	// get returns the record stored for key; found is false when there is
	// none (a deleted key included).
	get(ctx context.Context, key string) (rec []byte, rev uint64, found bool, err error)
	// put stores rec for key and returns its revision.
	put(ctx context.Context, key string, rec []byte) (rev uint64, err error)
	// del removes key.
	del(ctx context.Context, key string) error
	// lease takes key's load lease if nobody holds it, for the store's lease
	// TTL. held is false when another instance holds it; release gives it
	// back (a no-op when it has expired and was taken by another).
	lease(ctx context.Context, key string) (release func(), held bool, err error)
	// connected reports whether the store can be reached now.
	connected() bool
	// unbind stops the events; the store stays open for its owner to close.
	unbind()
}

// handler receives a store's events. changed and resumed come from one
// goroutine the store owns, changed in the order the store committed the
// writes; reconnected and disconnected come from the client library's
// callback goroutine.
type handler interface {
	// changed reports that key was written or deleted at revision rev by
	// some instance (this one included).
	changed(key string, rev uint64)
	// disconnected reports that the store cannot be reached.
	disconnected()
	// reconnected reports that the connection is back after a loss: events
	// may have been missed meanwhile, and the watch is being replaced.
	reconnected()
	// resumed reports that a new watch runs: every write committed from
	// now on will be reported by changed.
	resumed()
}

// A record is what a Store holds for a key: one kind byte, the deadline
// (Unix nanoseconds, wall clock), then the encoded value.
const (
	kindValue    = 'v'
	kindNotFound = 'n'
	recHeader    = 9
)

var errBadRecord = errors.New("sharedcache: malformed record in the store")

func makeRecord(kind byte, deadline time.Time, payload []byte) []byte {
	rec := make([]byte, recHeader+len(payload))
	rec[0] = kind
	binary.BigEndian.PutUint64(rec[1:], uint64(deadline.UnixNano()))
	copy(rec[recHeader:], payload)
	return rec
}

func parseRecord(rec []byte) (kind byte, deadline time.Time, payload []byte, err error) {
	if len(rec) < recHeader || (rec[0] != kindValue && rec[0] != kindNotFound) {
		return 0, time.Time{}, nil, errBadRecord
	}
	return rec[0], time.Unix(0, int64(binary.BigEndian.Uint64(rec[1:]))), rec[recHeader:], nil
}
