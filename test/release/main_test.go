// Package release_test runs Picchu's release engine end to end on a
// delivery API server and two target API servers: canaries, ramps,
// retirement, failure and rollback, garbage collection, an operator
// restarted mid-release, and canaries judged by a real Prometheus evaluating
// the rules Picchu wrote. The operator runs in the test process and can be
// stopped and started again; the targets' ReplicaSets are reported
// available as a ReplicaSet controller would.
package release_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/releasemetrics"
	"github.com/medium/picchu/datadog"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/prometheus"
	"github.com/medium/picchu/test/harness"
	"github.com/medium/picchu/test/inprocess"
)

var (
	env *harness.Env
	// traffic plays the users and the mesh: it serves Istio's request
	// counters per build, at the rates and error ratios a test sets.
	traffic *harness.Traffic
	// prom is a real Prometheus scraping traffic and evaluating the rules
	// Picchu wrote on the first target; alerts is the operator's client.
	prom   *harness.Prometheus
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
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	env, err = harness.Start(ctx, harness.Options{Targets: 2})
	defer func() {
		cancel()
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping clusters:", err)
		}
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting clusters:", err)
		return 1
	}
	for _, target := range env.Targets {
		go func() {
			if err := target.ServeReplicaSets(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "%s: serving ReplicaSets: %v\n", target.Name, err)
			}
		}()
	}
	if traffic, err = harness.StartTraffic(); err != nil {
		fmt.Fprintln(os.Stderr, "serving traffic metrics:", err)
		return 1
	}
	defer traffic.Close()
	prom, err = harness.StartPrometheus(ctx, harness.PrometheusConfig{
		ScrapeTargets: []string{traffic.Addr()}, ScrapeInterval: time.Second, EvalInterval: time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting Prometheus:", err)
		return 1
	}
	defer func() {
		if err := prom.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping Prometheus:", err)
		}
	}()
	go harness.SyncRules(ctx, env.Targets[0].Client, prom, 200*time.Millisecond, func(err error) {
		ruleErrors.Store(err.Error())
	})
	if alerts, err = prometheus.New(prometheus.Config{
		Address: prom.URL(), Timeout: 2 * time.Second, TTL: alertCheckInterval,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "creating the alert client:", err)
		return 1
	}
	dd = startFakeDatadog()
	defer dd.Close()
	if err := env.Delivery.Client.Create(ctx, datadogSecret()); err != nil {
		fmt.Fprintln(os.Stderr, "creating the Datadog Secret:", err)
		return 1
	}
	if monitors, err = datadog.New(datadog.Config{
		Keys: datadog.SecretKeys(env.Delivery.Client, client.ObjectKeyFromObject(datadogSecret())),
		URL:  dd.URL, Timeout: 2 * time.Second, TTL: alertCheckInterval,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "creating the Datadog client:", err)
		return 1
	}
	if err := releasemetrics.Register(ctrlmetrics.Registry); err != nil {
		fmt.Fprintln(os.Stderr, "registering release metrics:", err)
		return 1
	}
	op, err := startOperator()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the operator:", err)
		return 1
	}
	current = op
	code := m.Run()
	if problems := dd.problems(); len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "the fake Datadog received invalid requests:", problems)
		code = 1
	}
	if err := current.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the operator:", err)
	}
	return code
}

// ruleErrors holds the last error loading rules into Prometheus; tests
// report it when an alert does not come.
var ruleErrors atomic.Value

// current is the running operator.
var current *inprocess.Operator

// startOperator starts the operator against the delivery cluster. Its
// safety resync is 10 minutes, so only events and its own deadlines can
// move a release along.
func startOperator(change ...func(*operator.Options)) (*inprocess.Operator, error) {
	opts := operator.Options{
		SyncPeriod: 10 * time.Minute, ClusterTimeout: 5 * time.Second, ConcurrentReleaseManagers: 4,
		Prometheus: alerts, Datadog: monitors, PrometheusQueryTTL: alertCheckInterval,
	}
	for _, c := range change {
		c(&opts)
	}
	return inprocess.Start(env, opts)
}

// restart stops the running operator and starts a new one, with the
// options changed by change.
func restart(t testing.TB, change ...func(*operator.Options)) {
	t.Helper()
	if err := current.Stop(); err != nil {
		t.Fatalf("stopping the operator: %v", err)
	}
	op, err := startOperator(change...)
	if err != nil {
		t.Fatalf("starting the operator again: %v", err)
	}
	current = op
}

// releaseManager reads the ReleaseManager of app.
func releaseManager(ctx context.Context, app string) (*picchuv1alpha1.ReleaseManager, error) {
	rm := &picchuv1alpha1.ReleaseManager{}
	err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: app + "-production"}, rm)
	return rm, err
}
