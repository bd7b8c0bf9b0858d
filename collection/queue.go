package collection

import "sync"

// Queue is go-zero's collection.Queue: an unbounded first-in, first-out
// queue of values of any type, safe for concurrent use. Put never blocks
// and Take never waits: it reports an empty queue instead.
//
// The queue is a ring buffer that grows when it is full and, unlike
// go-zero's, shrinks again (by half, never below its initial size) once a
// quarter of it or less is in use, so a burst does not pin its peak memory
// for the queue's lifetime. The zero Queue is empty and ready to use; a
// Queue must not be copied after first use.
type Queue struct {
	mu    sync.Mutex
	buf   []any // ring buffer; buf[head] is the oldest element
	head  int
	count int
	min   int // the size NewQueue was given: the buffer never shrinks below it
}

// NewQueue returns an empty Queue whose buffer starts with room for size
// elements. Like go-zero's, it panics when size < 1.
func NewQueue(size int) *Queue {
	if size < 1 {
		panic("collection: NewQueue: size must be greater than 0")
	}
	return &Queue{buf: make([]any, size), min: size}
}

// Empty reports whether q holds no element.
func (q *Queue) Empty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.count == 0
}

// Put appends element at the tail of q. Amortized O(1): a full buffer is
// copied into one about twice as large (1.25 times beyond 1024 elements).
func (q *Queue) Put(element any) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.count == len(q.buf) {
		n := len(q.buf) * 2
		if len(q.buf) >= 1024 {
			n = len(q.buf) + len(q.buf)/4
		}
		q.resize(max(n, 1))
	}
	q.buf[(q.head+q.count)%len(q.buf)] = element
	q.count++
}

// Take removes and returns the element at the head of q, and true; or nil
// and false when q is empty. The queue drops its reference to the element.
// Amortized O(1): when a quarter of the buffer or less is left in use, it
// is copied into one half as large (or of the initial size, if larger).
func (q *Queue) Take() (any, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.count == 0 {
		return nil, false
	}
	element := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.count--
	if floor := max(q.min, 1); len(q.buf) > floor && q.count <= len(q.buf)/4 {
		q.resize(max(len(q.buf)/2, floor))
	}
	return element, true
}

// resize moves the elements, oldest first, into a new buffer of n >= count
// slots. q.mu is held.
func (q *Queue) resize(n int) {
	buf := make([]any, n)
	if q.count > 0 {
		copied := copy(buf, q.buf[q.head:min(q.head+q.count, len(q.buf))])
		copy(buf[copied:], q.buf[:q.count-copied])
	}
	q.buf, q.head = buf, 0
}
