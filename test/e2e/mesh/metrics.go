package mesh

import (
	"fmt"
	"sync"

	"github.com/medium/picchu/test/kit"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are what a Mesh exports, in a registry of its own.
type metrics struct {
	registry *prometheus.Registry
	// weights are the weights last read.
	weights *prometheus.GaugeVec
	// unrouted counts the requests that found no route.
	unrouted *prometheus.CounterVec

	mu     sync.Mutex            // serializes setWeights
	series map[weightSeries]bool // series of weights set
}

// weightSeries are the labels of a series of weights.
type weightSeries struct{ cluster, app, tag string }

// newMetrics returns the mesh's metrics: the weights, the requests
// traffic counts, as the destinations' Istio sidecars report them, and
// those unready counts.
func newMetrics(traffic *kit.Traffic, unready *unreadyCounter) (*metrics, error) {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		weights: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mesh_route_weight",
			Help: "Weight in percent of the release route to each tag of each app in effect: as read from the cluster's VirtualService or HTTPRoute at least the mesh's lag before.",
		}, []string{"destination_cluster", "destination_app", "destination_version"}),
		unrouted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mesh_unrouted_requests_total",
			Help: "Requests sent to an app on a cluster that had a route for it and has none (neither a VirtualService nor an HTTPRoute with weights).",
		}, []string{"destination_cluster", "destination_app"}),
		series: map[weightSeries]bool{},
	}
	for _, c := range []prometheus.Collector{traffic, m.weights, m.unrouted, unready} {
		if err := m.registry.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	return m, nil
}

// setWeights exports weights, by cluster, app and tag, and deletes the
// series of those no longer there.
func (m *metrics) setWeights(weights map[string]appWeights) {
	m.mu.Lock()
	defer m.mu.Unlock()
	current := map[weightSeries]bool{}
	for cluster, apps := range weights {
		for app, tags := range apps {
			for tag, w := range tags {
				current[weightSeries{cluster, app, tag}] = true
				m.weights.WithLabelValues(cluster, app, tag).Set(float64(w))
			}
		}
	}
	for s := range m.series {
		if !current[s] {
			m.weights.DeleteLabelValues(s.cluster, s.app, s.tag)
		}
	}
	m.series = current
}
