package operator

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"

	"github.com/medium/picchu/controllers"
	"github.com/medium/picchu/controllers/cluster"
	"github.com/medium/picchu/controllers/releasemanager"
	"github.com/medium/picchu/controllers/revision"
	"github.com/medium/picchu/decide/schedule"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/integrations/images"
	"github.com/medium/picchu/plan/applier"
)

// defaultClusterHealthTimeout bounds each health check of a target cluster.
const defaultClusterHealthTimeout = 5 * time.Second

// DefaultClusterHealthPeriod is how often each target cluster's health is
// checked: one request per cluster, whatever the number of apps.
const DefaultClusterHealthPeriod = 15 * time.Second

// DefaultSyncPeriod is the safety resync of every object: Argo Rollouts'
// (15 minutes). Runs come from events and due times; this only catches what
// both missed.
const DefaultSyncPeriod = releasemanager.DefaultSyncPeriod

// Setup adds Picchu's controllers to mgr, a manager whose client uses
// NewScheme and whose cache is DeliveryCache(o.Namespaces): the Cluster
// controller and the registry of target clusters it fills, the Revision
// controller and the ReleaseManager controller with its alert sources. It
// returns the registry.
func Setup(mgr ctrl.Manager, o Options) (*access.Registry, error) {
	if err := resolveInstanceID(mgr, &o); err != nil {
		return nil, err
	}
	deps, err := newReleaseManagerDeps(mgr, o)
	if err != nil {
		return nil, err
	}
	registry := newRegistry(mgr, deps.remoteEvents, o)
	if err := setupClusters(mgr, registry, o); err != nil {
		return nil, err
	}
	if err := setupRevisions(mgr, o); err != nil {
		return nil, err
	}
	if err := setupReleaseManagers(mgr, registry, deps, o); err != nil {
		return nil, err
	}
	if err := setupClusterSecrets(mgr, registry, o); err != nil {
		return nil, err
	}
	if err := setupMirrors(mgr, registry, deps.externalSecrets, o); err != nil {
		return nil, err
	}
	if err := setupSilences(mgr, o); err != nil {
		return nil, err
	}
	if o.Shards != nil {
		if err := mgr.Add(o.Shards); err != nil {
			return nil, fmt.Errorf("adding the shard coordinator: %w", err)
		}
	}
	return registry, nil
}

// resolveInstanceID fills o.InstanceID, when unset, with DefaultInstanceID.
func resolveInstanceID(mgr ctrl.Manager, o *Options) error {
	if o.InstanceID != "" {
		return nil
	}
	id, err := DefaultInstanceID(mgr.GetAPIReader())
	if err != nil {
		return err
	}
	o.InstanceID = id
	return nil
}

// releaseManagerDeps is what the ReleaseManager controller needs built
// before it is set up; the Mirror controller and the registry share some.
type releaseManagerDeps struct {
	calendar        *schedule.Calendar
	notices         releasemanager.Notifier
	prom, dd        releasemanager.AlertSource
	externalSecrets cache.Cache
	remoteEvents    *releasemanager.RemoteEvents
}

// newReleaseManagerDeps builds, in this order, the release calendar, the
// notifier, the alert sources and the cache of ExternalSecrets.
func newReleaseManagerDeps(mgr ctrl.Manager, o Options) (releaseManagerDeps, error) {
	calendar, err := schedule.New(!o.HumaneReleasesDisabled)
	if err != nil {
		return releaseManagerDeps{}, err
	}
	notices, err := notifier(mgr, o)
	if err != nil {
		return releaseManagerDeps{}, err
	}
	prom, dd, err := alertSources(mgr.GetClient(), o)
	if err != nil {
		return releaseManagerDeps{}, err
	}
	externalSecrets, err := controllers.ExternalSecretsCache(mgr, o.Namespaces)
	if err != nil {
		return releaseManagerDeps{}, err
	}
	return releaseManagerDeps{
		calendar:        calendar,
		notices:         notices,
		prom:            prom,
		dd:              dd,
		externalSecrets: externalSecrets,
		remoteEvents:    releasemanager.NewRemoteEvents(),
	}, nil
}

// newRegistry is the registry of target clusters: a change to a
// ReplicaSet on one wakes its ReleaseManager through remoteEvents, and
// o.OnReplicaSet when set.
func newRegistry(mgr ctrl.Manager, remoteEvents *releasemanager.RemoteEvents, o Options) *access.Registry {
	registry := access.NewRegistry(mgr.GetScheme(), ctrl.Log.WithName("remote"), func(rm types.NamespacedName) {
		remoteEvents.Notify(rm)
		if o.OnReplicaSet != nil {
			o.OnReplicaSet(rm)
		}
	})
	registry.Policy = access.Policy{AllowExec: o.AllowExecCredentials}
	registry.WrapTransport = o.WrapTransport
	registry.QPS, registry.Burst = o.ClusterQPS, o.ClusterBurst
	// Managed fields are most of what the caches would hold: only whether
	// the main manager applied replicas is read back.
	registry.Transform = applier.KeepReplicasOwner
	return registry
}

// setupClusters adds the Cluster controller, which fills registry and
// checks each cluster's health every o.ClusterHealthPeriod, to mgr.
func setupClusters(mgr ctrl.Manager, registry *access.Registry, o Options) error {
	healthPeriod, healthTimeout := o.ClusterHealthPeriod, o.ClusterHealthTimeout
	if healthPeriod <= 0 {
		healthPeriod = DefaultClusterHealthPeriod
	}
	if healthTimeout <= 0 {
		healthTimeout = defaultClusterHealthTimeout
	}
	if err := (&cluster.Reconciler{
		Client:        mgr.GetClient(),
		Registry:      registry,
		HealthPeriod:  healthPeriod,
		HealthTimeout: healthTimeout,
		Shards:        o.Shards,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the cluster controller: %w", err)
	}
	return nil
}

// setupRevisions adds the Revision controller to mgr, unless
// o.WithoutRevisionController.
func setupRevisions(mgr ctrl.Manager, o Options) error {
	if o.WithoutRevisionController {
		return nil
	}
	if err := (&revision.Reconciler{
		Client:                  mgr.GetClient(),
		Recorder:                mgr.GetEventRecorder("picchu"),
		ProvenPercent:           int32(o.ProvenPercent),
		MaxConcurrentReconciles: o.ConcurrentRevisions,
		Shards:                  o.Shards,
		ProtectedNamespaces:     appProtected(o),
		AppNamespacePolicy:      o.AppNamespacePolicy,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the revision controller: %w", err)
	}
	return nil
}

// setupReleaseManagers adds the ReleaseManager controller to mgr.
func setupReleaseManagers(mgr ctrl.Manager, registry *access.Registry, deps releaseManagerDeps, o Options) error {
	if err := (&releasemanager.Reconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Registry:                registry,
		RemoteEvents:            deps.remoteEvents,
		Recorder:                mgr.GetEventRecorder("picchu"),
		Notifier:                deps.notices,
		StuckAfter:              o.SlackStuckAfter,
		SyncPeriod:              o.SyncPeriod,
		ClusterTimeout:          o.ClusterTimeout,
		MaxConcurrentReconciles: o.ConcurrentReleaseManagers,
		Timeouts:                o.Timeouts,
		Calendar:                deps.calendar,
		ServiceLevelsNamespace:  o.ServiceLevelsNamespace,
		ExternalSecrets:         deps.externalSecrets,
		Services: releasemanager.Services{
			DevRoutesHost: o.DevRoutesServiceHost, DevRoutesPort: o.DevRoutesServicePort,
			ClusterPrometheus: o.ClusterPrometheusAddress,
			ClusterLabel:      clusterLabel(o),
		},
		Prometheus:          deps.prom,
		Datadog:             deps.dd,
		ProvenPercent:       int32(o.ProvenPercent),
		ScaleDownDelay:      o.ScaleDownDelay,
		AlertCheckInterval:  o.PrometheusQueryTTL,
		RemovalGrace:        o.RemovalGrace,
		KeepDone:            o.KeepDone,
		Shards:              o.Shards,
		Images:              imageInspector(o),
		PreflightCapacity:   o.PreflightCapacity,
		ClusterAlerts:       clusterAlerts(deps.prom),
		InstanceID:          o.InstanceID,
		ProtectedNamespaces: appProtected(o),
		AppNamespacePolicy:  o.AppNamespacePolicy,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the release manager controller: %w", err)
	}
	return nil
}

// DefaultInstanceID is the UID of the delivery cluster's kube-system
// namespace, read from its API server: the same for every replica and
// across restarts, and different for every delivery cluster.
func DefaultInstanceID(reader client.Reader) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf("reading the UID of the delivery cluster's kube-system namespace, the default --instance-id: %w", err)
	}
	return string(ns.UID), nil
}

// imageInspector is the inspector of builds' images, or nil when
// o.InspectImagePlatforms is off.
func imageInspector(o Options) releasemanager.ImageInspector {
	if !o.InspectImagePlatforms {
		return nil
	}
	return images.New(images.Options{AllowedHosts: o.ImageRegistryAllowedHosts, Transport: o.ImageTransport})
}

// clusterAlerts is what answers Clusters' preflight queries: the
// Prometheus alert source, when it can answer any query.
func clusterAlerts(prom releasemanager.AlertSource) releasemanager.SeriesSource {
	if q, ok := prom.(releasemanager.SeriesSource); ok {
		return q
	}
	return nil
}

// appProtected are the namespaces no app is deployed in: the defaults, the
// add-ons' (less those --protected-namespaces removes), what it adds, and
// the delivery namespaces the operator reads (--namespaces).
func appProtected(o Options) []string {
	return picchuv1alpha1.AppProtectedNamespaces(o.ProtectedNamespaces, append([]string{o.OwnNamespace}, o.Namespaces...))
}
