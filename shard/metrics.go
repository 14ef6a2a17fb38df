package shard

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	heldGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "picchu_shard_held",
		Help: "1 for each shard this replica holds (--shards), 0 for one it held before.",
	}, []string{"shard"})
	transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "picchu_shard_transitions_total",
		Help: "Shards this replica acquired, released (given back to balance or on the way out) and lost (another replica took it after this one failed to renew).",
	}, []string{"shard", "change"})
)

// Register registers the shard metrics with reg; registering them again is
// not an error.
func Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{heldGauge, transitions} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}

// changed records that shard i was acquired, released or lost.
func changed(i int, change string, held bool) {
	shard := strconv.Itoa(i)
	transitions.WithLabelValues(shard, change).Inc()
	v := 0.0
	if held {
		v = 1
	}
	heldGauge.WithLabelValues(shard).Set(v)
}
