// Package sharedcachebench compares a sharedcache read answered by the
// shared store (a local miss) with go-zero's core/stores/cache Get on the
// same redis-server, and with a plain GET of the same bytes through rueidis
// and through a NATS key-value bucket, all in one process (see
// doc/benchmarks.md, suite sharedcachel2).
//
// It is a module of its own so that go-zero stays out of the sharedcache
// module. The benchmarks start redis-server from Debian's package on
// loopback with a temporary directory; a local run without it skips the
// Redis rows, CI (CI=true) fails instead.
package sharedcachebench
