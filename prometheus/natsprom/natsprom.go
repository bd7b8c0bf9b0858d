// Package natsprom exports the counts of natsjobs queues to Prometheus.
//
//	prometheus.MustRegister(natsprom.NewQueueCollector(client, time.Second, "orders", "emails"))
//
// Each scrape asks the server for each queue's QueueStats (four requests
// per queue, see natsjobs.Client.QueueStats), with the given timeout:
//
//	ttlkit_natsjobs_jobs{queue,state="scheduled"|"pending"|"running"|"dead"}  gauge
//	ttlkit_natsjobs_retrying_jobs{queue}  gauge: the running jobs delivered more than once
//	ttlkit_natsjobs_up{queue}  gauge: 1 if the counts were read, 0 if not
//
// The states are natsjobs.State's, as List, the natsjobs command and the
// console name them, and they are disjoint: scheduled jobs wait for their
// time, pending ones are due and wait for a worker, running ones were
// handed to a worker. (Until the deprecated Stats was replaced here,
// state="pending" counted scheduled jobs and state="due" pending ones.)
//
// When a queue's counts cannot be read (the server is unreachable, the
// timeout passed) its job series are left out of that scrape and
// ttlkit_natsjobs_up is 0: the scrape itself never fails.
//
// It is a package of its own so that ttlprom's other users do not build
// the NATS client.
//
// How it is built, and why: doc/design/exporters.md.
package natsprom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/ttlkit/ttlkit/natsjobs"
)

// Client is what NewQueueCollector reads: a *natsjobs.Client.
type Client interface {
	QueueStats(ctx context.Context, queue string) (natsjobs.QueueStats, error)
}

// NewQueueCollector returns a collector of the counts of queues, read from
// c at each scrape, each read bounded by timeout (0 means 5 seconds).
func NewQueueCollector(c Client, timeout time.Duration, queues ...string) prometheus.Collector {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &queueCollector{
		c: c, timeout: timeout, queues: append([]string(nil), queues...),
		jobs: prometheus.NewDesc("ttlkit_natsjobs_jobs", "Live jobs of a queue by state, and its dead letters.",
			[]string{"queue", "state"}, nil),
		retrying: prometheus.NewDesc("ttlkit_natsjobs_retrying_jobs", "Running jobs of a queue delivered more than once.",
			[]string{"queue"}, nil),
		up: prometheus.NewDesc("ttlkit_natsjobs_up", "Whether the queue's counts could be read at this scrape.",
			[]string{"queue"}, nil),
	}
}

type queueCollector struct {
	c                  Client
	timeout            time.Duration
	queues             []string
	jobs, retrying, up *prometheus.Desc
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- q.jobs
	ch <- q.retrying
	ch <- q.up
}

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	for _, name := range q.queues {
		ctx, cancel := context.WithTimeout(context.Background(), q.timeout)
		st, err := q.c.QueueStats(ctx, name)
		cancel()
		if err != nil {
			ch <- prometheus.MustNewConstMetric(q.up, prometheus.GaugeValue, 0, name)
			continue
		}
		ch <- prometheus.MustNewConstMetric(q.up, prometheus.GaugeValue, 1, name)
		for _, s := range []struct {
			state natsjobs.State
			n     int
		}{{natsjobs.Scheduled, st.Scheduled}, {natsjobs.Pending, st.Pending}, {natsjobs.Running, st.Running}, {natsjobs.Dead, st.Dead}} {
			ch <- prometheus.MustNewConstMetric(q.jobs, prometheus.GaugeValue, float64(s.n), name, s.state.String())
		}
		ch <- prometheus.MustNewConstMetric(q.retrying, prometheus.GaugeValue, float64(st.Retrying), name)
	}
}
