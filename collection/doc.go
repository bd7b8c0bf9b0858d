// Package collection is a drop-in replacement for go-zero's core/collection
// (v1.10.3): every exported name of that package, with the same
// signatures, so code written for go-zero compiles after one change of
// import path:
//
//	import "github.com/zeromicro/go-zero/core/collection" // before
//	import "github.com/ttlkit/ttlkit/collection"          // after
//
// What it holds: [TimingWheel] (keyed timers), [Cache] (a TTL cache with a
// size limit and load-through [Cache.Take]), [SafeMap] (a concurrent map
// that gives memory back), [Set], [Queue] (unbounded FIFO), [Ring] (the
// last n values) and [RollingWindow] (sums over a sliding window of time).
//
// It behaves as go-zero's documentation promises, including where go-zero
// itself does not: timers never fire early and moves land on the exact
// tick; a timer moved to less than one interval fires once; Stop may be
// called twice; a cache entry never outlives its TTL, and Cache has Close;
// SafeMap's Range lets its callback write to the map; a Queue gives its
// memory back after a burst; a RollingWindow with a bad interval panics
// when it is made, not on first use. doc/compat.md lists every such
// difference with the test that pins it, and what this package adds.
//
// TimingWheel, Cache and SafeMap are thin wrappers over this module's
// timingwheel, cache and safemap packages and inherit their guarantees.
// Keys and values are of type any here only because go-zero's API demands
// it; new code should use those generic packages directly. How the
// wrappers map go-zero's API onto them is in doc/design/safemap-collection.md.
package collection
