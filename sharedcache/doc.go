// Package sharedcache is one cache across many instances of a service:
// each instance keeps local copies (L1, a ttlkit cache) of values held in a
// shared store (L2: NATS JetStream key-value, or Redis), and a write on any
// instance drops every other instance's copy.
//
//	store, err := sharedcache.NATS(sharedcache.NATSConfig{URL: "nats://10.0.0.5:4222"})
//	...
//	defer store.Close()
//	users, err := sharedcache.New[User](ctx, store, sharedcache.Options[User]{TTL: time.Hour})
//	...
//	defer users.Close()
//	u, err := users.Take(ctx, id, func(ctx context.Context) (User, error) {
//		return db.LoadUser(ctx, id) // return sharedcache.ErrNotFound for no such user
//	})
//	err = users.Set(ctx, id, u) // every instance sees u from now on
//	err = users.Delete(ctx, id)
//
// NATSConfig.Server runs the store's nats-server in the process instead:
// embedded.Server (package github.com/ttlkit/ttlkit/sharedcache/embedded,
// which only programs that run the server import), whose Listen lets the
// other instances connect to it.
// Redis(RedisConfig{Addr: ...}) is the other store: rueidis with Redis'
// server-assisted client-side caching (client tracking, broadcast mode on
// the key prefix) as the invalidation channel.
//
// # Guarantees
//
//   - Read your writes. When Set or Delete returns nil, every later Get or
//     Take on the same instance returns that write or a later one.
//   - Others' copies are dropped. Every write is reported to every
//     instance: on NATS by a watch of the bucket (keys and revisions only),
//     and an instance drops its copy unless it already holds that revision
//     or a newer one; on Redis by the server's invalidation messages, which
//     carry no revision, so the copy is dropped. On loopback this takes a
//     few milliseconds at most after the writer's call returns
//     (TestCoherence, BenchmarkInvalidation).
//   - No older copy after a newer one. Copies are stored under one mutex with
//     the events, and a store read that an event for its key overtook does
//     not store its copy (on Redis: a read that any invalidation of its key
//     overlapped): an instance never goes back to an older value.
//   - Load once. Take on a key that the store lacks runs the loader on one
//     instance, the holder of the key's lease (a key in a second bucket whose
//     entries expire after Options.LeaseTTL); the others wait for its write,
//     and if it crashed, the lease expires and a waiter loads instead.
//     A loader that returns ErrNotFound leaves a not-found placeholder.
//   - Lost connection. While the store cannot be reached, local copies are
//     served until their own deadline (at most Options.LocalTTL after they
//     were read: the staleness bound during an outage), writes fail at once
//     with an error wrapping ErrUnavailable (one made as the connection
//     drops is never sent after it comes back, where it would land over
//     later writes), and Take runs its loader
//     without keeping the result. When the connection comes back, every
//     local copy is dropped before the next read, and none is kept again
//     until a new watch runs, so nothing written during the outage is
//     missed (TestStoreRestart, TestRedisKilled,
//     TestWriteWhileReconnectingNeverLandsLater).
//   - Stale if error, by choice. With Options.StaleIfError set, a copy
//     past its deadline is kept that much longer and served by Get and
//     Take only when the store cannot be reached (a store that answers is
//     always asked first): during an outage a value is at most LocalTTL +
//     StaleIfError old, and Take does not send every instance's misses to
//     its loader at once (TestStaleIfError, TestStaleIfErrorStoreDown).
//   - Deadlines are wall-clock times written in the store, so instances
//     whose clocks disagree disagree about expiry by as much.
//
// # Costs
//
// A hit on a local copy is a ttlkit cache Get: no lock, no allocation.
// A miss is one store round trip; a write is one round trip, plus one
// small event to every instance. How it works is in
// doc/design/sharedcache.md.
package sharedcache
