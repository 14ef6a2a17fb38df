package harness

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// istioRequests is the counter the Istio sidecars of a destination export.
var istioRequests = prometheus.NewDesc(
	"istio_requests_total",
	"Requests received, as reported by the destination's Istio sidecar (simulated).",
	[]string{"reporter", "destination_app", "destination_version", "response_code"},
	nil,
)

// Traffic is a Prometheus scrape target playing users and the Istio mesh: for
// each app and tag it serves istio_requests_total as the destination's
// sidecar would, counting requests at the rate and error ratio last set.
// Counts are computed from the clock when scraped, so they grow exactly as
// the rates say and never decrease. Its methods are safe for concurrent use.
type Traffic struct {
	server *httptest.Server
	now    func() time.Time

	mu    sync.Mutex
	flows map[flowKey]*flow
}

type flowKey struct{ app, tag string }

// flow is the traffic of one app and tag: the requests counted up to since,
// and the rates at which they grow after it.
type flow struct {
	since     time.Time
	ok        float64 // 200 responses up to since
	failed    float64 // 500 responses up to since
	okRate    float64 // 200 responses per second after since
	errorRate float64 // 500 responses per second after since
}

// at returns the responses counted up to now.
func (f *flow) at(now time.Time) (ok, failed float64) {
	elapsed := max(now.Sub(f.since).Seconds(), 0)
	return f.ok + f.okRate*elapsed, f.failed + f.errorRate*elapsed
}

// StartTraffic starts serving /metrics, in Prometheus' text format, on a
// free port of 127.0.0.1. It serves no traffic until Set is called.
func StartTraffic() (*Traffic, error) {
	t := &Traffic{now: time.Now, flows: map[flowKey]*flow{}}
	registry := prometheus.NewRegistry()
	if err := registry.Register(trafficCollector{t}); err != nil {
		return nil, fmt.Errorf("starting traffic: registering its collector: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	t.server = httptest.NewServer(mux)
	return t, nil
}

// Addr returns the host:port Traffic serves /metrics on.
func (t *Traffic) Addr() string {
	return t.server.Listener.Addr().String()
}

// Set makes app's tag receive requestsPerSecond requests from now on, of
// which errorRatio (between 0 and 1) fail with status 500 and the others
// succeed with 200. The requests counted so far stay. A negative or NaN rate
// counts as 0, and an error ratio outside [0, 1] as the nearest bound.
func (t *Traffic) Set(app, tag string, requestsPerSecond, errorRatio float64) {
	if math.IsNaN(requestsPerSecond) || requestsPerSecond < 0 {
		requestsPerSecond = 0
	}
	if math.IsNaN(errorRatio) || errorRatio < 0 {
		errorRatio = 0
	}
	errorRatio = min(errorRatio, 1)

	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	f, ok := t.flows[flowKey{app, tag}]
	if !ok {
		f = &flow{since: now}
		t.flows[flowKey{app, tag}] = f
	}
	f.ok, f.failed = f.at(now)
	f.since = now
	f.okRate = requestsPerSecond * (1 - errorRatio)
	f.errorRate = requestsPerSecond * errorRatio
}

// Close stops serving.
func (t *Traffic) Close() {
	t.server.Close()
}

// trafficCollector exports a Traffic's counts when scraped.
type trafficCollector struct{ t *Traffic }

// Describe sends the one metric a Traffic exports.
func (c trafficCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- istioRequests
}

// Collect sends the counts of every app and tag as they are now.
func (c trafficCollector) Collect(ch chan<- prometheus.Metric) {
	type sample struct {
		key        flowKey
		ok, failed float64
	}
	c.t.mu.Lock()
	now := c.t.now()
	samples := make([]sample, 0, len(c.t.flows))
	for key, f := range c.t.flows {
		ok, failed := f.at(now)
		samples = append(samples, sample{key, ok, failed})
	}
	c.t.mu.Unlock()
	sort.Slice(samples, func(i, j int) bool {
		if samples[i].key.app != samples[j].key.app {
			return samples[i].key.app < samples[j].key.app
		}
		return samples[i].key.tag < samples[j].key.tag
	})
	for _, s := range samples {
		for _, code := range []struct {
			status string
			count  float64
		}{{"200", s.ok}, {"500", s.failed}} {
			m, err := prometheus.NewConstMetric(istioRequests, prometheus.CounterValue, code.count,
				"destination", s.key.app, s.key.tag, code.status)
			if err != nil {
				m = prometheus.NewInvalidMetric(istioRequests,
					fmt.Errorf("exporting requests of app %q tag %q: %w", s.key.app, s.key.tag, err))
			}
			ch <- m
		}
	}
}
