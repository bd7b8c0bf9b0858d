package sharedprom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/ttlkit/ttlkit/prometheus/sharedprom"
	"github.com/ttlkit/ttlkit/sharedcache"
	"github.com/ttlkit/ttlkit/sharedcache/embedded"
)

var _ sharedprom.Cache = (*sharedcache.Cache[string])(nil)

type fake sharedcache.Stats

func (f fake) Stats() sharedcache.Stats { return sharedcache.Stats(f) }

// check registers c on a pedantic registry, compares the exposition with
// want exactly, and lints it.
func check(t *testing.T, c prometheus.Collector, want string) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatalf("Lint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

const help = `
# HELP ttlkit_sharedcache_hits_total Get and Take answered by this instance's local copy (l1) or by the store (l2, a not-found placeholder included).
# TYPE ttlkit_sharedcache_hits_total counter
ttlkit_sharedcache_hits_total{cache="users",tier="l1"} %d
ttlkit_sharedcache_hits_total{cache="users",tier="l2"} %d
# HELP ttlkit_sharedcache_invalidations_total Local copies dropped because another instance wrote or deleted the key.
# TYPE ttlkit_sharedcache_invalidations_total counter
ttlkit_sharedcache_invalidations_total{cache="users"} %d
# HELP ttlkit_sharedcache_lease_waits_total Takes that waited for another instance's load of their key.
# TYPE ttlkit_sharedcache_lease_waits_total counter
ttlkit_sharedcache_lease_waits_total{cache="users"} %d
# HELP ttlkit_sharedcache_loads_total Loader calls on this instance.
# TYPE ttlkit_sharedcache_loads_total counter
ttlkit_sharedcache_loads_total{cache="users"} %d
# HELP ttlkit_sharedcache_stale_drops_total Local copies dropped after a lost connection to the store, when it came back.
# TYPE ttlkit_sharedcache_stale_drops_total counter
ttlkit_sharedcache_stale_drops_total{cache="users"} %d
# HELP ttlkit_sharedcache_stale_hits_total Get and Take answered by a local copy past its deadline because the store could not be reached (Options.StaleIfError).
# TYPE ttlkit_sharedcache_stale_hits_total counter
ttlkit_sharedcache_stale_hits_total{cache="users"} %d
# HELP ttlkit_sharedcache_store_misses_total Store reads that found no value for the key.
# TYPE ttlkit_sharedcache_store_misses_total counter
ttlkit_sharedcache_store_misses_total{cache="users"} %d
`

// exposition fills help's values, in its order: l1, l2, invalidations,
// lease waits, loads, stale drops, stale hits, store misses.
func exposition(s sharedcache.Stats) string {
	return fmt.Sprintf(help, s.L1Hits, s.L2Hits, s.Invalidations, s.LeaseWaits, s.Loads, s.StaleDrops, s.StaleHits, s.Misses)
}

// TestCollector: every Stats field lands in its own series (distinct
// values, so a swapped field fails).
func TestCollector(t *testing.T) {
	s := sharedcache.Stats{L1Hits: 1, L2Hits: 2, Misses: 3, Loads: 4, LeaseWaits: 5, Invalidations: 6, StaleDrops: 7, StaleHits: 8}
	check(t, sharedprom.NewCollector("users", fake(s)), exposition(s))
}

// TestCollectorLive reads a real cache on an embedded NATS server: a Set,
// a local hit, a store miss and a Take that loads.
func TestCollectorLive(t *testing.T) {
	ctx := context.Background()
	store, err := sharedcache.NATS(sharedcache.NATSConfig{Server: embedded.Server{}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	users, err := sharedcache.New[string](ctx, store, sharedcache.Options[string]{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer users.Close()
	if err := users.Set(ctx, "ada", "Ada"); err != nil {
		t.Fatal(err)
	}
	if v, err := users.Get(ctx, "ada"); err != nil || v != "Ada" {
		t.Fatalf("Get(ada) = %q, %v", v, err)
	}
	if _, err := users.Get(ctx, "nobody"); !errors.Is(err, sharedcache.ErrNotFound) {
		t.Fatalf("Get(nobody) = %v, want ErrNotFound", err)
	}
	if _, err := users.Take(ctx, "bob", func(context.Context) (string, error) { return "Bob", nil }); err != nil {
		t.Fatal(err)
	}
	// The Take read bob twice (before and under its lease), both misses.
	check(t, sharedprom.NewCollector("users", users), exposition(sharedcache.Stats{L1Hits: 1, Misses: 3, Loads: 1}))
}
