package remote

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/medium/picchu/breaker"
)

// The health metrics of the target clusters, by Cluster ("<namespace>/<name>").
var (
	breakerState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "picchu_cluster_breaker_state",
		Help: "State of a target cluster's circuit breaker: 0 closed (the API server answers), 1 half-open (a probe is under way), 2 open (requests fail at once).",
	}, []string{"cluster"})
	breakerTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "picchu_cluster_breaker_transitions_total",
		Help: "Transitions of a target cluster's circuit breaker, by the state entered.",
	}, []string{"cluster", "state"})
	healthChecks = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "picchu_cluster_health_check_seconds",
		Help:    "Seconds a target cluster's API server took to answer a health check (its version), by outcome.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"cluster", "outcome"})
)

// RegisterMetrics registers the clusters' health metrics with reg;
// registering them again is not an error.
func RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{breakerState, breakerTransitions, healthChecks} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}

// breakerFor returns the breaker of the cluster key, made on first use. It
// outlives the cluster's clients (a new Secret does not make a failing API
// server healthy) and goes with Remove. Called with r.mu held.
func (r *Registry) breakerFor(key types.NamespacedName) *breaker.Breaker {
	if b, ok := r.breakers[key]; ok {
		return b
	}
	name := key.String()
	log := r.log.WithValues("cluster", name)
	b := breaker.New(r.Breaker, breaker.WithOnChange(func(from, to breaker.State, s breaker.Snapshot) {
		breakerState.WithLabelValues(name).Set(float64(stateValue(to)))
		breakerTransitions.WithLabelValues(name, to.String()).Inc()
		log.Info("circuit breaker "+to.String(), "from", from.String(), "lastError", s.LastError, "retryAt", s.RetryAt)
		if to == breaker.Closed {
			// Back: its caches list it again now.
			go r.restart(key)
		}
	}))
	breakerState.WithLabelValues(name).Set(float64(stateValue(breaker.Closed)))
	r.breakers[key] = b
	return b
}

// stateValue is a breaker state as picchu_cluster_breaker_state says it.
func stateValue(s breaker.State) int {
	switch s {
	case breaker.HalfOpen:
		return 1
	case breaker.Open:
		return 2
	}
	return 0
}

// forgetHealth drops the breaker and metrics of the cluster key. Called
// with r.mu held.
func (r *Registry) forgetHealth(key types.NamespacedName) {
	delete(r.breakers, key)
	name := key.String()
	breakerState.DeleteLabelValues(name)
	breakerTransitions.DeletePartialMatch(prometheus.Labels{"cluster": name})
	healthChecks.DeletePartialMatch(prometheus.Labels{"cluster": name})
}

// Health returns the state of the cluster key's circuit breaker, and
// whether the registry has one.
func (r *Registry) Health(key types.NamespacedName) (breaker.Snapshot, bool) {
	r.mu.Lock()
	b, ok := r.breakers[key]
	r.mu.Unlock()
	if !ok {
		return breaker.Snapshot{}, false
	}
	return b.Snapshot(), true
}

// guard wraps a cluster client's transport with the cluster's breaker.
func guard(b *breaker.Breaker) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper { return breaker.Transport(rt, b) }
}
