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
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
	"github.com/ttlkit/ttlkit/prometheus/natsprom"
)

// fake answers QueueStats from a table; a queue missing from it fails.
type fake map[string]natsjobs.QueueStats

func (f fake) QueueStats(_ context.Context, queue string) (natsjobs.QueueStats, error) {
	st, ok := f[queue]
	if !ok {
		return natsjobs.QueueStats{}, errors.New("natsjobs: unreachable")
	}
	return st, nil
}

func TestQueueCollector(t *testing.T) {
	c := natsprom.NewQueueCollector(fake{"orders": {Scheduled: 5, Pending: 1, Running: 2, Retrying: 1, Dead: 3}}, 0, "orders", "emails")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want := `
# HELP ttlkit_natsjobs_jobs Live jobs of a queue by state, and its dead letters.
# TYPE ttlkit_natsjobs_jobs gauge
ttlkit_natsjobs_jobs{queue="orders",state="dead"} 3
ttlkit_natsjobs_jobs{queue="orders",state="pending"} 1
ttlkit_natsjobs_jobs{queue="orders",state="running"} 2
ttlkit_natsjobs_jobs{queue="orders",state="scheduled"} 5
# HELP ttlkit_natsjobs_retrying_jobs Running jobs of a queue delivered more than once.
# TYPE ttlkit_natsjobs_retrying_jobs gauge
ttlkit_natsjobs_retrying_jobs{queue="orders"} 1
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
// job waiting a day is scheduled, one due with no worker is pending.
func TestQueueCollectorLive(t *testing.T) {
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"orders"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.EnqueueAfter(ctx, natsjobs.Job{Queue: "orders", ID: "unpaid-1"}, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, natsjobs.Job{Queue: "orders", ID: "refund-1"}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(natsprom.NewQueueCollector(c, 0, "orders"))
	want := `
# HELP ttlkit_natsjobs_jobs Live jobs of a queue by state, and its dead letters.
# TYPE ttlkit_natsjobs_jobs gauge
ttlkit_natsjobs_jobs{queue="orders",state="dead"} 0
ttlkit_natsjobs_jobs{queue="orders",state="pending"} 1
ttlkit_natsjobs_jobs{queue="orders",state="running"} 0
ttlkit_natsjobs_jobs{queue="orders",state="scheduled"} 1
# HELP ttlkit_natsjobs_retrying_jobs Running jobs of a queue delivered more than once.
# TYPE ttlkit_natsjobs_retrying_jobs gauge
ttlkit_natsjobs_retrying_jobs{queue="orders"} 0
# HELP ttlkit_natsjobs_up Whether the queue's counts could be read at this scrape.
# TYPE ttlkit_natsjobs_up gauge
ttlkit_natsjobs_up{queue="orders"} 1
`
	// The server's count of due jobs may trail a write by a moment.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if err = testutil.GatherAndCompare(reg, strings.NewReader(want)); err == nil {
			break
		}
	}
	if err != nil {
		t.Error(err)
	}
}
