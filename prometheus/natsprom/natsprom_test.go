package natsprom_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/prometheus/natsprom"
)

// fake answers Stats from a table; a queue missing from it fails.
type fake map[string]natsjobs.Stats

func (f fake) Stats(_ context.Context, queue string) (natsjobs.Stats, error) {
	st, ok := f[queue]
	if !ok {
		return natsjobs.Stats{}, errors.New("natsjobs: unreachable")
	}
	return st, nil
}

func TestQueueCollector(t *testing.T) {
	c := natsprom.NewQueueCollector(fake{"orders": {Pending: 5, Due: 1, Running: 2, Retrying: 1, Dead: 3}}, 0, "orders", "emails")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want := `
# HELP ttlkit_natsjobs_jobs Live jobs of a queue by state, and its dead letters.
# TYPE ttlkit_natsjobs_jobs gauge
ttlkit_natsjobs_jobs{queue="orders",state="dead"} 3
ttlkit_natsjobs_jobs{queue="orders",state="due"} 1
ttlkit_natsjobs_jobs{queue="orders",state="pending"} 5
ttlkit_natsjobs_jobs{queue="orders",state="retrying"} 1
ttlkit_natsjobs_jobs{queue="orders",state="running"} 2
# HELP ttlkit_natsjobs_up Whether the queue's counts could be read at this scrape.
# TYPE ttlkit_natsjobs_up gauge
ttlkit_natsjobs_up{queue="emails"} 0
ttlkit_natsjobs_up{queue="orders"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// TestQueueCollectorLive reads a real queue on an embedded server: one
// job waiting a day is pending.
func TestQueueCollectorLive(t *testing.T) {
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{Ephemeral: true, Queues: []string{"orders"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.EnqueueAfter(ctx, natsjobs.Job{Queue: "orders", ID: "unpaid-1"}, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(natsprom.NewQueueCollector(c, 0, "orders"))
	want := `
# HELP ttlkit_natsjobs_jobs Live jobs of a queue by state, and its dead letters.
# TYPE ttlkit_natsjobs_jobs gauge
ttlkit_natsjobs_jobs{queue="orders",state="dead"} 0
ttlkit_natsjobs_jobs{queue="orders",state="due"} 0
ttlkit_natsjobs_jobs{queue="orders",state="pending"} 1
ttlkit_natsjobs_jobs{queue="orders",state="retrying"} 0
ttlkit_natsjobs_jobs{queue="orders",state="running"} 0
# HELP ttlkit_natsjobs_up Whether the queue's counts could be read at this scrape.
# TYPE ttlkit_natsjobs_up gauge
ttlkit_natsjobs_up{queue="orders"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
