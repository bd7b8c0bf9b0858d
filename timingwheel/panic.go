package timingwheel

import "fmt"

// PanicError reports user code that panicked or called runtime.Goexit
// instead of returning. It is the module's one panic report type: panic
// handlers receive it ([WithPanicHandler], cache.Options.OnPanic), a
// cache loader's waiters and a failed job attempt get it as their error,
// and a natsjobs handler's panic becomes one.
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
