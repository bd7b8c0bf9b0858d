// Package harness holds the measuring tools shared by ttlkit's comparative
// benchmarks: process CPU time over a timed region and heap bytes per
// retained item.
//
// # Why process CPU time
//
// Wall-clock ns/op hides work done on other goroutines. A timing wheel that
// hands each operation to an owner goroutine over a channel can return to the
// caller quickly while the owner (and the garbage collector, and the runtime
// timer machinery) burn a second core. [Meter] reads the process's user+system
// CPU time (getrusage(RUSAGE_SELF)) at the edges of the timed region, so every
// goroutine's work, the owner's included, is charged to the operations. It is
// reported as "cpu-ns/op" next to the usual ns/op.
//
// A Meter is given a sync function that returns once every operation
// submitted so far has been applied (for an asynchronous wheel, a synchronous
// call such as Len). The Meter calls it before closing a timed segment, so
// queued work cannot escape the measurement by finishing after it.
//
// # Why heap in use per item
//
// [HeapPerItem] runs a full collection, lets the caller build n items, runs
// another full collection and divides the growth of HeapInuse by n. HeapInuse
// counts whole spans in use, so size-class rounding and fragmentation are
// included; temporary garbage made while building is not. The result is
// reported as "B/pending" by the wheel benchmarks.
//
// # Platforms
//
// Process CPU time needs getrusage; on platforms without it [ProcessCPU]
// reports ok == false and Meter reports no cpu-ns/op metric.
package harness
