package kit

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
	[]string{"reporter", "destination_app", "destination_version", "destination_cluster", "response_code"},
	nil,
)

// Traffic plays users and the Istio mesh for Prometheus: for each cluster,
// app and tag it exports istio_requests_total as the destination's sidecar
// would, counting requests at the rate and error ratio last set. Counts are
// computed from the clock when collected, so they grow exactly as the rates
// say and never decrease. It is a prometheus.Collector (the mesh registers
// it with its own metrics); StartTraffic also serves it. Its methods are
// safe for concurrent use.
type Traffic struct {
	server *httptest.Server // nil unless started with StartTraffic
	now    func() time.Time

	mu    sync.Mutex
	flows map[flowKey]*flow
}

type flowKey struct{ cluster, app, tag string }

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

// NewTraffic returns a Traffic that counts nothing until Set is called.
func NewTraffic() *Traffic {
	return &Traffic{now: time.Now, flows: map[flowKey]*flow{}}
}

// StartTraffic returns a new Traffic serving /metrics, in Prometheus' text
// format, on a free port of 127.0.0.1.
func StartTraffic() (*Traffic, error) {
	t := NewTraffic()
	registry := prometheus.NewRegistry()
	if err := registry.Register(t); err != nil {
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
// succeed with 200, in no cluster in particular (destination_cluster "").
// The requests counted so far stay. A negative or NaN rate counts as 0, and
// an error ratio outside [0, 1] as the nearest bound.
func (t *Traffic) Set(app, tag string, requestsPerSecond, errorRatio float64) {
	t.SetIn("", app, tag, requestsPerSecond, errorRatio)
}

// SetIn is Set for app's tag in cluster.
func (t *Traffic) SetIn(cluster, app, tag string, requestsPerSecond, errorRatio float64) {
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
	key := flowKey{cluster, app, tag}
	f, ok := t.flows[key]
	if !ok {
		f = &flow{since: now}
		t.flows[key] = f
	}
	f.ok, f.failed = f.at(now)
	f.since = now
	f.okRate = requestsPerSecond * (1 - errorRatio)
	f.errorRate = requestsPerSecond * errorRatio
}

// Close stops serving, when started with StartTraffic.
func (t *Traffic) Close() {
	if t.server != nil {
		t.server.Close()
	}
}

// Describe sends the one metric a Traffic exports.
func (t *Traffic) Describe(ch chan<- *prometheus.Desc) {
	ch <- istioRequests
}

// Collect sends the counts of every cluster, app and tag as they are now.
func (t *Traffic) Collect(ch chan<- prometheus.Metric) {
	type sample struct {
		key        flowKey
		ok, failed float64
	}
	t.mu.Lock()
	now := t.now()
	samples := make([]sample, 0, len(t.flows))
	for key, f := range t.flows {
		ok, failed := f.at(now)
		samples = append(samples, sample{key, ok, failed})
	}
	t.mu.Unlock()
	sort.Slice(samples, func(i, j int) bool {
		a, b := samples[i].key, samples[j].key
		if a.cluster != b.cluster {
			return a.cluster < b.cluster
		}
		if a.app != b.app {
			return a.app < b.app
		}
		return a.tag < b.tag
	})
	for _, s := range samples {
		for _, code := range []struct {
			status string
			count  float64
		}{{"200", s.ok}, {"500", s.failed}} {
			m, err := prometheus.NewConstMetric(istioRequests, prometheus.CounterValue, code.count,
				"destination", s.key.app, s.key.tag, s.key.cluster, code.status)
			if err != nil {
				m = prometheus.NewInvalidMetric(istioRequests,
					fmt.Errorf("exporting requests of cluster %q app %q tag %q: %w", s.key.cluster, s.key.app, s.key.tag, err))
			}
			ch <- m
		}
	}
}
