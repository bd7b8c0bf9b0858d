// Package ttlprom exports ttlkit's counters to Prometheus.
//
//	c, _ := cache.New(cache.Options[string, Session]{TTL: 30 * time.Minute})
//	prometheus.MustRegister(
//		ttlprom.NewCacheCollector("sessions", c),
//		ttlprom.NewWheelCollector("login_codes", tw), // a timingwheel.TimingWheel or Scheduler
//		ttlprom.NewListenerCollector("api", ln),   // an *idletimeout.Listener
//		ttlprom.NewJobsCollector("orders", sched), // a *jobs.Scheduler
//	)
//	http.Handle("/metrics", promhttp.Handler())
//
// Each collector reads its object's Stats when Prometheus scrapes it and
// does nothing in between: no goroutine, nothing added to the object's hot
// paths. The name passed to a constructor becomes a label (cache, wheel,
// listener, scheduler), so several objects of one kind register side by
// side; registering two collectors with the same kind and name fails.
//
// Names follow Prometheus conventions: counters end in _total, labels
// split a counter by result, reason or outcome, gauges are plain nouns,
// and durations are _seconds histograms whose buckets are the core's
// (100µs, 1ms, 10ms, 100ms, 1s, 10s; see timingwheel.DurationBounds).
// Each constructor's documentation lists its series. A counter
// restarts from zero when its object is recreated; rate() handles that.
//
// Package natsprom, in this module, exports the counts of natsjobs queues;
// package sharedprom the counters of sharedcache caches.
//
// examples/metrics is a runnable service with all four on one /metrics
// endpoint.
//
// This is a module of its own (github.com/ttlkit/ttlkit/prometheus), so
// that the core module keeps to the standard library.
//
// How it is built, and why: doc/design/exporters.md.
package ttlprom
