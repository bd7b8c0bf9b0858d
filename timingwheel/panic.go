package timingwheel

import "fmt"

// PanicError reports user code that panicked or called runtime.Goexit
// instead of returning. It is the module's one panic report:
// cache.PanicError and jobs.PanicError are this type (the error a loader's
// waiters or a job's attempt get), and the reports handed to panic
// handlers, [Panic] and cache.Panic, give it with their Err method.
//
// errors.As(err, &pe) finds it in an error chain, and errors.Is(err,
// ErrGoexit) tells a runtime.Goexit from a panic.
type PanicError struct {
	// Key says what the code ran for: the timer's key (keyed TimingWheel)
	// or Value (Scheduler), the cache's key, the job's ID. It is nil when
	// nothing does (a cache's BulkLoader, which loads many keys).
	Key any
	// Value is the value passed to panic, or ErrGoexit for a
	// runtime.Goexit.
	Value any
	// Stack is the stack of the goroutine that panicked, taken where the
	// panic was recovered.
	Stack []byte
}

// Error returns the key, the panic value and the stack.
func (e *PanicError) Error() string {
	if e.Key != nil {
		return fmt.Sprintf("ttlkit: panic (key %v): %v\n\n%s", e.Key, e.Value, e.Stack)
	}
	return fmt.Sprintf("ttlkit: panic: %v\n\n%s", e.Value, e.Stack)
}

// Unwrap returns Value if it is an error (ErrGoexit for a runtime.Goexit,
// or the error passed to panic), else nil.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Err returns p as the module's one panic report: a *PanicError with the
// same key, value (Recovered) and stack.
func (p Panic) Err() *PanicError {
	return &PanicError{Key: p.Key, Value: p.Recovered, Stack: p.Stack}
}
