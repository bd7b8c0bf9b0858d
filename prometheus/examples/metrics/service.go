package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/ttlkit/ttlkit/cache"
	"github.com/ttlkit/ttlkit/idletimeout"
	"github.com/ttlkit/ttlkit/jobs"
	ttlprom "github.com/ttlkit/ttlkit/prometheus"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// service holds the ttlkit objects and the HTTP server that exposes them.
type service struct {
	sessions *cache.Cache[string, string]
	codes    *timingwheel.TimingWheel[string, string]
	sched    *jobs.Scheduler
	ln       *idletimeout.Listener
	srv      *http.Server
	done     chan error
}

// start builds the service on ln and serves it until close.
func start(ln net.Listener) (*service, error) {
	s := &service{done: make(chan error, 1)}
	var err error
	if s.sessions, err = cache.New(cache.Options[string, string]{TTL: 30 * time.Minute, Limit: 100_000}); err != nil {
		return nil, err
	}
	// A login code expires after 5 minutes unless it is used.
	if s.codes, err = timingwheel.New(100*time.Millisecond, 64, func(user, code string) {}); err != nil {
		return nil, err
	}
	if s.sched, err = jobs.New(jobs.Options{}); err != nil {
		return nil, err
	}
	if err = s.sched.Add("heartbeat", jobs.Every(10*time.Second), func(context.Context, jobs.Run) error {
		return nil
	}); err != nil {
		return nil, err
	}
	if s.ln, err = idletimeout.NewListener(ln, idletimeout.Config{IdleTimeout: 2 * time.Minute}); err != nil {
		return nil, err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		ttlprom.NewCacheCollector("sessions", s.sessions),
		ttlprom.NewWheelCollector("login_codes", s.codes),
		ttlprom.NewJobsCollector("main", s.sched),
		ttlprom.NewListenerCollector("http", s.ln),
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/login", s.login)
	s.srv = &http.Server{Handler: mux, ConnState: s.ln.ConnState, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.done <- s.srv.Serve(s.ln) }()
	return s, nil
}

// login returns the user's session, creating it on first use, and sends
// a fresh login code that expires in 5 minutes.
func (s *service) login(w http.ResponseWriter, r *http.Request) {
	user := r.URL.Query().Get("user")
	if user == "" {
		http.Error(w, "missing user", http.StatusBadRequest)
		return
	}
	sess, err := s.sessions.Take(user, func() (string, error) {
		return fmt.Sprintf("session-of-%s", user), nil
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if err := s.codes.SetTimer(user, "code", 5*time.Minute); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, sess)
}

// close stops serving and releases everything start made.
func (s *service) close() {
	s.srv.Close()
	<-s.done
	s.sched.Shutdown(context.Background())
	s.codes.Stop()
	s.sessions.Close()
}
