package silencer

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// The outcomes counted by picchu_alert_silences_total.
const (
	outcomeCreated  = "created"
	outcomeExtended = "extended"
	outcomeExpired  = "expired"
	outcomeFailed   = "failed"
)

// silences is picchu_alert_silences_total: what was done with release
// silences in Alertmanager, one per silence created, extended or expired,
// and one per run that failed (the release went on without it).
var silences = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "picchu_alert_silences_total",
	Help: "Release silences created, extended and expired in Alertmanager, and runs that failed to (the release goes on), by outcome.",
}, []string{"outcome"})

func init() {
	for _, o := range []string{outcomeCreated, outcomeExtended, outcomeExpired, outcomeFailed} {
		silences.WithLabelValues(o)
	}
}

func count(outcome string) { silences.WithLabelValues(outcome).Inc() }

// Register registers the silence metrics with reg, the registry the
// operator serves. Registering them again is not an error.
func Register(reg prometheus.Registerer) error {
	if reg == nil {
		return errors.New("silence metrics: nil registerer")
	}
	if err := reg.Register(silences); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
	}
	return nil
}
