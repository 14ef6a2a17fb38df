// Package release_test runs Picchu's release engine end to end on a
// delivery API server and two target API servers: canaries, ramps,
// retirement, failure and rollback, garbage collection, and canaries judged
// by a real Prometheus evaluating the rules Picchu wrote. The operator runs
// in the test process and can be started again with other options; the
// targets' ReplicaSets are reported available as a ReplicaSet controller
// would. (An operator killed mid-ramp is test/e2e's: a real process, killed.)
package release_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/releasemanager"
	"github.com/medium/picchu/integrations/datadog"
	"github.com/medium/picchu/integrations/prometheus"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/releasemetrics"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/integration/inprocess"
	"github.com/medium/picchu/test/kit"
)

var (
	env *harness.Env
	// traffic plays the users and the mesh: it serves Istio's request
	// counters per build, at the rates and error ratios a test sets.
	traffic *kit.Traffic
	// prom is a real Prometheus scraping traffic and evaluating the rules
	// Picchu wrote on the first target; alerts is the operator's client.
	prom   *kit.Prometheus
	alerts *prometheus.Client
	// dd is a fake Datadog API (Datadog cannot run here) that checks every
	// request; monitors is the operator's client of it.
	dd       *fakeDatadog
	monitors *datadog.Client
)

// alertCheckInterval is how often the operator reads the alerts of builds
// being judged, and how long its client caches an answer.
const alertCheckInterval = 250 * time.Millisecond

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 2}, setup)
}

func setup(s *harness.Suite) error {
	ctx := s.Ctx
	env = s.Env
	s.ServeReplicaSets()
	var err error
	if traffic, err = kit.StartTraffic(); err != nil {
		return fmt.Errorf("serving traffic metrics: %w", err)
	}
	s.OnStop(func() error { traffic.Close(); return nil })
	prom, err = kit.StartPrometheus(ctx, kit.PrometheusConfig{
		ScrapeTargets: []string{traffic.Addr()}, ScrapeInterval: time.Second, EvalInterval: time.Second,
	})
	if err != nil {
		return fmt.Errorf("starting Prometheus: %w", err)
	}
	s.OnStop(prom.Close)
	first := env.Targets[0]
	rules := kit.RuleSync{
		Clusters: []kit.NamedClient{{Name: first.Name, Client: first.Client}},
		Loader:   prom, Interval: 200 * time.Millisecond,
		Logf: func(format string, args ...any) { ruleSyncLog.Store(fmt.Sprintf(format, args...)) },
	}
	go rules.Run(ctx)
	if alerts, err = prometheus.New(prometheus.Config{
		Address: prom.URL(), Timeout: 2 * time.Second, TTL: alertCheckInterval,
	}); err != nil {
		return fmt.Errorf("creating the alert client: %w", err)
	}
	dd = startFakeDatadog()
	s.OnStop(func() error { dd.Close(); return nil })
	if err := env.Delivery.Client.Create(ctx, datadogSecret()); err != nil {
		return fmt.Errorf("creating the Datadog Secret: %w", err)
	}
	if monitors, err = datadog.New(datadog.Config{
		Keys: datadog.SecretKeys(env.Delivery.Client, client.ObjectKeyFromObject(datadogSecret())),
		URL:  dd.URL, Timeout: 2 * time.Second, TTL: alertCheckInterval,
	}); err != nil {
		return fmt.Errorf("creating the Datadog client: %w", err)
	}
	if err := releasemetrics.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering release metrics: %w", err)
	}
	if err := registerTeamB(ctx); err != nil {
		return err
	}
	// Its safety resync is 10 minutes, so only events and its own
	// deadlines can move a release along. It serves teamB as well.
	if running, err = inprocess.Run(s, operator.Options{
		Namespaces: []string{teamB},
		SyncPeriod: 10 * time.Minute, ClusterTimeout: 5 * time.Second, ConcurrentReleaseManagers: 4,
		Prometheus: alerts, Datadog: monitors, PrometheusQueryTTL: alertCheckInterval,
		// A build's pods go in the run after its last route, unless its
		// Revision sets a scale-down delay: the tests watch pods go, and
		// TestRelease_ABuildKeepsItsPodsForItsScaleDownDelay the drain.
		ScaleDownDelay: releasemanager.NoScaleDownDelay,
	}); err != nil {
		return err
	}
	// Checked after the tests, before the fake stops.
	s.OnStop(func() error {
		if problems := dd.problems(); len(problems) > 0 {
			return fmt.Errorf("the fake Datadog received invalid requests: %v", problems)
		}
		return nil
	})
	return nil
}

// ruleSyncLog holds the last line the rule sync logged (a cluster that does
// not answer, a load that fails, the rules loaded); tests report it when an
// alert does not come.
var ruleSyncLog atomic.Value

// running is the operator; a test may restart it with other options.
var running *inprocess.Runner

// releaseManager reads the ReleaseManager of app.
func releaseManager(ctx context.Context, app string) (*picchuv1alpha1.ReleaseManager, error) {
	return env.Apps().ReleaseManager(ctx, app)
}
