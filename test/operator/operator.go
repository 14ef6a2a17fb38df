// Package operator runs Picchu's controllers in a test process, wired as
// main wires them, against the delivery cluster of a harness environment.
// It can be stopped and started again, as an operator restart.
package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/medium/picchu/controllers"
	"github.com/medium/picchu/controllers/remote"
	"github.com/medium/picchu/test/harness"
)

// Options are the settings a test gives the operator; zero values take the
// controllers' defaults unless said otherwise.
type Options struct {
	// HealthPeriod is the Cluster controller's health check period (10 s when 0).
	HealthPeriod time.Duration
	// OnReplicaSet, when set, also hears every remote ReplicaSet event.
	OnReplicaSet func(releaseManager types.NamespacedName)
	// WrapTransport, when set, wraps the clients of the target clusters.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// The ReleaseManager controller's settings (see ReleaseManagerReconciler).
	SyncPeriod              time.Duration
	ClusterTimeout          time.Duration
	MaxConcurrentReconciles int
	ServiceLevelsNamespace  string
	Prometheus, Datadog     controllers.AlertSource
	AlertCheckInterval      time.Duration
	RemovalGrace            time.Duration
	KeepDone                int
	// WithoutRevisionController holds the Revision controller back: no
	// Revision is labelled, mirrored, failed or given a ReleaseManager.
	WithoutRevisionController bool
}

// Operator is a running manager with Picchu's controllers.
type Operator struct {
	// Registry holds the operator's clients of the target clusters.
	Registry *remote.Registry
	env      *harness.Env
	cancel   context.CancelFunc
	done     chan error
}

// Start starts the Cluster, Revision and ReleaseManager controllers against
// env's delivery cluster.
func Start(env *harness.Env, opts Options) (*Operator, error) {
	mgr, err := ctrl.NewManager(env.Delivery.Config, ctrl.Options{
		Scheme:  env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// As main with --namespaces: Secrets and ConfigMaps of the
		// harness's namespace only.
		Cache: controllers.DeliveryCache([]string{env.Namespace}),
		// A restarted operator registers its controllers again in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	remoteEvents := controllers.NewRemoteEvents()
	registry := remote.NewRegistry(env.Scheme, ctrl.Log.WithName("remote"), func(rm types.NamespacedName) {
		remoteEvents.Notify(rm)
		if opts.OnReplicaSet != nil {
			opts.OnReplicaSet(rm)
		}
	})
	registry.WrapTransport = opts.WrapTransport
	if opts.HealthPeriod == 0 {
		opts.HealthPeriod = 10 * time.Second
	}
	if err := (&controllers.ClusterReconciler{
		Client: mgr.GetClient(), Registry: registry, HealthPeriod: opts.HealthPeriod, HealthTimeout: 2 * time.Second,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the cluster controller: %w", err)
	}
	if !opts.WithoutRevisionController {
		if err := (&controllers.RevisionReconciler{
			Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("picchu"),
		}).SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the revision controller: %w", err)
		}
	}
	if err := (&controllers.ReleaseManagerReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Registry: registry, RemoteEvents: remoteEvents,
		Recorder: mgr.GetEventRecorder("picchu"), SyncPeriod: opts.SyncPeriod, ClusterTimeout: opts.ClusterTimeout,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles, ServiceLevelsNamespace: opts.ServiceLevelsNamespace,
		Prometheus: opts.Prometheus, Datadog: opts.Datadog, AlertCheckInterval: opts.AlertCheckInterval,
		RemovalGrace: opts.RemovalGrace, KeepDone: opts.KeepDone,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the release manager controller: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Operator{Registry: registry, env: env, cancel: cancel, done: make(chan error, 1)}
	go func() { o.done <- mgr.Start(ctx) }()
	return o, nil
}

// Stop stops the operator, waits until it has, and drops its clients of the
// target clusters.
func (o *Operator) Stop() error {
	o.cancel()
	err := <-o.done
	for _, target := range o.env.Targets {
		o.Registry.Remove(types.NamespacedName{Namespace: o.env.Namespace, Name: target.Name})
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
