package mirror

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// failures is picchu_mirror_failure_counter, the original's name and labels:
// "mirror" is the mirror Cluster's name.
var failures = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "picchu_mirror_failure_counter",
	Help: "Times a build could not be copied to a mirror cluster (counted once per attempt), by app and mirror cluster.",
}, []string{"app", "mirror"})

// Register registers the mirror metrics with reg, the registry the
// operator serves (controller-runtime's): the original registered them
// only with Prometheus' default registry, which nothing served. Registering
// them again is not an error.
func Register(reg prometheus.Registerer) error {
	if reg == nil {
		return errors.New("mirror metrics: nil registerer")
	}
	if err := reg.Register(failures); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
	}
	return nil
}

// countFailures adds one to the counter for each build of apps that one
// run could not copy to cluster (a whole mirror's failure counts once for
// each build it kept from being copied).
func countFailures(cluster string, apps []string) {
	for _, app := range apps {
		failures.WithLabelValues(app, cluster).Inc()
	}
}
