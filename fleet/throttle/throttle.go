// Package throttle sizes the client-side rate limits of Picchu's Kubernetes
// clients (the delivery cluster's, and one per target cluster) and measures
// how long requests wait on them: picchu_client_throttle_wait_seconds, by
// cluster. A fleet moving many apps at once is paid for in these waits, so
// they are worth watching when steps run late.
package throttle

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

const (
	// DefaultQPS and DefaultBurst are the rate limits of every client unless
	// set. At Flux's 50 and 300, which Picchu had before, a hundred apps
	// released together waited on the delivery client's own limiter: 0.8 s
	// per request on average, the releases paced at 50 writes a second while
	// the API servers took 1300 (docs/benchmarks.md). The API servers'
	// priority and fairness (APF, on since Kubernetes 1.20) is what protects
	// them from a busy client; the client-side limit only stops a runaway.
	// Flagger ships 100 and 250, Argo Rollouts 40 and 80, client-go 5 and 10.
	DefaultQPS   = 200
	DefaultBurst = 400

	// Delivery is the cluster label of the delivery cluster's client.
	Delivery = "delivery"
)

// waits are the waits of requests on their client's rate limiter.
var waits = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "picchu_client_throttle_wait_seconds",
	Help:    "Seconds a request to a cluster waited on the client-side rate limit (--kube-api-qps, --cluster-api-qps) before it was sent.",
	Buckets: []float64{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
}, []string{"cluster"})

// Register registers the metric with reg; registering it again is not an
// error.
func Register(reg prometheus.Registerer) error {
	if err := reg.Register(waits); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
	}
	return nil
}

// Limit gives cfg a rate limit of qps requests per second with bursts of
// burst (DefaultQPS and DefaultBurst when 0), whose waits are observed as
// cluster's.
func Limit(cfg *rest.Config, cluster string, qps float32, burst int) {
	if qps <= 0 {
		qps = DefaultQPS
	}
	if burst <= 0 {
		burst = DefaultBurst
	}
	cfg.QPS, cfg.Burst = qps, burst
	cfg.RateLimiter = limiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(qps, burst), cluster: cluster}
}

// Forget deletes the waits observed as cluster's: its client is gone.
func Forget(cluster string) {
	waits.DeleteLabelValues(cluster)
}

// limiter is a token bucket that observes how long each request waits.
type limiter struct {
	flowcontrol.RateLimiter
	cluster string
}

// Wait waits for a token, as client-go's requests do, and observes how long.
func (l limiter) Wait(ctx context.Context) error {
	start := time.Now()
	err := l.RateLimiter.Wait(ctx)
	waits.WithLabelValues(l.cluster).Observe(time.Since(start).Seconds())
	return err
}

// Accept waits for a token and observes how long.
func (l limiter) Accept() {
	start := time.Now()
	l.RateLimiter.Accept()
	waits.WithLabelValues(l.cluster).Observe(time.Since(start).Seconds())
}
