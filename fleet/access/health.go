package access

import (
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/medium/picchu/fleet/breaker"
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
	recoveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "picchu_cluster_recoveries_total",
		Help: "Closings of a target cluster's circuit breaker after it was open, by what followed: rebuilt (its client and caches were built again) or backoff (a rebuild came too soon after the last: its informers retry by themselves).",
	}, []string{"cluster", "outcome"})
)

// The backoff between two rebuilds of a cluster's client and caches for
// its breaker closing (see rebuildDue).
const (
	// RebuildMinBackoff is the wait after the first rebuild.
	RebuildMinBackoff = 10 * time.Second
	// RebuildMaxBackoff caps the wait, which doubles with each rebuild.
	RebuildMaxBackoff = 5 * time.Minute
	// RebuildResetAfter is how long a cluster stays healthy (its breaker
	// closed) before the wait is back to RebuildMinBackoff.
	RebuildResetAfter = 10 * time.Minute
)

// rebuilds is when the cluster's client may be rebuilt again.
type rebuilds struct {
	// next is the first time a closing breaker rebuilds it again; delay is
	// the wait after that rebuild.
	next  time.Time
	delay time.Duration
	// closed is when the breaker last closed, or the cluster was
	// registered.
	closed time.Time
}

// RegisterMetrics registers the clusters' health metrics with reg;
// registering them again is not an error.
func RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{breakerState, breakerTransitions, healthChecks, recoveries} {
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
	r.rebuildMu.Lock()
	r.rebuilds[key] = &rebuilds{delay: RebuildMinBackoff, closed: r.now()}
	r.rebuildMu.Unlock()
	b := breaker.New(r.Breaker, breaker.WithClock(r.now), breaker.WithOnChange(func(from, to breaker.State, s breaker.Snapshot) {
		breakerState.WithLabelValues(name).Set(float64(stateValue(to)))
		breakerTransitions.WithLabelValues(name, to.String()).Inc()
		log.Info("circuit breaker "+to.String(), "from", from.String(), "lastError", s.LastError, "retryAt", s.RetryAt)
		rebuild, next := r.rebuildDue(key, to, s.Since)
		switch {
		case rebuild:
			// Back: its caches list it again now.
			recoveries.WithLabelValues(name, "rebuilt").Inc()
			go r.restart(key)
		case to == breaker.Closed:
			recoveries.WithLabelValues(name, "backoff").Inc()
			log.Info("cluster back within the backoff of its rebuilds: its informers retry by themselves", "nextRebuild", next)
		}
	}))
	breakerState.WithLabelValues(name).Set(float64(stateValue(breaker.Closed)))
	r.breakers[key] = b
	return b
}

// rebuildDue records that the breaker of the cluster key entered state to
// at the time at, and says whether its client and caches are to be built
// again now: when it closed, unless it last was less than the backoff ago,
// or the first time. Each rebuild doubles the backoff, from
// RebuildMinBackoff up to RebuildMaxBackoff; a breaker that opens after
// staying closed for RebuildResetAfter starts again from the minimum. So a
// flapping cluster is not relisted in full each time it comes back; a
// recovery within the backoff leaves its informers to their own retries.
// next is the first time a closing rebuilds it.
func (r *Registry) rebuildDue(key types.NamespacedName, to breaker.State, at time.Time) (rebuild bool, next time.Time) {
	r.rebuildMu.Lock()
	defer r.rebuildMu.Unlock()
	st, ok := r.rebuilds[key]
	if !ok {
		return false, time.Time{} // removed
	}
	switch to {
	case breaker.Open:
		if at.Sub(st.closed) >= RebuildResetAfter {
			st.next, st.delay = time.Time{}, RebuildMinBackoff
		}
	case breaker.Closed:
		st.closed = at
		if at.Before(st.next) {
			return false, st.next
		}
		st.next = at.Add(st.delay)
		st.delay = min(2*st.delay, RebuildMaxBackoff)
		return true, st.next
	}
	return false, st.next
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
	r.rebuildMu.Lock()
	delete(r.rebuilds, key)
	r.rebuildMu.Unlock()
	name := key.String()
	breakerState.DeleteLabelValues(name)
	breakerTransitions.DeletePartialMatch(prometheus.Labels{"cluster": name})
	healthChecks.DeletePartialMatch(prometheus.Labels{"cluster": name})
	recoveries.DeletePartialMatch(prometheus.Labels{"cluster": name})
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
