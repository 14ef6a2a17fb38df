package throttle_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/medium/picchu/fleet/throttle"
)

// observed returns the count and sum of the waits observed as cluster's.
func observed(t *testing.T, cluster string) (uint64, float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := throttle.Register(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "picchu_client_throttle_wait_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" && l.GetValue() == cluster {
					return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return 0, 0
}

func TestLimit_Defaults(t *testing.T) {
	cfg := &rest.Config{}
	throttle.Limit(cfg, "defaults", 0, 0)
	if cfg.QPS != throttle.DefaultQPS || cfg.Burst != throttle.DefaultBurst || cfg.RateLimiter == nil {
		t.Errorf("QPS %v, burst %d, limiter %v; want %d, %d and a limiter", cfg.QPS, cfg.Burst, cfg.RateLimiter, throttle.DefaultQPS, throttle.DefaultBurst)
	}
	if got := cfg.RateLimiter.QPS(); got != throttle.DefaultQPS {
		t.Errorf("the limiter allows %v requests per second, want %d", got, throttle.DefaultQPS)
	}
}

// TestLimit_RequestsWaitAndTheWaitsAreObserved sends two requests through
// a REST client at 1 request per second with bursts of 1: the second waits
// about a second for a token (less the first request's few milliseconds),
// and the metric counts both waits, at least half a second in all.
func TestLimit_RequestsWaitAndTheWaitsAreObserved(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{
		GroupVersion: &schema.GroupVersion{Version: "v1"}, NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
	}}
	const cluster = "picchu/requests"
	throttle.Limit(cfg, cluster, 1, 1)
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := rc.Get().AbsPath("/anything").Do(context.Background()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	count, sum := observed(t, cluster)
	if count != 2 || sum < 0.5 {
		t.Errorf("observed %d waits of %.3fs in all, want 2 of at least 0.5s", count, sum)
	}

	throttle.Forget(cluster)
	if count, _ := observed(t, cluster); count != 0 {
		t.Errorf("after Forget, %d waits are still exported", count)
	}
}
