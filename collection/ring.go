package collection

import "sync"

// Ring is go-zero's collection.Ring: a fixed number of slots that keeps the
// values most recently added, safe for concurrent use. Once full, each Add
// overwrites the oldest value.
type Ring struct {
	mu   sync.RWMutex
	buf  []any
	next int // the slot the next Add writes
	size int // number of values held, at most len(buf)
}

// NewRing returns an empty Ring that holds up to n values. Like go-zero's,
// it panics when n < 1.
func NewRing(n int) *Ring {
	if n < 1 {
		panic("collection: NewRing: n must be greater than 0")
	}
	return &Ring{buf: make([]any, n)}
}

// Add stores v in r, replacing the oldest value when r is full. O(1).
func (r *Ring) Add(v any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = v
	r.next = (r.next + 1) % len(r.buf)
	r.size = min(r.size+1, len(r.buf))
}

// Take returns the values r holds, oldest first, in a new slice: all of
// them, up to the n given to NewRing. Despite its name (go-zero's), it does
// not remove them: a second Take returns them again. O(n).
func (r *Ring) Take() []any {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]any, r.size)
	start := r.next - r.size
	if start < 0 {
		start += len(r.buf)
	}
	n := copy(out, r.buf[start:])
	copy(out[n:], r.buf[:r.size-n])
	return out
}
