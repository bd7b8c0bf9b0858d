// Package durable compares durable job queues side by side: natsjobs
// (embedded and external NATS JetStream), asynq (Redis) and river
// (PostgreSQL), on the same workloads. See README.md.
package durable
