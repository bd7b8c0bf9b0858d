// Package collection is a drop-in replacement for the TimingWheel, Cache
// and SafeMap types of go-zero's core/collection (v1.10.3): the same
// exported names and signatures, so code written for go-zero compiles after
// its import path is changed to github.com/ttlkit/ttlkit/collection.
//
// The types are thin wrappers over this module's engines — timingwheel,
// cache and safemap — and inherit their guarantees. Where go-zero is wrong,
// they behave as its documentation promises instead; doc/compat.md lists
// every such difference with the regression test that pins it:
//
//   - timers never fire early, and moves land on the exact tick;
//   - a timer moved to less than one interval fires once, on the next tick;
//   - Drain forgets the keys it hands over (go-zero keeps them indexed, so
//     a later SetTimer of a drained key is lost and its value stays
//     referenced);
//   - Stop may be called twice; methods called after it return ErrClosed;
//   - nil or unhashable keys are rejected with ErrArgument instead of
//     crashing the wheel's goroutine;
//   - a cache entry never outlives its TTL, whatever races with it, and a
//     deleted or overwritten value is released at once;
//   - Cache has Close, and stats are not pushed to a global logger.
//
// Keys and values are of type any here only because go-zero's API demands
// it; new code should use the generic packages directly.
package collection
