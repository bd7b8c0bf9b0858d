package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestScrape runs the service on a loopback port, logs a user in twice
// over HTTP, scrapes /metrics and parses the text format.
func TestScrape(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := start(ln)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.close()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) string {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %q %v", path, resp.StatusCode, b, err)
		}
		return string(b)
	}
	for range 2 {
		if got := get("/login?user=ann"); got != "session-of-ann\n" {
			t.Fatalf("login: got %q, want session-of-ann", got)
		}
	}

	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(get("/metrics")))
	if err != nil {
		t.Fatalf("parsing the exposition: %v", err)
	}
	value := func(name string, labels ...string) float64 {
		t.Helper()
		mf, ok := mfs[name]
		if !ok {
			t.Fatalf("%s not exposed", name)
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if label(m, labels[i]) != labels[i+1] {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
		t.Fatalf("%s%v not exposed", name, labels)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"ttlkit_cache_requests_total", []string{"cache", "sessions", "result", "miss"}, 1},
		{"ttlkit_cache_requests_total", []string{"cache", "sessions", "result", "hit"}, 1},
		{"ttlkit_cache_loads_total", []string{"cache", "sessions"}, 1},
		{"ttlkit_cache_sets_total", []string{"cache", "sessions"}, 1}, // the load's value
		{"ttlkit_cache_entries", []string{"cache", "sessions"}, 1},
		{"ttlkit_jobs_scheduled", []string{"scheduler", "main"}, 1},
		{"ttlkit_jobs_added_total", []string{"scheduler", "main"}, 1},
		{"ttlkit_wheel_pending_timers", []string{"wheel", "login_codes"}, 1},
		{"ttlkit_idle_accepted_total", []string{"listener", "http"}, 3}, // two logins and this scrape
	} {
		if got := value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, name := range []string{"ttlkit_wheel_lateness_seconds", "ttlkit_cache_load_seconds", "ttlkit_jobs_lateness_seconds", "ttlkit_jobs_run_seconds"} {
		if mf := mfs[name]; mf.GetType() != dto.MetricType_HISTOGRAM {
			t.Errorf("%s: type %v, want HISTOGRAM", name, mf.GetType())
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
